//! Compaction receipts kept in the store: one `meta` entry per compaction,
//! `compaction.receipt.<generation, 20 digits>` → a JSON object
//! `{"v": 1, …}` holding a [`CompactionReceipt`] (docs/FORMAT.md). The
//! zero-padded generation makes key order the order of compactions.

use serde_json::Value;

use crate::erase::receipt::CompactionReceipt;
use crate::error::{Error, Result};
use crate::log::LogStore;

/// Key prefix of the stored receipts in `meta`.
pub(crate) const PREFIX: &str = "compaction.receipt.";
/// Version of the stored receipt's layout (the `v` field).
const VERSION: u64 = 1;

/// The `meta` key of the receipt of the compaction to `generation`.
fn key(generation: u64) -> String {
    format!("{PREFIX}{generation:020}")
}

/// Writes (or replaces) the receipt of the compaction to
/// `r.generation`; durable at the store's next flush.
///
/// # Errors
/// Backend errors; [`Error::Corrupted`] if the receipt does not encode.
pub(crate) fn put(store: &dyn LogStore, r: &CompactionReceipt) -> Result<()> {
    let mut v = serde_json::to_value(r)
        .map_err(|e| Error::Corrupted { seq: 0, reason: format!("compaction receipt does not encode: {e}") })?;
    if let Value::Object(m) = &mut v {
        m.insert("v".into(), Value::from(VERSION));
    }
    store.meta_put(&key(r.generation), v.to_string().as_bytes())
}

/// Every stored receipt, newest (highest generation) first.
///
/// # Errors
/// Backend errors; [`Error::Corrupted`] (seq 0, naming the key) for an
/// entry that is not a receipt; [`Error::IncompatibleFormat`] for one
/// written by a newer layout.
pub(crate) fn list(store: &dyn LogStore) -> Result<Vec<CompactionReceipt>> {
    let mut out = Vec::new();
    for (k, bytes) in store.meta_prefix(PREFIX)? {
        let bad = |why: String| Error::Corrupted { seq: 0, reason: format!("meta entry {k:?}: {why}") };
        let mut v: Value = serde_json::from_slice(&bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        let version = match &mut v {
            Value::Object(m) => m.remove("v").and_then(|x| x.as_u64()),
            _ => None,
        };
        match version {
            Some(VERSION) => {}
            Some(n) if n > VERSION => {
                return Err(Error::IncompatibleFormat(format!(
                    "compaction receipt {k:?} has layout {n}; this build reads {VERSION}"
                )))
            }
            _ => return Err(bad("no known layout version \"v\"".into())),
        }
        let r: CompactionReceipt = serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
        if key(r.generation) != k {
            return Err(bad(format!("holds the receipt of generation {}", r.generation)));
        }
        out.push(r);
    }
    out.reverse();
    Ok(out)
}
