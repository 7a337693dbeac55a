//! The key bucket: the data keys of an encrypted cluster's namespaces, one
//! key-value entry per namespace (key: namespace token; value: JSON array
//! of [`SharedKey`], every generation, each wrapped by the KEK the daemons
//! share, or marked shredded), and the id of the keyring they belong to
//! (key `_keyring`, 32 hex digits; no token begins `_k`). The bucket keeps
//! one value per key, so a shred's value replaces the one holding the
//! wrapped key in the bucket's stream: once every daemon's copy has taken
//! the shred, no key that opens the namespace's records is left in the
//! cluster, and every copy of those records — the stream on every NATS
//! node, each daemon's local copy, a backup — is unreadable.
//!
//! Each namespace's local engine shares its keys through a [`NsKeys`]:
//! at open it takes the namespace's keys, and it hands every new key to
//! the bucket before a record sealed with it is appended to the stream.

use std::sync::Arc;

use async_nats::jetstream::kv::{self, CreateErrorKind, Operation, UpdateErrorKind};

use crate::conn::{unavailable, Conn};
use mnemon::crypt::{merge_keys, KeyDirectory, SharedKey};
use mnemon::{Error, Result};

/// Key of the keyring id's entry.
const KEYRING_ID: &str = "_keyring";
/// Attempts at a revision-checked update that another writer raced.
const UPDATE_ATTEMPTS: usize = 8;

/// The key bucket's handle, shared by the namespaces a daemon serves.
#[derive(Clone)]
pub(crate) struct KeyBucket {
    kv: kv::Store,
}

impl KeyBucket {
    /// Opens or creates the bucket (R = `replicas`, no expiry).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when JetStream does not answer.
    pub(crate) async fn open(js: &async_nats::jetstream::Context, bucket: &str, replicas: usize) -> Result<KeyBucket> {
        let kv = crate::lease::bucket_store(js, bucket, std::time::Duration::ZERO, replicas).await?;
        Ok(KeyBucket { kv })
    }

    /// The key directory of one namespace (its token and name); a shred
    /// it stores is announced on `notice` (the daemons' shred subject).
    pub(crate) fn namespace(&self, conn: Arc<Conn>, token: &str, ns: &str, notice: String) -> NsKeys {
        NsKeys { conn, kv: self.kv.clone(), token: token.to_string(), ns: ns.to_string(), notice }
    }

    /// The `(namespace, generation)` of every shredded key of the
    /// namespace with token `token`.
    ///
    /// # Errors
    /// [`Error::Unavailable`]; [`Error::Storage`] for an entry that does not
    /// decode.
    pub(crate) async fn shredded(&self, token: &str) -> Result<Vec<(String, u32)>> {
        let keys = read_entry(&self.kv, token).await?.0;
        Ok(keys.into_iter().filter(|k| k.wrapped.is_none()).map(|k| (k.namespace, k.generation)).collect())
    }
}

/// One namespace's keys in the bucket, as its engine's key directory.
#[derive(Clone)]
pub(crate) struct NsKeys {
    conn: Arc<Conn>,
    kv: kv::Store,
    token: String,
    ns: String,
    notice: String,
}

impl std::fmt::Debug for NsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NsKeys").field("namespace", &self.ns).finish_non_exhaustive()
    }
}

/// The keys of the namespace with token `token` and the entry's revision
/// (0: none).
async fn read_entry(kv: &kv::Store, token: &str) -> Result<(Vec<SharedKey>, u64)> {
    let what = || format!("reading the keys of namespace token {token}");
    match kv.entry(token).await.map_err(|e| unavailable(&what(), e))? {
        Some(e) if e.operation == Operation::Put => {
            let keys: Vec<SharedKey> = serde_json::from_slice(&e.value).map_err(|e| {
                Error::Storage(mnemon::Failure::with_source(format!("the key entry {token} does not decode"), e))
            })?;
            Ok((keys, e.revision))
        }
        _ => Ok((Vec::new(), 0)),
    }
}

impl NsKeys {
    async fn read(&self) -> Result<(Vec<SharedKey>, u64)> {
        read_entry(&self.kv, &self.token).await
    }
}

impl KeyDirectory for NsKeys {
    fn keyring_id(&self, proposed: [u8; 16]) -> Result<[u8; 16]> {
        self.conn.run("reading the cluster's keyring id", async {
            for _ in 0..UPDATE_ATTEMPTS {
                let what = "reading the cluster's keyring id";
                if let Some(e) = self.kv.entry(KEYRING_ID).await.map_err(|e| unavailable(what, e))? {
                    let id = hex::decode(&e.value).ok().and_then(|b| <[u8; 16]>::try_from(b).ok());
                    return id.ok_or_else(|| Error::Storage("the cluster's keyring id does not decode".into()));
                }
                match self.kv.create(KEYRING_ID, hex::encode(proposed).into()).await {
                    Ok(_) => return Ok(proposed),
                    Err(e) if e.kind() == CreateErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(unavailable("storing the cluster's keyring id", e)),
                }
            }
            Err(Error::Unavailable("the cluster's keyring id kept changing".into()))
        })
    }

    fn load(&self) -> Result<Vec<SharedKey>> {
        let keys = self.conn.run("reading a namespace's keys", self.read())?.0;
        Ok(keys.into_iter().filter(|k| k.namespace == self.ns).collect())
    }

    fn store(&self, keys: &[SharedKey]) -> Result<()> {
        let mine: Vec<SharedKey> = keys.iter().filter(|k| k.namespace == self.ns).cloned().collect();
        self.conn.run("storing a namespace's keys", async {
            for _ in 0..UPDATE_ATTEMPTS {
                let (stored, revision) = self.read().await?;
                let Some(merged) = merge_keys(&stored, &mine) else {
                    return Ok(());
                };
                let shreds = merged.iter().any(|m| {
                    m.wrapped.is_none() && stored.iter().any(|s| s.generation == m.generation && s.wrapped.is_some())
                });
                let value = serde_json::to_vec(&merged)
                    .map_err(|e| Error::Storage(mnemon::Failure::with_source("encoding keys".to_string(), e)))?;
                let what = || format!("storing the keys of {}", self.ns);
                let written = if revision == 0 {
                    match self.kv.create(self.token.as_str(), value.into()).await {
                        Ok(_) => true,
                        Err(e) if e.kind() == CreateErrorKind::AlreadyExists => false,
                        Err(e) => return Err(unavailable(&what(), e)),
                    }
                } else {
                    match self.kv.update(self.token.as_str(), value.into(), revision).await {
                        Ok(_) => true,
                        Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => false,
                        Err(e) => return Err(unavailable(&what(), e)),
                    }
                };
                if written {
                    if shreds {
                        // The daemons holding an idle copy of the namespace
                        // destroy the key in it (`ClusterNode::take_shreds`);
                        // one that misses this does so when it next starts
                        // or serves the namespace.
                        let client = &self.conn.client;
                        let _ = client
                            .publish_with_reply(self.notice.clone(), client.new_inbox(), self.token.clone().into())
                            .await;
                    }
                    return Ok(());
                }
            }
            Err(Error::Unavailable(format!("the keys of {} kept changing", self.ns)))
        })
    }
}
