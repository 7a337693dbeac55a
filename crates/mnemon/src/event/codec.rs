//! The on-disk record encoding: a versioned, checksummed envelope around a
//! postcard-encoded [`Event`]. See `docs/FORMAT.md` for the byte layout.

use crate::error::{Error, Result};
use crate::event::Event;
use crate::types::Seq;

/// Current record format version (byte 0 of every record).
pub const FORMAT_VERSION: u8 = 1;

/// Version byte of a sealed record of an encrypted store
/// ([`crate::crypt`]); [`decode_record`] refuses it with
/// [`Error::KeyRequired`].
pub const SEALED_VERSION: u8 = 2;

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
    let mut out = postcard::to_extend(event, vec![FORMAT_VERSION, 0, 0, 0, 0])
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
    match bytes[0] {
        FORMAT_VERSION => {}
        0 => return Err(corrupted("version byte is 0".into())),
        SEALED_VERSION => {
            return Err(Error::KeyRequired(format!("record at seq {seq} is encrypted: open the store with its key")))
        }
        v => {
            return Err(Error::IncompatibleFormat(format!(
                "record at seq {seq} has format version {v}; this build reads version {FORMAT_VERSION}"
            )))
        }
    }
    let mut crc_bytes = [0u8; 4];
    crc_bytes.copy_from_slice(&bytes[1..RECORD_HEADER_LEN]);
    let stored = u32::from_le_bytes(crc_bytes);
    let payload = &bytes[RECORD_HEADER_LEN..];
    let actual = crc32fast::hash(payload);
    if stored != actual {
        return Err(corrupted(format!("checksum mismatch (stored {stored:08x}, computed {actual:08x})")));
    }
    let (event, rest): (Event, &[u8]) =
        postcard::take_from_bytes(payload).map_err(|e| corrupted(format!("payload does not decode: {e}")))?;
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
