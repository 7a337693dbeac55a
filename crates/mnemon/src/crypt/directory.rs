//! A key directory: the home of data keys shared by every copy of a
//! namespace that lives in more than one place (a cluster's daemons, each
//! with its own copy, all reading one replicated log).
//!
//! A store opened with a [`KeyDirectory`] takes its keyring's id from the
//! directory, takes every data key the directory holds at open, and hands
//! the directory its keys after every change of its keyring: a new data
//! key is in the directory before any record sealed with it leaves the
//! store's writer, and a shred reaches the directory once the forget is
//! durable. The directory holds each key wrapped by the KEK, as the
//! keyring file does; a shred replaces the wrapped key by a mark, so that
//! every copy of the namespace's records, wherever it is, becomes
//! unreadable once the directory and the copies' keyrings have it.

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// One data key as a key directory holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedKey {
    /// The namespace whose records it seals.
    pub namespace: String,
    /// The key's generation (1 for the namespace's first key, one more for
    /// each key made after a shred or by a compaction).
    pub generation: u32,
    /// The data key wrapped by the KEK: a 24-byte XChaCha20-Poly1305 nonce
    /// and the 48-byte ciphertext (32-byte key and 16-byte tag), with the
    /// keyring's id, the generation and the namespace as associated data
    /// (`docs/FORMAT.md`, *Encryption at rest*); `None` once shredded.
    pub wrapped: Option<Vec<u8>>,
}

/// Where the data keys shared by several copies of a store live; see the
/// [module docs](self). Implementations must make `store` durable before
/// returning and must never turn a shredded key back into a live one.
pub trait KeyDirectory: Send + Sync + std::fmt::Debug {
    /// The id of the keyring every copy shares: the one the directory
    /// holds, or `proposed` once stored there when it holds none.
    ///
    /// # Errors
    /// [`crate::Error::Unavailable`] when the directory cannot be reached.
    fn keyring_id(&self, proposed: [u8; 16]) -> Result<[u8; 16]>;

    /// Every key the directory holds for the copy's namespaces.
    ///
    /// # Errors
    /// [`crate::Error::Unavailable`] when the directory cannot be reached;
    /// [`crate::Error::Storage`] for an entry that does not decode.
    fn load(&self) -> Result<Vec<SharedKey>>;

    /// Merges `keys` into the directory: a key it lacks is added, a
    /// shredded one replaces the live key of the same generation, and a
    /// live one leaves a shredded one shredded.
    ///
    /// # Errors
    /// [`crate::Error::Unavailable`] when the directory did not confirm the
    /// change (the caller does not use a new key then).
    fn store(&self, keys: &[SharedKey]) -> Result<()>;
}

/// `stored` with `keys` merged in as [`KeyDirectory::store`] describes;
/// `None` when nothing changes. For implementations of the trait.
pub fn merge_keys(stored: &[SharedKey], keys: &[SharedKey]) -> Option<Vec<SharedKey>> {
    let mut out = stored.to_vec();
    let mut changed = false;
    for k in keys {
        match out.iter_mut().find(|s| s.namespace == k.namespace && s.generation == k.generation) {
            Some(s) => {
                if s.wrapped.is_some() && k.wrapped.is_none() {
                    s.wrapped = None;
                    changed = true;
                }
            }
            None => {
                out.push(k.clone());
                changed = true;
            }
        }
    }
    out.sort_by(|a, b| (&a.namespace, a.generation).cmp(&(&b.namespace, b.generation)));
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: &str, generation: u32, live: bool) -> SharedKey {
        SharedKey { namespace: ns.into(), generation, wrapped: live.then(|| vec![7; 72]) }
    }

    #[test]
    fn merge_adds_shreds_and_never_revives() {
        assert_eq!(merge_keys(&[], &[key("a", 1, true)]), Some(vec![key("a", 1, true)]));
        assert_eq!(merge_keys(&[key("a", 1, true)], &[key("a", 1, true)]), None);
        assert_eq!(merge_keys(&[key("a", 1, true)], &[key("a", 1, false)]), Some(vec![key("a", 1, false)]));
        assert_eq!(merge_keys(&[key("a", 1, false)], &[key("a", 1, true)]), None);
        assert_eq!(
            merge_keys(&[key("a", 2, true)], &[key("a", 1, false)]),
            Some(vec![key("a", 1, false), key("a", 2, true)])
        );
    }
}
