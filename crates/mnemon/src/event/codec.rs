//! The on-disk record encoding: a versioned, checksummed envelope around a
//! postcard-encoded [`Event`]. See `docs/FORMAT.md` for the byte layout.
//!
//! Two record versions exist. Version 2 adds `session` at the end of
//! `Accessed`; every other payload is laid out as in version 1. A record
//! is written in the oldest version that holds it, so a store gains
//! version 2 records only from accesses that name a session, and a build
//! that reads version 1 only refuses exactly those (`IncompatibleFormat`).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::event::micros;
use crate::event::{Archived, Event, EventBody, Extracted, Forgotten, Observed, Superseded, Tombstone};
use crate::types::{MemoryId, Namespace, Seq};

/// Newest record format version this build reads and writes (byte 0 of a
/// record). It reads every version from 1 up to this one.
pub const FORMAT_VERSION: u8 = 2;

/// The first record format version: `Accessed` without `session`.
const FORMAT_V1: u8 = 1;

/// The layout of the store's trees (the `meta` entry `format_version`).
/// Record versions are per record and do not change it.
pub(crate) const STORE_FORMAT_VERSION: u8 = 1;

/// Version byte of a sealed record of an encrypted store
/// ([`crate::crypt`]); [`decode_record`] refuses it with
/// [`Error::KeyRequired`]. A sealed record wraps a plain record of
/// version 1 or 2, whose version it keeps.
pub const SEALED_VERSION: u8 = 3;

/// Bytes before the payload: 1 version byte + 4 checksum bytes.
pub const RECORD_HEADER_LEN: usize = 5;

/// Largest record the decoder accepts, in bytes (16 MiB). Larger values are
/// treated as corruption rather than allocated.
pub const MAX_RECORD_LEN: usize = 16 * 1024 * 1024;

/// Encodes an event as a log record:
/// `[version: u8][crc32 of payload: u32 little-endian][payload: postcard]`.
///
/// # Errors
/// [`Error::InvalidInput`] if the event cannot be encoded (it always can for
/// events built by the engine) or the record would exceed 16 MiB (`MAX_RECORD_LEN`).
pub fn encode_record(event: &Event) -> Result<Vec<u8>> {
    // `Accessed::session` is skipped when `None`, so such a payload is
    // byte for byte its version 1 layout.
    let version = match &event.body {
        EventBody::Accessed(a) if a.session.is_some() => FORMAT_VERSION,
        _ => FORMAT_V1,
    };
    let mut out = postcard::to_extend(event, vec![version, 0, 0, 0, 0])
        .map_err(|e| Error::invalid("event", format!("cannot encode: {e}")))?;
    if out.len() > MAX_RECORD_LEN {
        return Err(Error::invalid("event", format!("record of {} bytes is too large", out.len())));
    }
    let crc = crc32fast::hash(&out[RECORD_HEADER_LEN..]);
    out[1..RECORD_HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Decodes a log record stored under key `seq`.
///
/// Never panics on arbitrary bytes.
///
/// # Errors
/// - [`Error::IncompatibleFormat`] when the version byte is one this build
///   does not know (a newer mnemon wrote it).
/// - [`Error::KeyRequired`] for a sealed record ([`SEALED_VERSION`]), which
///   only the store's keyring opens.
/// - [`Error::Corrupted`] naming `seq` when the record is truncated, its
///   checksum does not match, the payload does not decode, or the payload's
///   own `seq` differs from the key.
pub fn decode_record(seq: Seq, bytes: &[u8]) -> Result<Event> {
    let corrupted = |reason: String| Error::Corrupted { seq, reason };
    if bytes.len() < RECORD_HEADER_LEN {
        return Err(corrupted(format!("record of {} bytes is shorter than its header", bytes.len())));
    }
    if bytes.len() > MAX_RECORD_LEN {
        return Err(corrupted(format!("record of {} bytes exceeds the maximum", bytes.len())));
    }
    let version = match bytes[0] {
        0 => return Err(corrupted("version byte is 0".into())),
        SEALED_VERSION => {
            return Err(Error::KeyRequired(format!("record at seq {seq} is encrypted: open the store with its key")))
        }
        v if v > FORMAT_VERSION => {
            return Err(Error::IncompatibleFormat(format!(
                "record at seq {seq} has format version {v}; this build reads versions 1 to {FORMAT_VERSION}"
            )))
        }
        v => v,
    };
    let mut crc_bytes = [0u8; 4];
    crc_bytes.copy_from_slice(&bytes[1..RECORD_HEADER_LEN]);
    let stored = u32::from_le_bytes(crc_bytes);
    let payload = &bytes[RECORD_HEADER_LEN..];
    let actual = crc32fast::hash(payload);
    if stored != actual {
        return Err(corrupted(format!("checksum mismatch (stored {stored:08x}, computed {actual:08x})")));
    }
    let undecodable = |e: postcard::Error| corrupted(format!("payload does not decode: {e}"));
    let (event, rest): (Event, &[u8]) = if version == FORMAT_V1 {
        let (v1, rest): (EventV1, &[u8]) = postcard::take_from_bytes(payload).map_err(undecodable)?;
        (v1.into(), rest)
    } else {
        let (event, rest): (Event, &[u8]) = postcard::take_from_bytes(payload).map_err(undecodable)?;
        // Version 2 is written only for an access that names a session.
        if !matches!(&event.body, EventBody::Accessed(a) if a.session.is_some()) {
            return Err(corrupted("a format version 2 record that is not an access with a session".into()));
        }
        (event, rest)
    };
    if !rest.is_empty() {
        return Err(corrupted(format!("{} trailing bytes after the payload", rest.len())));
    }
    if event.seq != seq {
        return Err(corrupted(format!("payload carries seq {} under key {seq}", event.seq)));
    }
    if !event.body_is_valid() {
        return Err(corrupted("payload fails validation (importance outside 0..=1 or non-finite)".into()));
    }
    Ok(event)
}

impl Event {
    /// Structural checks a decoded payload must pass beyond its schema.
    fn body_is_valid(&self) -> bool {
        match &self.body {
            crate::event::EventBody::Extracted(x) => (0.0..=1.0).contains(&x.importance),
            _ => true,
        }
    }
}

/// An event as format version 1 lays it out; decoded, then upgraded.
#[derive(Deserialize)]
struct EventV1 {
    seq: Seq,
    #[serde(with = "micros")]
    time: chrono::DateTime<chrono::Utc>,
    ns: Namespace,
    body: BodyV1,
}

/// [`EventBody`] in format version 1: the same variants in the same order.
#[derive(Deserialize)]
enum BodyV1 {
    Observed(Observed),
    Extracted(Extracted),
    Superseded(Superseded),
    Accessed(AccessedV1),
    Forgotten(Forgotten),
    Tombstone(Tombstone),
    Archived(Archived),
}

/// `Accessed` in format version 1: no session.
#[derive(Deserialize)]
struct AccessedV1 {
    ids: Vec<MemoryId>,
    requester: Option<String>,
}

impl From<EventV1> for Event {
    fn from(v1: EventV1) -> Event {
        let body = match v1.body {
            BodyV1::Observed(o) => EventBody::Observed(o),
            BodyV1::Extracted(x) => EventBody::Extracted(x),
            BodyV1::Superseded(s) => EventBody::Superseded(s),
            BodyV1::Accessed(a) => {
                EventBody::Accessed(crate::event::Accessed { ids: a.ids, requester: a.requester, session: None })
            }
            BodyV1::Forgotten(f) => EventBody::Forgotten(f),
            BodyV1::Tombstone(t) => EventBody::Tombstone(t),
            BodyV1::Archived(a) => EventBody::Archived(a),
        };
        Event { seq: v1.seq, time: v1.time, ns: v1.ns, body }
    }
}
