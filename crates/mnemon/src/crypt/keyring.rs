//! The keyring: every data key of a store, each wrapped by the KEK, in the
//! file `DATA/KEYRING` (see `docs/FORMAT.md`, *Encryption at rest*).
//!
//! A data key belongs to one namespace and one generation: the first write
//! to a namespace makes generation 1, a shred (`forget --all`) destroys the
//! live generation, and the next write makes the one above. A destroyed
//! key stays listed as shredded, so the store can tell a shredded record
//! from a damaged one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::crypt::key::{Kek, KEY_LEN};
use crate::error::{Error, Result};

/// The keyring file's name under the data directory.
pub const KEYRING_FILE: &str = "KEYRING";

/// The first bytes of a keyring file: magic and version.
const MAGIC: &[u8; 17] = b"mnemon keyring 1\n";

/// XChaCha20-Poly1305 nonce length (192 bits: random nonces never repeat
/// in practice, draft-irtf-cfrg-xchacha §3.1).
pub(crate) const NONCE_LEN: usize = 24;

/// What the KEK seals to prove it is the right one.
const CHECK_TEXT: &[u8] = b"mnemon keyring check";

/// One namespace's data key of one generation.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct DataKey([u8; KEY_LEN]);

impl DataKey {
    pub(crate) fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(self.0.as_slice().into())
    }
}

/// The state of a (namespace, generation) key.
pub(crate) enum KeyState<'a> {
    /// The key, able to decrypt.
    Live(&'a DataKey),
    /// Destroyed by a shred.
    Shredded,
    /// Not in the keyring (a keyring of another store, or damage).
    Unknown,
}

enum Slot {
    Live(DataKey),
    Shredded,
}

/// The keyring in memory: its id, the KEK, and every data key unwrapped.
pub(crate) struct Keyring {
    id: [u8; 16],
    kek: Kek,
    slots: BTreeMap<(String, u32), Slot>,
}

#[derive(Serialize, Deserialize)]
struct KeyringFile {
    id: [u8; 16],
    check_nonce: [u8; NONCE_LEN],
    check: Vec<u8>,
    keys: Vec<KeyEntry>,
}

#[derive(Serialize, Deserialize)]
struct KeyEntry {
    ns: String,
    generation: u32,
    /// `None`: shredded.
    wrapped: Option<([u8; NONCE_LEN], Vec<u8>)>,
}

/// A fresh random nonce.
pub(crate) fn nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut n);
    n
}

fn kek_cipher(kek: &Kek) -> XChaCha20Poly1305 {
    XChaCha20Poly1305::new(kek.bytes().as_slice().into())
}

fn wrap_aad(id: &[u8; 16], ns: &str, generation: u32) -> Vec<u8> {
    let mut aad = b"mnemon data key 1".to_vec();
    aad.extend_from_slice(id);
    aad.extend_from_slice(&generation.to_le_bytes());
    aad.extend_from_slice(ns.as_bytes());
    aad
}

impl Keyring {
    /// A new keyring with a random id and no keys.
    pub(crate) fn new(kek: Kek) -> Keyring {
        let mut id = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut id);
        Keyring { id, kek, slots: BTreeMap::new() }
    }

    /// A new keyring with id `id` (a key directory's) and no keys.
    pub(crate) fn with_id(kek: Kek, id: [u8; 16]) -> Keyring {
        Keyring { id, kek, slots: BTreeMap::new() }
    }

    /// Every key, live ones wrapped afresh by the KEK, as a key directory
    /// holds them.
    ///
    /// # Errors
    /// [`Error::Storage`] when wrapping fails.
    pub(crate) fn export(&self) -> Result<Vec<crate::crypt::SharedKey>> {
        let cipher = kek_cipher(&self.kek);
        let mut out = Vec::with_capacity(self.slots.len());
        for ((ns, generation), slot) in &self.slots {
            let wrapped = match slot {
                Slot::Shredded => None,
                Slot::Live(k) => {
                    let n = nonce();
                    let aad = wrap_aad(&self.id, ns, *generation);
                    let ct = cipher
                        .encrypt(XNonce::from_slice(&n), Payload { msg: &k.0, aad: &aad })
                        .map_err(|_| Error::Storage("sealing a data key failed".into()))?;
                    let mut w = n.to_vec();
                    w.extend_from_slice(&ct);
                    Some(w)
                }
            };
            out.push(crate::crypt::SharedKey { namespace: ns.clone(), generation: *generation, wrapped });
        }
        Ok(out)
    }

    /// Takes the keys of a key directory: a live key this keyring lacks is
    /// unwrapped and added, a shredded one destroys the key here. Returns
    /// whether anything changed (the caller saves).
    ///
    /// # Errors
    /// [`Error::WrongKey`] when a key does not unwrap with this keyring's
    /// KEK and id (the directory is another store's, or its KEK another).
    pub(crate) fn import(&mut self, keys: &[crate::crypt::SharedKey]) -> Result<bool> {
        let cipher = kek_cipher(&self.kek);
        let mut changed = false;
        for k in keys {
            let at = (k.namespace.clone(), k.generation);
            match (&k.wrapped, self.slots.get(&at)) {
                (None, Some(Slot::Shredded)) | (Some(_), Some(_)) => {}
                (None, _) => {
                    self.slots.insert(at, Slot::Shredded);
                    changed = true;
                }
                (Some(w), None) => {
                    let bad = || {
                        Error::WrongKey(format!(
                            "the shared data key of namespace {} (generation {}) does not open with this key",
                            k.namespace, k.generation
                        ))
                    };
                    if w.len() <= NONCE_LEN {
                        return Err(bad());
                    }
                    let aad = wrap_aad(&self.id, &k.namespace, k.generation);
                    let mut plain = cipher
                        .decrypt(XNonce::from_slice(&w[..NONCE_LEN]), Payload { msg: &w[NONCE_LEN..], aad: &aad })
                        .map_err(|_| bad())?;
                    if plain.len() != KEY_LEN {
                        plain.zeroize();
                        return Err(bad());
                    }
                    let mut key = [0u8; KEY_LEN];
                    key.copy_from_slice(&plain);
                    plain.zeroize();
                    self.slots.insert(at, Slot::Live(DataKey(key)));
                    changed = true;
                }
            }
        }
        Ok(changed)
    }

    /// The keyring's id (also in the store's `meta` as `crypt.keyring`).
    pub(crate) fn id(&self) -> [u8; 16] {
        self.id
    }

    /// Reads and unwraps the keyring at `path`.
    ///
    /// # Errors
    /// [`Error::WrongKey`] when the KEK does not open it; [`Error::Storage`]
    /// for a damaged file; [`Error::Io`].
    pub(crate) fn load(path: &Path, kek: Kek) -> Result<Keyring> {
        let damaged = |why: &str| Error::Storage(format!("the keyring {} is damaged: {why}", path.display()).into());
        let file = read_file(path)?;
        let cipher = kek_cipher(&kek);
        let check = cipher.decrypt(XNonce::from_slice(&file.check_nonce), Payload { msg: &file.check, aad: &file.id });
        if check.as_deref() != Ok(CHECK_TEXT) {
            return Err(Error::WrongKey(format!("the key does not open the keyring {}", path.display())));
        }
        let mut slots = BTreeMap::new();
        for e in file.keys {
            let slot = match e.wrapped {
                None => Slot::Shredded,
                Some((n, ct)) => {
                    let aad = wrap_aad(&file.id, &e.ns, e.generation);
                    let mut plain = cipher
                        .decrypt(XNonce::from_slice(&n), Payload { msg: &ct, aad: &aad })
                        .map_err(|_| damaged("a data key does not unwrap"))?;
                    if plain.len() != KEY_LEN {
                        plain.zeroize();
                        return Err(damaged("a data key has the wrong length"));
                    }
                    let mut k = [0u8; KEY_LEN];
                    k.copy_from_slice(&plain);
                    plain.zeroize();
                    Slot::Live(DataKey(k))
                }
            };
            slots.insert((e.ns, e.generation), slot);
        }
        Ok(Keyring { id: file.id, kek, slots })
    }

    /// Writes the keyring to `path` atomically: `path.tmp`, fsync, rename,
    /// fsync the directory. Every live key is wrapped afresh. `step` names
    /// the change for the crash hook (`MNEMON_CRASH_AT=keyring.STEP.written`
    /// aborts once the temporary file is durable, `keyring.STEP.renamed`
    /// once it is renamed, before the directory is synced); `STEP` is
    /// `new`, `copy`, `key`, `shred`, `rotate` or `reseal`. With the
    /// `failpoints` feature, failpoint `keyring::rename::STEP` fails it
    /// before the rename.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub(crate) fn save(&self, path: &Path, step: &str) -> Result<()> {
        let cipher = kek_cipher(&self.kek);
        let seal = |msg: &[u8], aad: &[u8]| -> Result<([u8; NONCE_LEN], Vec<u8>)> {
            let n = nonce();
            let ct = cipher
                .encrypt(XNonce::from_slice(&n), Payload { msg, aad })
                .map_err(|_| Error::Storage("sealing a data key failed".into()))?;
            Ok((n, ct))
        };
        let (check_nonce, check) = seal(CHECK_TEXT, &self.id)?;
        let mut keys = Vec::with_capacity(self.slots.len());
        for ((ns, generation), slot) in &self.slots {
            let wrapped = match slot {
                Slot::Shredded => None,
                Slot::Live(k) => Some(seal(&k.0, &wrap_aad(&self.id, ns, *generation))?),
            };
            keys.push(KeyEntry { ns: ns.clone(), generation: *generation, wrapped });
        }
        write_file(path, &KeyringFile { id: self.id, check_nonce, check, keys }, step)
    }

    /// The key-encryption key that wraps this keyring.
    pub(crate) fn kek(&self) -> &Kek {
        &self.kek
    }

    /// Replaces the KEK that wraps the data keys (in memory; the caller
    /// saves) and returns the one it replaces.
    pub(crate) fn replace_kek(&mut self, kek: Kek) -> Kek {
        std::mem::replace(&mut self.kek, kek)
    }

    /// Whether `kek` is the KEK this keyring is wrapped by.
    pub(crate) fn wrapped_by(&self, kek: &Kek) -> bool {
        self.kek.bytes() == kek.bytes()
    }

    /// The live key of `ns` with the highest generation, if any.
    pub(crate) fn current(&self, ns: &str) -> Option<(u32, &DataKey)> {
        let (&(_, generation), slot) =
            self.slots.range((ns.to_string(), 0)..=(ns.to_string(), u32::MAX)).next_back()?;
        match slot {
            Slot::Live(k) => Some((generation, k)),
            Slot::Shredded => None,
        }
    }

    /// Makes a new key for `ns`, one generation above any it had.
    pub(crate) fn create(&mut self, ns: &str) -> u32 {
        let generation = self
            .slots
            .range((ns.to_string(), 0)..=(ns.to_string(), u32::MAX))
            .next_back()
            .map_or(1, |((_, g), _)| g + 1);
        let mut k = [0u8; KEY_LEN];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut k);
        self.slots.insert((ns.to_string(), generation), Slot::Live(DataKey(k)));
        generation
    }

    /// Makes a fresh key for every namespace that holds a live key, one
    /// generation above any it had (the caller saves): the keys a
    /// compaction re-seals the live generation under. Returns how many.
    pub(crate) fn renew_all(&mut self) -> usize {
        let live: std::collections::BTreeSet<String> =
            self.slots.iter().filter(|(_, s)| matches!(s, Slot::Live(_))).map(|((ns, _), _)| ns.clone()).collect();
        for ns in &live {
            self.create(ns);
        }
        live.len()
    }

    /// The key of `(ns, generation)`.
    pub(crate) fn get(&self, ns: &str, generation: u32) -> KeyState<'_> {
        match self.slots.get(&(ns.to_string(), generation)) {
            Some(Slot::Live(k)) => KeyState::Live(k),
            Some(Slot::Shredded) => KeyState::Shredded,
            None => KeyState::Unknown,
        }
    }

    /// Destroys the key of `(ns, generation)` and every older live key of
    /// `ns` (kept after compactions re-sealed the namespace under a newer
    /// one) in memory; the caller saves. Returns whether a live key was
    /// destroyed.
    pub(crate) fn shred(&mut self, ns: &str, generation: u32) -> bool {
        let mut was_live = false;
        for (_, slot) in self.slots.range_mut((ns.to_string(), 0)..=(ns.to_string(), generation)) {
            was_live |= matches!(slot, Slot::Live(_));
            *slot = Slot::Shredded;
        }
        self.slots.entry((ns.to_string(), generation)).or_insert(Slot::Shredded);
        was_live
    }

    /// `(namespace, generation)` of every shredded key, in that order.
    pub(crate) fn shredded(&self) -> Vec<(String, u32)> {
        self.slots.iter().filter(|(_, s)| matches!(s, Slot::Shredded)).map(|((ns, g), _)| (ns.clone(), *g)).collect()
    }
}

/// Writes `file` to `path` atomically (see [`Keyring::save`]).
fn write_file(path: &Path, file: &KeyringFile, step: &str) -> Result<()> {
    let body =
        postcard::to_allocvec(file).map_err(|e| Error::Storage(format!("cannot encode the keyring: {e}").into()))?;
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    let tmp = tmp_path(path);
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io_at(&tmp, e))?;
        f.write_all(&out).and_then(|()| f.sync_all()).map_err(|e| Error::io_at(&tmp, e))?;
    }
    crate::crash::crash_point(&format!("keyring.{step}.written"));
    #[cfg(feature = "failpoints")]
    fail::fail_point!(&format!("keyring::rename::{step}"), |_| Err(Error::Io(std::io::Error::other(format!(
        "injected failure at keyring::rename::{step}"
    )))));
    std::fs::rename(&tmp, path).map_err(|e| Error::io_at(path, e))?;
    crate::crash::crash_point(&format!("keyring.{step}.renamed"));
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io_at(dir, e))?;
    }
    Ok(())
}

/// Reads the keyring file at `path` without unwrapping anything.
fn read_file(path: &Path) -> Result<KeyringFile> {
    let bytes = std::fs::read(path).map_err(|e| Error::io_at(path, e))?;
    let damaged = |why: &str| Error::Storage(format!("the keyring {} is damaged: {why}", path.display()).into());
    if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(damaged("it does not begin with the keyring magic"));
    }
    let mut crc = [0u8; 4];
    crc.copy_from_slice(&bytes[MAGIC.len()..MAGIC.len() + 4]);
    let body = &bytes[MAGIC.len() + 4..];
    if u32::from_le_bytes(crc) != crc32fast::hash(body) {
        return Err(damaged("checksum mismatch"));
    }
    postcard::from_bytes(body).map_err(|_| damaged("it does not decode"))
}

/// Destroys, in the keyring file at `path` (a store that is not open),
/// the data keys of `shredded` (`(namespace, generation)`) that it holds
/// live: their wrapped bytes are dropped and the file is replaced
/// atomically, as a shred in the store itself would leave it. Needs no
/// key, so a process that holds a copy of a store without serving it (a
/// cluster daemon's idle copy of a namespace another daemon shredded)
/// can apply a shred it learns of. Returns whether the file changed; a
/// missing file changes nothing.
///
/// # Errors
/// [`Error::Storage`] for a damaged keyring; [`Error::Io`].
pub fn shred_in_keyring(path: &Path, shredded: &[(String, u32)]) -> Result<bool> {
    if !path.exists() {
        return Ok(false);
    }
    let mut file = read_file(path)?;
    let mut changed = false;
    for e in &mut file.keys {
        if e.wrapped.is_some() && shredded.iter().any(|(ns, g)| *ns == e.ns && *g == e.generation) {
            e.wrapped = None;
            changed = true;
        }
    }
    if changed {
        write_file(path, &file, "shred")?;
    }
    Ok(changed)
}

/// Deletes the `KEYRING.tmp` beside the keyring at `path`, which only a
/// crash between writing a keyring and renaming it over `KEYRING` leaves:
/// the change it held (a rotation, a shred, a new keyring) was never
/// acknowledged, and its wrapped data keys must not outlive a later shred
/// in a file no save replaces.
///
/// # Errors
/// [`Error::Io`] when the file is there and cannot be deleted.
pub(crate) fn remove_stale_tmp(path: &Path) -> Result<()> {
    let tmp = tmp_path(path);
    match std::fs::remove_file(&tmp) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io_at(&tmp, e)),
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".tmp");
    PathBuf::from(p)
}
