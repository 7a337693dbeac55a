//! Sealed records and sealed vector-cache values (format in
//! `docs/FORMAT.md`, *Encryption at rest*).
//!
//! A sealed record keeps its envelope plain (seq, time, namespace, event
//! kind) and, for a `Forgotten` event, the ids it erased; the body is
//! XChaCha20-Poly1305 ciphertext under the namespace's data key, with the
//! envelope as associated data, so a record moved to another position or
//! namespace fails to decrypt. Opening gives back the very plain record
//! (version 1 or 2) that was sealed.

use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::XNonce;
use serde::{Deserialize, Serialize};

use crate::crypt::keyring::{nonce, DataKey, NONCE_LEN};
use crate::error::{Error, Result};
use crate::event::{encode_record, Accessed, Event, EventBody, ForgetTarget, Forgotten, Tombstone, FORMAT_VERSION};
use crate::types::{MemoryId, ObservationId, Seq};

pub use crate::event::SEALED_VERSION;

/// First byte of a sealed vector-cache value.
pub const SEALED_VECTOR_TAG: u8 = 3;

/// Event kinds (variant index of `EventBody`) whose body is sealed:
/// `Observed`, `Extracted`, `Accessed`, `Forgotten`. The others hold ids
/// only and stay plain records.
pub(crate) fn is_sealed_kind(kind: u32) -> bool {
    matches!(kind, 0 | 1 | 3 | 4)
}

/// The envelope of a plain record: what stays plain once sealed.
pub(crate) struct Envelope {
    /// The plain record's version byte (1, or 2 for an access that names
    /// a session).
    pub(crate) version: u8,
    pub(crate) seq: Seq,
    pub(crate) time: i64,
    pub(crate) ns: String,
    pub(crate) kind: u32,
}

/// Reads the envelope of a plain record (version 1 or 2) and returns it
/// with the body's bytes (the postcard of the variant's fields).
pub(crate) fn split_plain(seq: Seq, bytes: &[u8]) -> Result<(Envelope, &[u8])> {
    let bad = |why: &str| Error::Corrupted { seq, reason: format!("record to seal: {why}") };
    if bytes.len() < 5 || !(1..=FORMAT_VERSION).contains(&bytes[0]) {
        return Err(bad("not a plain record"));
    }
    let ((s, time, ns, kind), body): ((u64, i64, String, u32), &[u8]) =
        postcard::take_from_bytes(&bytes[5..]).map_err(|_| bad("envelope does not decode"))?;
    Ok((Envelope { version: bytes[0], seq: s, time, ns, kind }, body))
}

/// The ids of a `Forgotten` event, kept plain in its sealed record so that
/// a shredded namespace still replays its erasures.
#[derive(Serialize, Deserialize)]
struct PlainIds {
    /// `ForgetTarget` variant index.
    target: u8,
    /// The id of a memory or observation target.
    target_id: Option<u64>,
    memories: Vec<MemoryId>,
    observations: Vec<ObservationId>,
}

#[derive(Serialize, Deserialize)]
struct SealedRecord {
    /// Version byte of the plain record sealed (1 or 2).
    version: u8,
    seq: u64,
    time: i64,
    ns: String,
    kind: u32,
    generation: u32,
    nonce: [u8; NONCE_LEN],
    ids: Option<PlainIds>,
    sealed: Vec<u8>,
}

/// The plain parts of a sealed record: what anyone holding a copy can read
/// without the store's key (`docs/FORMAT.md`, *Encryption at rest*).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedHead {
    /// The record's namespace.
    pub ns: String,
    /// The event kind: the variant index of [`EventBody`] (0 `Observed`,
    /// 1 `Extracted`, 3 `Accessed`, 4 `Forgotten`).
    pub kind: u32,
    /// The generation of the namespace's data key that sealed it (one per
    /// compaction).
    pub generation: u32,
    /// For `Forgotten`: whether it forgot the whole namespace (a shred).
    pub whole_namespace: bool,
    /// The event's time, microseconds since the Unix epoch (the plain
    /// record's `time`).
    pub time_us: i64,
}

fn aad(r: &SealedRecord) -> Result<Vec<u8>> {
    let mut a = b"mnemon record 3".to_vec();
    a.push(r.version);
    a.extend_from_slice(&r.seq.to_be_bytes());
    a.extend_from_slice(&r.time.to_le_bytes());
    a.extend_from_slice(&r.kind.to_le_bytes());
    a.extend_from_slice(&r.generation.to_le_bytes());
    a.extend_from_slice(&u64::try_from(r.ns.len()).unwrap_or(u64::MAX).to_le_bytes());
    a.extend_from_slice(r.ns.as_bytes());
    if let Some(ids) = &r.ids {
        a.extend(postcard::to_allocvec(ids).map_err(|e| Error::Storage(format!("cannot encode ids: {e}").into()))?);
    }
    Ok(a)
}

/// Seals the plain record `bytes` (of a sealed kind) under `key`.
pub(crate) fn seal_record(env: Envelope, body: &[u8], generation: u32, key: &DataKey) -> Result<Vec<u8>> {
    let ids = if env.kind == 4 {
        let f: Forgotten = postcard::from_bytes(body)
            .map_err(|_| Error::Corrupted { seq: env.seq, reason: "forget record does not decode".into() })?;
        let (target, target_id) = match f.target {
            ForgetTarget::Memory(m) => (0, Some(m.0)),
            ForgetTarget::Observation(o) => (1, Some(o.0)),
            ForgetTarget::Session(_) => (2, None),
            ForgetTarget::Namespace => (3, None),
            ForgetTarget::Matching => (4, None),
        };
        Some(PlainIds { target, target_id, memories: f.memories, observations: f.observations })
    } else {
        None
    };
    let mut r = SealedRecord {
        version: env.version,
        seq: env.seq,
        time: env.time,
        ns: env.ns,
        kind: env.kind,
        generation,
        nonce: nonce(),
        ids,
        sealed: Vec::new(),
    };
    let a = aad(&r)?;
    r.sealed = key
        .cipher()
        .encrypt(XNonce::from_slice(&r.nonce), Payload { msg: body, aad: &a })
        .map_err(|_| Error::Storage("sealing a record failed".into()))?;
    let mut out = postcard::to_extend(&r, vec![SEALED_VERSION, 0, 0, 0, 0])
        .map_err(|e| Error::Storage(format!("cannot encode a sealed record: {e}").into()))?;
    let crc = crc32fast::hash(&out[5..]);
    out[1..5].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

fn parse(seq: Seq, bytes: &[u8]) -> Result<SealedRecord> {
    let bad = |why: String| Error::Corrupted { seq, reason: why };
    if bytes.len() < 5 || bytes[0] != SEALED_VERSION {
        return Err(bad("not a sealed record".into()));
    }
    if bytes.len() > crate::event::MAX_RECORD_LEN {
        return Err(bad(format!("record of {} bytes exceeds the maximum", bytes.len())));
    }
    let mut crc = [0u8; 4];
    crc.copy_from_slice(&bytes[1..5]);
    let (stored, actual) = (u32::from_le_bytes(crc), crc32fast::hash(&bytes[5..]));
    if stored != actual {
        return Err(bad(format!("checksum mismatch (stored {stored:08x}, computed {actual:08x})")));
    }
    let r: SealedRecord = postcard::from_bytes(&bytes[5..]).map_err(|e| bad(format!("sealed record: {e}")))?;
    if r.seq != seq {
        return Err(bad(format!("payload carries seq {} under key {seq}", r.seq)));
    }
    Ok(r)
}

/// The plain parts of the sealed record `bytes` (a log value whose first
/// byte is [`SEALED_VERSION`]) stored under key `seq`. Never panics on
/// arbitrary bytes.
///
/// # Errors
/// [`Error::Corrupted`] naming `seq` when it is not a whole sealed record:
/// too short, too long, a checksum mismatch, a payload that does not
/// decode, or a payload whose `seq` differs from the key.
pub fn head(seq: Seq, bytes: &[u8]) -> Result<SealedHead> {
    let r = parse(seq, bytes)?;
    let whole_namespace = r.ids.as_ref().is_some_and(|i| i.target == 3);
    Ok(SealedHead { ns: r.ns, kind: r.kind, generation: r.generation, whole_namespace, time_us: r.time })
}

/// Opens a sealed record with its data key: the plain record sealed.
///
/// # Errors
/// [`Error::Corrupted`] when the bytes are damaged or were moved (the
/// authentication tag fails).
pub(crate) fn open_record(seq: Seq, bytes: &[u8], key: &DataKey) -> Result<Vec<u8>> {
    let r = parse(seq, bytes)?;
    let a = aad(&r)?;
    let body = key
        .cipher()
        .decrypt(XNonce::from_slice(&r.nonce), Payload { msg: &r.sealed, aad: &a })
        .map_err(|_| Error::Corrupted { seq, reason: "sealed record fails authentication".into() })?;
    if !(1..=FORMAT_VERSION).contains(&r.version) {
        return Err(Error::Corrupted { seq, reason: format!("sealed record holds plain version {}", r.version) });
    }
    let mut out = postcard::to_extend(&(r.seq, r.time, r.ns.as_str(), r.kind), vec![r.version, 0, 0, 0, 0])
        .map_err(|e| Error::Storage(format!("cannot encode a record: {e}").into()))?;
    out.extend_from_slice(&body);
    let crc = crc32fast::hash(&out[5..]);
    out[1..5].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The reason a `Forgotten` event of a shredded namespace reads with: the
/// reason and requester it was given were sealed under the key the forget
/// destroyed (they may name the person forgotten), so they are unreadable
/// too.
pub const SHREDDED_REASON: &str = "[unreadable: sealed under a destroyed key]";

/// The plain record a sealed record reads as once its key is shredded:
/// an erased `Observed` or `Extracted` payload as the tombstone compaction
/// leaves, an `Accessed` event without ids, a `Forgotten` event with its
/// ids and [`SHREDDED_REASON`] for its reason (a session target reads as
/// `matching`: its name was sealed).
///
/// Never panics on arbitrary bytes; what it returns decodes with
/// [`crate::event::decode_record`].
///
/// # Errors
/// [`Error::Corrupted`] naming `seq` when the bytes are damaged, as
/// [`head`] says, or name a kind that is never sealed, a time out of range
/// or an invalid namespace.
pub fn shredded_record(seq: Seq, bytes: &[u8]) -> Result<Vec<u8>> {
    let r = parse(seq, bytes)?;
    let time = crate::event::micros::from_micros(r.time)
        .ok_or_else(|| Error::Corrupted { seq, reason: "time out of range".into() })?;
    let body = match (r.kind, r.ids) {
        (0, _) => EventBody::Tombstone(Tombstone { was: "observed".into() }),
        (1, _) => EventBody::Tombstone(Tombstone { was: "extracted".into() }),
        (3, _) => EventBody::Accessed(Accessed { ids: Vec::new(), requester: None, session: None }),
        (4, Some(ids)) => EventBody::Forgotten(Forgotten {
            target: match (ids.target, ids.target_id) {
                (0, Some(id)) => ForgetTarget::Memory(MemoryId(id)),
                (1, Some(id)) => ForgetTarget::Observation(ObservationId(id)),
                (3, _) => ForgetTarget::Namespace,
                _ => ForgetTarget::Matching,
            },
            reason: SHREDDED_REASON.to_string(),
            requester: None,
            memories: ids.memories,
            observations: ids.observations,
        }),
        (k, _) => return Err(Error::Corrupted { seq, reason: format!("sealed record of kind {k}") }),
    };
    let ns = crate::types::Namespace::new(r.ns).map_err(|e| Error::Corrupted { seq, reason: e.to_string() })?;
    encode_record(&Event { seq, time, ns, body })
}

fn vector_aad(key: &[u8], ns: &str) -> Vec<u8> {
    let mut a = b"mnemon vector 2".to_vec();
    a.extend_from_slice(key);
    a.extend_from_slice(ns.as_bytes());
    a
}

/// Seals a vector-cache value: `3 ‖ generation u32 LE ‖ nonce ‖ ciphertext`,
/// the cache key and namespace as associated data.
pub(crate) fn seal_vector(key: &[u8], ns: &str, generation: u32, dk: &DataKey, value: &[u8]) -> Result<Vec<u8>> {
    let n = nonce();
    let ct = dk
        .cipher()
        .encrypt(XNonce::from_slice(&n), Payload { msg: value, aad: &vector_aad(key, ns) })
        .map_err(|_| Error::Storage("sealing a vector failed".into()))?;
    let mut out = Vec::with_capacity(1 + 4 + NONCE_LEN + ct.len());
    out.push(SEALED_VECTOR_TAG);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&n);
    out.extend_from_slice(&ct);
    Ok(out)
}

/// The generation a sealed vector value was sealed under, if it is one.
pub(crate) fn vector_generation(value: &[u8]) -> Option<u32> {
    if value.len() < 1 + 4 + NONCE_LEN || value[0] != SEALED_VECTOR_TAG {
        return None;
    }
    Some(u32::from_le_bytes([value[1], value[2], value[3], value[4]]))
}

/// Opens a sealed vector value; `None` when it does not authenticate
/// (caches are rebuilt, never trusted).
pub(crate) fn open_vector(key: &[u8], ns: &str, dk: &DataKey, value: &[u8]) -> Option<Vec<u8>> {
    vector_generation(value)?;
    let (n, ct) = value[5..].split_at(NONCE_LEN);
    dk.cipher().decrypt(XNonce::from_slice(n), Payload { msg: ct, aad: &vector_aad(key, ns) }).ok()
}
