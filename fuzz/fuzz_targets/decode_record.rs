//! `decode_record` on arbitrary bytes: never panics, and whatever decodes
//! re-encodes to a record that decodes to the same event.
//!
//! Input: `[seq: u64 little-endian][record bytes]`. Each input is decoded
//! twice: as given, and with the checksum in bytes 1..5 of the record
//! recomputed over the payload, so that mutations reach the payload decoder
//! instead of stopping at the checksum check.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemon::{event::decode_record, event::encode_record, event::SEALED_VERSION, Error};

/// Version byte + CRC-32 of the payload.
const HEADER_LEN: usize = 5;

fn check(seq: u64, record: &[u8]) {
    let event = match decode_record(seq, record) {
        Ok(event) => event,
        Err(Error::Corrupted { seq: s, .. }) => {
            assert_eq!(s, seq, "a corruption error names the record's key");
            return;
        }
        Err(Error::KeyRequired(_)) => {
            assert_eq!(record[0], SEALED_VERSION, "only a sealed record asks for the store's key");
            return;
        }
        Err(Error::IncompatibleFormat(_)) => {
            assert!(
                record[0] > mnemon::event::FORMAT_VERSION && record[0] != SEALED_VERSION,
                "only a newer version byte is incompatible"
            );
            return;
        }
        Err(e) => panic!("decode_record returned an unexpected error kind: {e:?}"),
    };
    assert_eq!(event.seq, seq);
    let encoded = encode_record(&event).expect("a decoded event re-encodes");
    let again = decode_record(seq, &encoded).expect("a re-encoded event decodes");
    assert_eq!(again, event, "round trip changed the event");
    // Re-encoding is a fixed point (postcard may accept non-canonical input,
    // but its own output is canonical).
    assert_eq!(encode_record(&again).expect("re-encodes"), encoded);
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (seq_bytes, record) = data.split_at(8);
    let seq = u64::from_le_bytes(seq_bytes.try_into().unwrap_or([0; 8]));
    check(seq, record);
    if record.len() >= HEADER_LEN {
        let mut fixed = record.to_vec();
        let crc = crc32(&fixed[HEADER_LEN..]);
        fixed[1..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        check(seq, &fixed);
    }
});

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
