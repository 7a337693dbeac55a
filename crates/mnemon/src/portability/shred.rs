//! Proof of a shred across the store, its backups and its exports, and
//! key rotation ([`crate::crypt`]).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::crypt::{check_records, opened_by, shredded_keys, Keyring, Keys, ShredReport, KEYRING_FILE, META_KEYRING};
use crate::error::{Error, Result};
use crate::log::{LogStore, SledStore};
use crate::types::Seq;

/// Verifies the shred of `ns`: the records of `store` (the open store,
/// reported as `store`), of every backup data directory in `backups` and
/// of every store export in `exports`.
///
/// # Errors
/// [`Error::NotFound`] when nothing was ever written to `ns`;
/// [`Error::InvalidInput`] (field `namespace`) when the keyring never
/// shredded a key of `ns`, (field `backups`) for a path that is not a
/// data directory, is the store's own, or is a copy of another store
/// (another keyring), (field `exports`) for a path that is not a store
/// export or is one of another store; [`Error::Locked`] for a backup in use;
/// [`Error::Io`] / [`Error::Storage`] / [`Error::Corrupted`] reading them.
pub fn verify_shred(
    keys: &Keys,
    ns: &str,
    store: Option<&dyn LogStore>,
    backups: &[PathBuf],
    exports: &[PathBuf],
) -> Result<ShredReport> {
    let shredded_keys = shredded_keys(keys, ns);
    if shredded_keys.is_empty() {
        if matches!(keys.ring.lock().get(ns, 1), crate::crypt::KeyState::Unknown) {
            return Err(Error::not_found(format!("namespace {ns} (nothing was ever written to it)")));
        }
        return Err(Error::invalid(
            "namespace",
            format!(
                "no data key of namespace {ns} was shredded (forget it whole first: forget with all, or forget_user)"
            ),
        ));
    }
    let ring_id = keys.ring.lock().id();
    let own_dir = keys.path.parent().and_then(|d| d.canonicalize().ok());
    let mut checks = Vec::new();
    if let Some(s) = store {
        checks.push(check_records(keys, ns, PathBuf::from("store"), s.scan_raw(1, u64::MAX))?);
    }
    for b in backups {
        let field = "backups";
        if !b.join("CURRENT").exists() {
            let why = if b.is_file() {
                format!("{} is a file, not a data directory (an export goes in exports)", b.display())
            } else {
                format!("{} is not a data directory (no CURRENT file in it)", b.display())
            };
            return Err(Error::invalid(field, why));
        }
        if own_dir.is_some() && b.canonicalize().ok() == own_dir {
            return Err(Error::invalid(
                field,
                format!("{} is this store's own data directory: it is checked as `store`", b.display()),
            ));
        }
        // Opening a sled database writes to it: the copy is opened in a
        // scratch directory, and the backup is left as it was.
        let (_scratch, sled) = open_backup_copy(b)?;
        match sled.meta_get(META_KEYRING)? {
            Some(id) if id.as_slice() == ring_id.as_slice() => {}
            Some(id) => {
                return Err(Error::invalid(
                    field,
                    format!(
                        "{} is a copy of another store (sealed under keyring {}, this store's is {}): it proves \
                         nothing of this one",
                        b.display(),
                        hex::encode(&id),
                        hex::encode(ring_id)
                    ),
                ))
            }
            None => {
                return Err(Error::invalid(
                    field,
                    format!(
                        "{} is a copy of a store without encryption: this store is encrypted since its creation, so \
                         it is not a copy of this one",
                        b.display()
                    ),
                ))
            }
        }
        let mut check = check_records(keys, ns, b.clone(), sled.scan(1, u64::MAX))?;
        // The first open of a copy keeps a keyring of its own, which the
        // shred did not reach: its keys are tried as well.
        let own = b.join(KEYRING_FILE);
        if own.exists() {
            check.own_keyring = true;
            let kek = keys.ring.lock().kek().clone();
            match Keyring::load(&own, kek) {
                Ok(ring) => check.opened += opened_by(&ring, ns, sled.scan(1, u64::MAX))?,
                Err(_) => check.own_keyring_unread = true,
            }
        }
        checks.push(check);
    }
    for e in exports {
        let records = export_records(e, "exports", &ring_id)?;
        checks.push(check_records(keys, ns, e.clone(), records.into_iter().map(Ok))?);
    }
    let verified = checks.iter().all(|c| c.opened == 0 && c.plain == 0 && !c.own_keyring_unread);
    Ok(ShredReport { namespace: ns.to_string(), shredded_keys, checks, verified })
}

/// Every record of a store export as bytes: sealed lines as stored, plain
/// event lines encoded as the log would hold them.
///
/// # Errors
/// [`Error::InvalidInput`] on `field` for a directory, a file whose first
/// line is not an export header, an export of another store (its header
/// names another keyring than `ring_id`) or a line that does not decode.
fn export_records(path: &Path, field: &'static str, ring_id: &[u8; 16]) -> Result<Vec<(Seq, Vec<u8>)>> {
    if path.is_dir() {
        return Err(Error::invalid(
            field,
            format!("{} is a directory, not an export file (a backup directory goes in backups)", path.display()),
        ));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            return Err(Error::invalid(field, format!("{} is not a regular file: an export is one", path.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::invalid(field, format!("{}: no such file", path.display())))
        }
        Err(e) => return Err(Error::io_at(path, e)),
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io_at(path, e))?;
    let mut out = Vec::new();
    let mut lines = std::io::BufReader::new(file).lines();
    let not_export = || {
        Error::invalid(
            field,
            format!("{} is not a store export (its first line is not an export header)", path.display()),
        )
    };
    let first = lines.next().ok_or_else(not_export)?.map_err(|_| not_export())?;
    let header: crate::portability::ExportHeader = serde_json::from_str(&first).map_err(|_| not_export())?;
    let Some(id) = &header.sealed else {
        return Err(Error::invalid(
            field,
            format!(
                "{} is an export of a store without encryption (its header names no keyring): this store is \
                 encrypted since its creation, so it is not an export of this one",
                path.display()
            ),
        ));
    };
    if !id.eq_ignore_ascii_case(&hex::encode(ring_id)) {
        return Err(Error::invalid(
            field,
            format!(
                "{} is an export of another store (sealed under keyring {id}, this store's is {}): it proves \
                 nothing of this one",
                path.display(),
                hex::encode(ring_id)
            ),
        ));
    }
    for (i, line) in lines.enumerate() {
        let line = line.map_err(|e| Error::invalid(field, format!("{} line {}: {e}", path.display(), i + 2)))?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| Error::invalid(field, format!("{} line {}: {why}", path.display(), i + 2));
        match serde_json::from_str(&line).map_err(|e| bad(e.to_string()))? {
            crate::portability::ExportLine::Event(ev) => out.push((ev.seq, crate::event::encode_record(&ev)?)),
            crate::portability::ExportLine::Sealed(s) => {
                out.push((s.seq, hex::decode(&s.record).map_err(|e| bad(e.to_string()))?))
            }
            _ => {}
        }
    }
    Ok(out)
}

impl crate::Engine {
    /// Proves the shred of namespace `ns` ([`verify_shred`]): every record
    /// of it in this store and in the `backups` (data directories) and
    /// `exports` (store export files) named is tried against every key
    /// the keyring still holds for it; none may open.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `namespace`) for a plain store or a
    /// namespace never shredded; those of [`verify_shred`].
    pub fn verify_shred(&self, ns: &crate::Namespace, backups: &[PathBuf], exports: &[PathBuf]) -> Result<ShredReport> {
        let Some(keys) = self.shared().keys.clone() else {
            return Err(Error::invalid("namespace", "the store is not encrypted: nothing was shredded"));
        };
        let store = self.shared().store();
        verify_shred(&keys, ns.as_str(), Some(store.as_ref()), backups, exports)
    }

    /// Checks the records of another copy of this store for the proof of a
    /// shred of `ns` ([`Engine::verify_shred`](crate::Engine::verify_shred)):
    /// `records` as that copy holds them (`(seq, record)`; a cluster's
    /// stream of the namespace), reported under `source`. Push the result
    /// into a [`ShredReport`]'s `checks`; it proves nothing unless its
    /// `opened` and `plain` are 0.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `namespace`) for a plain store or a
    /// namespace never shredded; [`Error::Corrupted`] for a damaged
    /// sealed record.
    pub fn check_shredded_records(
        &self,
        ns: &crate::Namespace,
        source: PathBuf,
        records: impl IntoIterator<Item = (Seq, Vec<u8>)>,
    ) -> Result<crate::crypt::ShredCheck> {
        let Some(keys) = self.shared().keys.clone() else {
            return Err(Error::invalid("namespace", "the store is not encrypted: nothing was shredded"));
        };
        if shredded_keys(&keys, ns.as_str()).is_empty() {
            return Err(Error::invalid("namespace", format!("no data key of namespace {ns} was shredded")));
        }
        check_records(&keys, ns.as_str(), source, records.into_iter().map(Ok))
    }

    /// Rotates the store's key-encryption key: every data key of
    /// `DATA/KEYRING` is wrapped afresh under the KEK of `new` and the
    /// keyring is replaced atomically (a temporary file, fsync, rename,
    /// fsync of the directory). The log, its records and its cached
    /// vectors are not rewritten. Once this returns, the store opens only
    /// with the new key (the old one gets [`Error::WrongKey`]); backups
    /// and exports taken before, which carry no keyring, read with the
    /// store's keyring and so with the new key. A crash during the call
    /// leaves the store opening with exactly one of the two keys: the old
    /// one until the new keyring is renamed into place, the new one after.
    /// The keyring keeps its id, so copies still match it.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `key`) for a plain store or when
    /// `new` gives the key already in use; what `new` returns
    /// ([`Error::KeyRequired`], [`Error::InvalidInput`]); [`Error::Poisoned`];
    /// [`Error::Io`] when the disk is full or the keyring cannot be
    /// written — nothing changed then, unless the rename happened and only
    /// syncing the directory failed, in which case the store may open with
    /// either key until the rotation is run again. Nothing is written for
    /// the input errors.
    pub fn rotate_key(&self, new: &dyn crate::crypt::KeyProvider) -> Result<()> {
        let Some(keys) = self.shared().keys.clone() else {
            return Err(Error::invalid("key", "the store is not encrypted: there is no key to rotate"));
        };
        if let Some(msg) = self.shared().poison_message() {
            return Err(Error::Poisoned(msg));
        }
        if let Some(e) = self.shared().read_only_error() {
            return Err(e);
        }
        if keys.shared() {
            return Err(Error::invalid(
                "key",
                "the data keys of this store are shared through a key directory (a cluster): a key rotated in one \
                 copy would leave the others unable to read them",
            ));
        }
        let kek = new.kek()?;
        let mut ring = keys.ring.lock();
        if ring.wrapped_by(&kek) {
            return Err(Error::invalid(
                "key",
                format!("the {} holds the key already in use: nothing to rotate", new.describe()),
            ));
        }
        let old = ring.replace_kek(kek);
        if let Err(e) = ring.save(&keys.path, "rotate") {
            ring.replace_kek(old);
            return Err(e);
        }
        Ok(())
    }

    /// Whether the store is encrypted ([`crate::crypt`]).
    pub fn is_encrypted(&self) -> bool {
        self.shared().keys.is_some()
    }
}

/// The live generation of the backup data directory `b`, copied into a
/// scratch directory (removed when the returned guard drops) and opened
/// there: sled writes to a database it opens, and a proof leaves the copies
/// it inspects as they were. `b`'s `CURRENT` is read, not taken as a lock.
///
/// # Errors
/// [`Error::InvalidInput`] (field `backups`) when `CURRENT` does not name
/// a generation present in `b`; [`Error::Io`] copying; what opening sled
/// returns.
fn open_backup_copy(b: &Path) -> Result<(tempfile::TempDir, SledStore)> {
    let generation =
        crate::log::copy::live_generation(b).map(crate::log::gen_name).filter(|g| b.join(g).is_dir()).ok_or_else(
            || Error::invalid("backups", format!("{}: its CURRENT names no generation present there", b.display())),
        )?;
    let scratch = tempfile::tempdir()?;
    copy_tree(&b.join(&generation), scratch.path())?;
    let sled = SledStore::open(scratch.path(), 8 << 20)?;
    Ok((scratch, sled))
}

/// Copies the files under `from` into the existing directory `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from).map_err(|e| Error::io_at(from, e))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| Error::io_at(&entry.path(), e))?;
        }
    }
    Ok(())
}
