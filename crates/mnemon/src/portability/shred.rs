//! Proof of a shred across the store, its backups and its exports
//! ([`crate::crypt`]).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::crypt::{check_records, shredded_keys, Keys, ShredReport};
use crate::error::{Error, Result};
use crate::log::{DataDir, LogStore, SledStore};
use crate::types::Seq;

/// Verifies the shred of `ns`: the records of `store` (the open store,
/// reported as `store`), of every backup data directory in `backups` and
/// of every store export in `exports`.
///
/// # Errors
/// [`Error::InvalidInput`] (field `namespace`) when the keyring never
/// shredded a key of `ns`; [`Error::Locked`] for a backup in use;
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
        return Err(Error::invalid("namespace", format!("no data key of namespace {ns} was shredded")));
    }
    let mut checks = Vec::new();
    if let Some(s) = store {
        checks.push(check_records(keys, ns, PathBuf::from("store"), s.scan_raw(1, u64::MAX))?);
    }
    for b in backups {
        if !b.join("CURRENT").exists() {
            return Err(Error::invalid("backup", format!("{} is not a data directory", b.display())));
        }
        let dir = DataDir::open(b)?;
        let sled = SledStore::open(&dir.current_path(), 8 << 20)?;
        checks.push(check_records(keys, ns, b.clone(), sled.scan(1, u64::MAX))?);
    }
    for e in exports {
        checks.push(check_records(keys, ns, e.clone(), export_records(e)?.into_iter().map(Ok))?);
    }
    let verified = checks.iter().all(|c| c.opened == 0 && c.plain == 0);
    Ok(ShredReport { namespace: ns.to_string(), shredded_keys, checks, verified })
}

/// Every record of a store export as bytes: sealed lines as stored, plain
/// event lines encoded as the log would hold them.
fn export_records(path: &Path) -> Result<Vec<(Seq, Vec<u8>)>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io_at(path, e))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if i == 0 || line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| Error::invalid("export", format!("{} line {}: {why}", path.display(), i + 1));
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

    /// Whether the store is encrypted ([`crate::crypt`]).
    pub fn is_encrypted(&self) -> bool {
        self.shared().keys.is_some()
    }
}
