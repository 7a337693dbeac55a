//! Encryption at rest, opt-in per store, and crypto-shredding.
//!
//! An encrypted store seals the bodies of `Observed`, `Extracted`,
//! `Accessed` and `Forgotten` records and every cached vector with
//! XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`) under a data key
//! of the record's namespace; the data keys live in `DATA/KEYRING`, each
//! wrapped by a key-encryption key ([`Kek`]) that mnemon never writes to
//! disk: it comes from a [`KeyProvider`] ([`KeyFile`], [`KeyEnv`],
//! [`StaticKey`], or the caller's own). Forgetting a whole namespace
//! destroys its data key once the forget is durable (a *shred*), which
//! makes every copy of its records unreadable at once — the live store,
//! backups and exports — without rewriting any of them.
//!
//! The KEK can be rotated (`Engine::rotate_key`): the keyring is re-wrapped
//! and replaced in one rename, the log untouched. Each compaction gives
//! every namespace with a live key a fresh data key and re-seals the new
//! generation under it; older keys stay for the copies taken before, and a
//! shred destroys them all.
//!
//! Copies of a store that live in several places (a cluster's daemons)
//! share their data keys through a [`KeyDirectory`]: the writer seals a
//! group before it leaves for the replicated log, every copy holds the
//! same sealed bytes, and a shred stored in the directory reaches every
//! copy that takes it ([`shred_in_keyring`] for one that is not open).
//!
//! What stays plain: `Seq`s, times, namespace names, event kinds, record
//! and vector sizes, the ids a `Forgotten` event erased, and the bodies of
//! `Superseded`, `Archived` and `Tombstone` records (ids only). See
//! `docs/FORMAT.md`, *Encryption at rest*.
//!
//! Not covered: the KEK itself (keep the key file outside the data
//! directory, or in a key service), copies of `KEYRING` taken before a
//! shred (they can still open that namespace's records), and memory of the
//! running process.

mod directory;
mod key;
mod keyring;
mod record;
mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

pub use directory::{merge_keys, KeyDirectory, SharedKey};
pub use key::{write_new_key_file, Kek, KeyEnv, KeyFile, KeyProvider, StaticKey, KEY_LEN};
pub(crate) use keyring::{remove_stale_tmp, KeyState, Keyring};
pub use keyring::{shred_in_keyring, KEYRING_FILE};
pub use record::{
    head as sealed_head, shredded_record, SealedHead, SEALED_VECTOR_TAG, SEALED_VERSION, SHREDDED_REASON,
};
pub(crate) use record::{
    is_sealed_kind, open_record, open_vector, seal_record, seal_vector, split_plain, vector_generation,
};
pub(crate) use verify::{check_records, opened_by, shredded_keys};
pub use verify::{ShredCheck, ShredReport};

use crate::error::{Error, Result};

/// `meta` key naming the keyring (its 16-byte id) an encrypted store's
/// records are sealed under; copies carry it, so a backup or a restored
/// store knows it is encrypted even without `KEYRING`.
pub const META_KEYRING: &str = "crypt.keyring";

/// The keyring of an open encrypted store, shared by every store the
/// engine writes (the live generation, compaction, backup, restore).
pub struct Keys {
    pub(crate) ring: Mutex<Keyring>,
    /// Where the keyring is saved: `DATA/KEYRING`.
    pub(crate) path: PathBuf,
    /// The key directory the keys are shared through, if any.
    pub(crate) directory: Option<Arc<dyn KeyDirectory>>,
}

impl Keys {
    /// Saves `ring` (this store's keyring, locked by the caller) to
    /// `DATA/KEYRING` ([`Keyring::save`]; `step` names the change), then
    /// hands every key to the key directory, if there is one: a new key
    /// is shared before any record sealed with it is, and a shred reaches
    /// the directory.
    ///
    /// # Errors
    /// [`Error::Io`]; what the directory returns.
    pub(crate) fn save(&self, ring: &Keyring, step: &str) -> Result<()> {
        ring.save(&self.path, step)?;
        match &self.directory {
            Some(d) => d.store(&ring.export()?),
            None => Ok(()),
        }
    }

    /// Whether the keys are shared through a key directory.
    pub(crate) fn shared(&self) -> bool {
        self.directory.is_some()
    }

    /// The namespaces with at least one data key destroyed by a shred.
    pub(crate) fn shredded_namespaces(&self) -> usize {
        let mut names: Vec<String> = self.ring.lock().shredded().into_iter().map(|(ns, _)| ns).collect();
        names.dedup();
        names.len()
    }
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").field("path", &self.path).finish_non_exhaustive()
    }
}

/// How an engine is to open an encrypted store: where the KEK comes from
/// and, for a copy that carries no keyring (a backup, a restore), the
/// keyring to read its data keys from.
#[derive(Clone, Debug, Default)]
pub struct KeySettings {
    /// Where the key-encryption key comes from; `None`: no key.
    pub provider: Option<Arc<dyn KeyProvider>>,
    /// The keyring of the store a copy was made from, for a data directory
    /// without `KEYRING` of its own (copied in at its first open).
    pub keyring: Option<PathBuf>,
    /// Where the data keys are shared with the other copies of the store
    /// (a cluster's daemons); `None`: the keyring is the store's alone.
    pub directory: Option<Arc<dyn KeyDirectory>>,
}

/// Refuses, before anything is opened or written, a data directory with
/// a keyring when no key is given, or with a key that does not open it.
///
/// # Errors
/// [`Error::KeyRequired`], [`Error::WrongKey`].
pub(crate) fn precheck(root: &Path, keys: &KeySettings) -> Result<()> {
    let ring = root.join(KEYRING_FILE);
    if !ring.exists() {
        // A copy opened with the keyring of its store: that file is
        // checked before anything of the copy is opened.
        if let (Some(p), Some(from)) = (&keys.provider, &keys.keyring) {
            load_named_keyring(from, p.kek()?)?;
        }
        return Ok(());
    }
    match &keys.provider {
        None => Err(Error::KeyRequired(format!(
            "the store at {} is encrypted: open it with its key (a key file, or MNEMON_KEY)",
            root.display()
        ))),
        Some(p) => Keyring::load(&ring, p.kek()?).map(|_| ()),
    }
}

/// Loads the keyring file a caller named ([`KeySettings::keyring`]): one
/// that is not there, is a directory or is not a keyring is a wrong
/// argument (field `keyring`), not a damaged store.
///
/// # Errors
/// [`Error::InvalidInput`] (field `keyring`) as above; [`Error::WrongKey`]
/// when the key does not open it; [`Error::Io`] for other read failures.
pub(crate) fn load_named_keyring(from: &Path, kek: Kek) -> Result<Keyring> {
    Keyring::load(from, kek).map_err(|e| match e {
        Error::Storage(why) => Error::invalid(
            "keyring",
            format!(
                "{} is not a readable keyring ({why}); give DATA/KEYRING of the store the copy was made from",
                from.display()
            ),
        ),
        Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound || from.is_dir() => {
            Error::invalid("keyring", format!("{io}: give the file DATA/KEYRING of the store the copy was made from"))
        }
        e => e,
    })
}

/// Whether `keys` open the store at `root` (a data directory): the check
/// an open makes of the key, made without opening anything. A process
/// whose calls are passed to another one holding the store (the CLI beside
/// `mnemon serve`) makes it first, so that such a call needs the key as
/// its own open would.
///
/// # Errors
/// [`Error::KeyRequired`] when `root` holds a keyring and `keys` give no
/// key; [`Error::WrongKey`] when the key does not open it; what the key
/// provider returns.
pub fn check_key(root: &Path, keys: &KeySettings) -> Result<()> {
    precheck(root, keys)
}

/// The event kind of a sealed record (after checking its envelope,
/// checksum and position), `None` for a plain record.
///
/// # Errors
/// [`Error::Corrupted`] for a damaged sealed record.
pub(crate) fn sealed_kind(seq: crate::types::Seq, bytes: &[u8]) -> Result<Option<u32>> {
    if bytes.first() == Some(&SEALED_VERSION) {
        Ok(Some(record::head(seq, bytes)?.kind))
    } else {
        Ok(None)
    }
}
