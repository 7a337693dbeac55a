//! Proof of a shred: every record of the namespace, in the store and in
//! the backups and exports named, is tried against every key the keyring
//! still holds for it, and none may open.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::crypt::keyring::KeyState;
use crate::crypt::record::{head, open_record, split_plain, SEALED_VERSION};
use crate::crypt::Keys;
use crate::error::Result;
use crate::types::Seq;

/// What the check found in one place (the store, a backup, an export).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShredCheck {
    /// The data directory or export file; `store` for the open store.
    pub source: PathBuf,
    /// Records of the namespace sealed under a shredded key.
    pub sealed: u64,
    /// Of those, records some key of the keyring opened (must be 0).
    pub opened: u64,
    /// Records of the namespace whose content can be read without a key:
    /// an `Observed` or `Extracted` record in plain (must be 0; a plain
    /// store or export is outside what a shred reaches).
    pub plain: u64,
    /// Records of the namespace sealed under a key made after the shred
    /// (writes since): readable, and not part of the proof.
    pub later: u64,
    /// For a backup: it holds a keyring of its own (`KEYRING`, kept by the
    /// first open of the copy), which a shred of the store does not reach.
    /// Its keys are tried too, and the records they open are counted in
    /// `opened`.
    #[serde(default)]
    pub own_keyring: bool,
    /// For a backup with a keyring of its own: that keyring does not open
    /// with the store's key (it was copied before a rotation, or is
    /// damaged), so its keys cannot be tried and the proof fails. Delete
    /// the copy's `KEYRING`, or the copy, to erase it.
    #[serde(default)]
    pub own_keyring_unread: bool,
}

/// The proof that a namespace's shredded records are unreadable
/// everywhere they were looked for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShredReport {
    /// The namespace.
    pub namespace: String,
    /// Generations of the namespace's data key that were destroyed.
    pub shredded_keys: Vec<u32>,
    /// One entry per place searched.
    pub checks: Vec<ShredCheck>,
    /// True when a key was shredded, no record under it opened (with the
    /// store's keys, or a backup's own), no record of the namespace was
    /// readable in plain, and no backup holds a keyring of its own that
    /// could not be tried.
    pub verified: bool,
}

/// Checks the records `records` yields (as stored) for namespace `ns`.
///
/// # Errors
/// Those `records` yields; [`crate::Error::Corrupted`] for a damaged sealed record.
pub(crate) fn check_records(
    keys: &Keys,
    ns: &str,
    source: PathBuf,
    records: impl Iterator<Item = Result<(Seq, Vec<u8>)>>,
) -> Result<ShredCheck> {
    let ring = keys.ring.lock();
    let live: Vec<u32> = (1..=u32::MAX)
        .take_while(|g| !matches!(ring.get(ns, *g), KeyState::Unknown))
        .filter(|g| matches!(ring.get(ns, *g), KeyState::Live(_)))
        .collect();
    let mut c = ShredCheck { source, ..ShredCheck::default() };
    for r in records {
        let (seq, bytes) = r?;
        if bytes.first() == Some(&SEALED_VERSION) {
            let h = head(seq, &bytes)?;
            if h.ns != ns {
                continue;
            }
            match ring.get(ns, h.generation) {
                KeyState::Live(_) => c.later += 1,
                KeyState::Shredded | KeyState::Unknown => {
                    c.sealed += 1;
                    let opens = live.iter().any(|g| match ring.get(ns, *g) {
                        KeyState::Live(k) => open_record(seq, &bytes, k).is_ok(),
                        _ => false,
                    });
                    if opens {
                        c.opened += 1;
                    }
                }
            }
        } else if let Ok((env, _)) = split_plain(seq, &bytes) {
            if env.ns == ns && matches!(env.kind, 0 | 1) {
                c.plain += 1;
            }
        }
    }
    Ok(c)
}

/// Records of `ns` in `records` (as stored) that a live key of `ring` (a
/// copy's own keyring) opens.
///
/// # Errors
/// Those `records` yields; [`crate::Error::Corrupted`] for a damaged sealed record.
pub(crate) fn opened_by(
    ring: &crate::crypt::Keyring,
    ns: &str,
    records: impl Iterator<Item = Result<(Seq, Vec<u8>)>>,
) -> Result<u64> {
    let mut opened = 0;
    for r in records {
        let (seq, bytes) = r?;
        if bytes.first() != Some(&SEALED_VERSION) {
            continue;
        }
        let h = head(seq, &bytes)?;
        if h.ns == ns && matches!(ring.get(ns, h.generation), KeyState::Live(k) if open_record(seq, &bytes, k).is_ok())
        {
            opened += 1;
        }
    }
    Ok(opened)
}

/// Generations of `ns`'s data key that were shredded.
pub(crate) fn shredded_keys(keys: &Keys, ns: &str) -> Vec<u32> {
    keys.ring.lock().shredded().into_iter().filter(|(n, _)| n == ns).map(|(_, g)| g).collect()
}
