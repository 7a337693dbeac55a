//! The input layout shared by the record decoders' targets
//! (`decode_record`, `sealed_record`): `[seq: u64 little-endian][record
//! bytes]`, and the record again with its header checksum recomputed so
//! that mutations reach the payload decoder instead of stopping at the
//! checksum check.

/// Version byte + CRC-32 of the payload.
const HEADER_LEN: usize = 5;

/// The key and the record bytes of an input; `None` under 8 bytes.
pub fn split(data: &[u8]) -> Option<(u64, &[u8])> {
    if data.len() < 8 {
        return None;
    }
    let (seq_bytes, record) = data.split_at(8);
    Some((u64::from_le_bytes(seq_bytes.try_into().ok()?), record))
}

/// `record` with its version byte set to `version` (when given) and its
/// checksum recomputed over the payload; `None` for a record shorter than
/// its header.
pub fn with_checksum(record: &[u8], version: Option<u8>) -> Option<Vec<u8>> {
    if record.len() < HEADER_LEN {
        return None;
    }
    let mut fixed = record.to_vec();
    if let Some(v) = version {
        fixed[0] = v;
    }
    let crc = crc32(&fixed[HEADER_LEN..]);
    fixed[1..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    Some(fixed)
}

/// CRC-32 (IEEE, reflected), as the record header stores it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}
