//! Key-encryption keys and where they come from: a key file the operator
//! names, an environment variable, or any [`KeyProvider`].

use std::path::{Path, PathBuf};

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{Error, Result};

/// Length of every key mnemon uses, in bytes (256-bit keys for
/// XChaCha20-Poly1305, RFC 8439 and draft-irtf-cfrg-xchacha).
pub const KEY_LEN: usize = 32;

/// A key-encryption key (KEK): 32 bytes that wrap the store's data keys.
/// Never written to disk by mnemon; cleared from memory when dropped.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Kek([u8; KEY_LEN]);

impl Kek {
    /// A KEK from its 32 bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Kek {
        Kek(bytes)
    }

    /// A KEK from 64 hexadecimal digits (surrounding whitespace ignored),
    /// as a key file or `MNEMON_KEY` holds it.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `key`) for anything else; the message
    /// never repeats the text.
    pub fn from_hex(text: &str) -> Result<Kek> {
        let mut digits = text.trim().as_bytes().to_vec();
        let mut out = [0u8; KEY_LEN];
        let res = hex::decode_to_slice(&digits, &mut out);
        digits.zeroize();
        match res {
            Ok(()) => Ok(Kek(out)),
            Err(_) => {
                out.zeroize();
                Err(Error::invalid("key", "a key is 64 hexadecimal digits (32 bytes)"))
            }
        }
    }

    /// A fresh random KEK (the operating system's generator), for
    /// `mnemon key new` and tests.
    pub fn generate() -> Kek {
        let mut k = [0u8; KEY_LEN];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut k);
        Kek(k)
    }

    /// The key as 64 lower-case hexadecimal digits (to write a key file).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl std::fmt::Debug for Kek {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kek(…)")
    }
}

/// Where an encrypted store's key-encryption key comes from. Implement it
/// for a key service or a hardware module; [`KeyFile`], [`KeyEnv`] and
/// [`StaticKey`] are built in.
pub trait KeyProvider: Send + Sync + std::fmt::Debug {
    /// The KEK. Called once per open, backup, restore or export.
    ///
    /// # Errors
    /// [`Error::KeyRequired`] when the key is not there (file or variable
    /// missing); [`Error::InvalidInput`] when it is malformed.
    fn kek(&self) -> Result<Kek>;

    /// Where the key comes from, in words (never the key): shown in errors.
    fn describe(&self) -> String;
}

/// A key file the operator names: 64 hexadecimal digits (a trailing
/// newline is fine). Keep it outside the data directory, readable only by
/// the store's user.
#[derive(Clone, Debug)]
pub struct KeyFile(pub PathBuf);

impl KeyProvider for KeyFile {
    fn kek(&self) -> Result<Kek> {
        let mut text = match std::fs::read_to_string(&self.0) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::KeyRequired(format!("the key file {} does not exist", self.0.display())))
            }
            Err(e) => return Err(Error::io_at(&self.0, e)),
        };
        let k = Kek::from_hex(&text).map_err(|e| named(e, &self.describe()));
        text.zeroize();
        k
    }

    fn describe(&self) -> String {
        format!("key file {}", self.0.display())
    }
}

/// `e` with `source` (a provider's [`KeyProvider::describe`]) before its
/// reason, so that a malformed key names where it was read.
fn named(e: Error, source: &str) -> Error {
    match e {
        Error::InvalidInput { field, reason } => {
            Error::InvalidInput { field, reason: format!("the {source}: {reason}") }
        }
        other => other,
    }
}

/// An environment variable holding the key as 64 hexadecimal digits
/// (conventionally `MNEMON_KEY`).
#[derive(Clone, Debug)]
pub struct KeyEnv(pub String);

impl KeyProvider for KeyEnv {
    fn kek(&self) -> Result<Kek> {
        match std::env::var(&self.0) {
            Ok(mut v) => {
                let k = Kek::from_hex(&v).map_err(|e| named(e, &self.describe()));
                v.zeroize();
                k
            }
            Err(_) => Err(Error::KeyRequired(format!("the environment variable {} is not set", self.0))),
        }
    }

    fn describe(&self) -> String {
        format!("environment variable {}", self.0)
    }
}

/// A KEK held by the caller (tests, programs that fetch it themselves).
#[derive(Clone, Debug)]
pub struct StaticKey(pub Kek);

impl KeyProvider for StaticKey {
    fn kek(&self) -> Result<Kek> {
        Ok(self.0.clone())
    }

    fn describe(&self) -> String {
        "a key given by the program".into()
    }
}

/// Writes a fresh key file at `path` (mode 0600 on Unix), refusing to
/// replace an existing one. Missing parent directories are made (mode
/// 0700 on Unix), as for `~/.config/mnemon/store.key` on a new machine.
///
/// # Errors
/// [`Error::InvalidInput`] when `path` exists; [`Error::Io`] otherwise.
pub fn write_new_key_file(path: &Path) -> Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        let mut dirs = std::fs::DirBuilder::new();
        dirs.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            dirs.mode(0o700);
        }
        dirs.create(parent).map_err(|e| Error::io_at(parent, e))?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::invalid("key_file", format!("{} exists; a key file is never replaced", path.display())))
        }
        Err(e) => return Err(Error::io_at(path, e)),
    };
    let mut text = Kek::generate().to_hex();
    text.push('\n');
    let res = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
    text.zeroize();
    res.map_err(|e| Error::io_at(path, e))
}
