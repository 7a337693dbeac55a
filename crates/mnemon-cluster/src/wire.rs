//! The messages of a namespace's stream: groups of encoded event records
//! (split into parts under the server's message size) and takeover markers.
//!
//! ```text
//! offset  size  field
//! 0       3     "MNL"
//! 3       1     version (1)
//! 4       4     CRC-32 (IEEE, crc32fast) of bytes 8.., little-endian
//! 8       n     postcard of LogMessage
//! ```
//! Records inside are event records exactly as the local log stores them
//! (each with its own version byte and CRC, docs/FORMAT.md), so a replica's
//! log is byte-for-byte the owner's.

use serde::{Deserialize, Serialize};

use mnemon::replication::Group;
use mnemon::Seq;
use mnemon::{Error, Result};

const MAGIC: &[u8; 3] = b"MNL";
const VERSION: u8 = 1;
const HEADER: usize = 8;
/// Largest message the decoder accepts (64 MiB; NATS servers default to a
/// 1 MiB `max_payload`, 64 MiB is the most they allow).
const MAX_MESSAGE: usize = 64 << 20;

/// One message of a namespace's stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum LogMessage {
    /// Records of one writer group (all of it, or one part).
    Group(GroupPart),
    /// A daemon took the namespace's writer lease. Parts of a group not
    /// finished before it are void: that group was never acknowledged.
    Takeover {
        /// The daemon id.
        daemon: String,
        /// Its process instance (random per start).
        instance: u64,
        /// The lease revision it holds.
        epoch: u64,
    },
    /// Records of one writer group of an encrypted namespace (all of it,
    /// or one part): the records sealed as the local log stores them, the
    /// part's `vectors` empty, and the vectors as sealed vector-cache
    /// values instead. Its data keys are in the cluster's key bucket.
    SealedGroup {
        /// The part, its `vectors` empty.
        part: GroupPart,
        /// Vectors of memories created by its records, sealed.
        vectors: Vec<SealedVector>,
    },
}

/// A memory's vector as an encrypted namespace's stream carries it: the
/// vector-cache value sealed under the namespace's data key (format in
/// `docs/FORMAT.md`, *Encryption at rest*), bound to the memory's id and
/// the part's model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SealedVector {
    /// The memory id (`Seq` of its `extracted` record).
    pub(crate) id: u64,
    /// The sealed vector-cache value.
    pub(crate) value: Vec<u8>,
}

/// Part `part` of `parts` of a group whose first record is `group_first`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct GroupPart {
    /// `Seq` of the group's first record.
    pub(crate) group_first: Seq,
    /// 0-based index of this part.
    pub(crate) part: u32,
    /// Number of parts of the group (≥ 1).
    pub(crate) parts: u32,
    /// `Seq` of this part's first record; the records follow contiguously.
    pub(crate) first: Seq,
    /// Encoded event records.
    pub(crate) records: Vec<Vec<u8>>,
    /// Model id of `vectors`.
    pub(crate) model: String,
    /// Vectors of memories created by these records.
    pub(crate) vectors: Vec<WireVector>,
}

/// A memory's vector as it travels with its record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireVector {
    /// The memory id (`Seq` of its `extracted` record).
    pub(crate) id: u64,
    /// FNV-1a 64 of the content it embeds.
    pub(crate) content_hash: u64,
    /// Components.
    pub(crate) vector: Vec<f32>,
}

/// Encodes a message into its envelope.
///
/// # Errors
/// [`Error::Storage`] when postcard fails (it does not for these types).
pub(crate) fn encode(msg: &LogMessage) -> Result<Vec<u8>> {
    let payload = postcard::to_stdvec(msg)
        .map_err(|e| Error::Storage(mnemon::Failure::with_source(format!("encoding a log message: {e}"), e)))?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Decodes a message; `at` is its stream sequence (for the error).
///
/// # Errors
/// [`Error::Corrupted`] (with `seq` = the stream sequence) for a wrong
/// magic, length or checksum, or a payload that does not decode;
/// [`Error::IncompatibleFormat`] for an unknown version.
pub(crate) fn decode(at: u64, bytes: &[u8]) -> Result<LogMessage> {
    let bad = |reason: String| Error::Corrupted { seq: at, reason: format!("log message: {reason}") };
    if bytes.len() < HEADER || bytes.len() > MAX_MESSAGE {
        return Err(bad(format!("{} bytes", bytes.len())));
    }
    if &bytes[..3] != MAGIC {
        return Err(bad("not a mnemon log message".into()));
    }
    if bytes[3] != VERSION {
        return Err(Error::IncompatibleFormat(format!(
            "log message version {} at stream sequence {at}; this build reads version {VERSION}",
            bytes[3]
        )));
    }
    let crc = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if crc32fast::hash(&bytes[HEADER..]) != crc {
        return Err(bad("checksum mismatch".into()));
    }
    let (msg, rest): (LogMessage, &[u8]) =
        postcard::take_from_bytes(&bytes[HEADER..]).map_err(|e| bad(format!("payload: {e}")))?;
    if !rest.is_empty() {
        return Err(bad(format!("{} trailing bytes", rest.len())));
    }
    if let LogMessage::Group(p) | LogMessage::SealedGroup { part: p, .. } = &msg {
        if p.parts == 0 || p.part >= p.parts || p.first < p.group_first || p.records.is_empty() {
            return Err(bad(format!("part {} of {} starting at {}", p.part, p.parts, p.first)));
        }
    }
    Ok(msg)
}

/// Splits a group into encoded messages of at most about `max_bytes` each
/// (a single record larger than that travels alone). Each vector goes with
/// the record that creates its memory.
///
/// # Errors
/// [`Error::Storage`] from encoding; [`Error::invalid`] for an empty group.
pub(crate) fn split(group: &Group<'_>, max_bytes: usize) -> Result<Vec<Vec<u8>>> {
    let Some(&(group_first, _)) = group.records.first() else {
        return Err(Error::invalid("group", "no records"));
    };
    let vector_of = |seq: Seq| group.vectors.iter().find(|(id, _, _)| id.0 == seq);
    let sealed_of = |seq: Seq| group.sealed_vectors.and_then(|s| s.iter().find(|(id, _)| id.0 == seq));
    let vector_bytes = |seq: Seq| match group.sealed_vectors {
        Some(_) => sealed_of(seq).map_or(0, |v| v.1.len() + 16),
        None => vector_of(seq).map_or(0, |v| 4 * v.2.len() + 24),
    };
    // Cut points by estimated size: record bytes + vector bytes + slack.
    let mut cuts: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (i, (seq, bytes)) in group.records.iter().enumerate() {
        let add = bytes.len() + vector_bytes(*seq) + 8;
        if i > start && size + add > max_bytes {
            cuts.push(start..i);
            start = i;
            size = 0;
        }
        size += add;
    }
    cuts.push(start..group.records.len());
    let parts = u32::try_from(cuts.len()).map_err(|_| Error::invalid("group", "too many parts"))?;
    let mut out = Vec::with_capacity(cuts.len());
    for (part, range) in cuts.into_iter().enumerate() {
        let slice = &group.records[range];
        let mut p = GroupPart {
            group_first,
            part: u32::try_from(part).map_err(|_| Error::invalid("group", "too many parts"))?,
            parts,
            first: slice[0].0,
            records: slice.iter().map(|(_, b)| b.clone()).collect(),
            model: group.model_id.to_string(),
            vectors: Vec::new(),
        };
        let msg = if group.sealed_vectors.is_some() {
            let vectors = slice
                .iter()
                .filter_map(|(seq, _)| sealed_of(*seq))
                .map(|(id, v)| SealedVector { id: id.0, value: v.clone() })
                .collect();
            LogMessage::SealedGroup { part: p, vectors }
        } else {
            p.vectors = slice
                .iter()
                .filter_map(|(seq, _)| vector_of(*seq))
                .map(|(id, h, v)| WireVector { id: id.0, content_hash: *h, vector: v.clone() })
                .collect();
            LogMessage::Group(p)
        };
        out.push(encode(&msg)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemon::MemoryId;

    #[test]
    fn round_trip_and_damage() {
        let m = LogMessage::Takeover { daemon: "d1".into(), instance: 7, epoch: 3 };
        let b = encode(&m).unwrap();
        assert_eq!(decode(1, &b).unwrap(), m);
        let mut bad = b.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(matches!(decode(1, &bad), Err(Error::Corrupted { seq: 1, .. })));
        let mut newer = b.clone();
        newer[3] = 9;
        assert!(matches!(decode(1, &newer), Err(Error::IncompatibleFormat(_))));
        assert!(decode(1, b"MN").is_err());
    }

    #[test]
    fn split_keeps_order_and_vectors() {
        let records: Vec<(Seq, Vec<u8>)> = (1..=10).map(|s| (s, vec![s as u8; 100])).collect();
        let vectors = vec![(MemoryId(3), 9, vec![0.5f32; 8]), (MemoryId(9), 1, vec![1.0f32; 8])];
        let g = Group { records: &records, vectors: &vectors, model_id: "m", sealed_vectors: None };
        let parts = split(&g, 350).unwrap();
        assert!(parts.len() > 1);
        let mut seqs = Vec::new();
        let mut vecs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let LogMessage::Group(p) = decode(1, p).unwrap() else { panic!() };
            assert_eq!((p.group_first, p.part as usize, p.parts as usize), (1, i, parts.len()));
            seqs.extend((0..p.records.len() as u64).map(|k| p.first + k));
            vecs.extend(p.vectors.iter().map(|v| v.id));
        }
        assert_eq!(seqs, (1..=10).collect::<Vec<u64>>());
        assert_eq!(vecs, vec![3, 9]);
        assert_eq!(split(&g, 1 << 20).unwrap().len(), 1);
    }

    #[test]
    fn an_encrypted_group_carries_sealed_vectors_only() {
        let records: Vec<(Seq, Vec<u8>)> = (1..=10).map(|s| (s, vec![s as u8; 100])).collect();
        let vectors = vec![(MemoryId(3), 9, vec![0.5f32; 8]), (MemoryId(9), 1, vec![1.0f32; 8])];
        let sealed = vec![(MemoryId(3), vec![3u8; 80]), (MemoryId(9), vec![9u8; 80])];
        let g = Group { records: &records, vectors: &vectors, model_id: "m", sealed_vectors: Some(&sealed) };
        let parts = split(&g, 350).unwrap();
        assert!(parts.len() > 1);
        let mut vecs = Vec::new();
        for p in &parts {
            let LogMessage::SealedGroup { part, vectors } = decode(1, p).unwrap() else { panic!("a plain group") };
            assert!(part.vectors.is_empty(), "plain vectors left the process");
            for v in vectors {
                assert!(part.first <= v.id && v.id < part.first + part.records.len() as u64);
                assert_eq!(v.value, vec![v.id as u8; 80]);
                vecs.push(v.id);
            }
        }
        assert_eq!(vecs, vec![3, 9]);
    }
}
