//! The sealed-record decoder (`mnemon::crypt::sealed_head` and
//! `mnemon::crypt::shredded_record`, which read the records of an
//! encrypted store, a backup of one, or an export, without its key) on
//! arbitrary bytes: never panics, every error is a corruption naming the
//! record's key, and whatever reads as a shredded record is a plain record
//! that decodes to an event of the same position and namespace (in its
//! NFKC form, as every namespace read from a record).
//!
//! Input: `[seq: u64 little-endian][record bytes]`. Each input is read
//! twice: as given, and as a sealed record (version byte 3) with the
//! checksum in bytes 1..5 recomputed over the payload, so that mutations
//! reach the payload decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemon::crypt::{sealed_head, shredded_record, SEALED_VERSION};
use mnemon::event::decode_record;
use mnemon::{Error, Namespace};

/// Version byte + CRC-32 of the payload.
const HEADER_LEN: usize = 5;

fn check(seq: u64, record: &[u8]) {
    let head = match sealed_head(seq, record) {
        Ok(head) => head,
        Err(Error::Corrupted { seq: s, .. }) => {
            assert_eq!(s, seq, "a corruption error names the record's key");
            assert!(shredded_record(seq, record).is_err(), "what has no head has no shredded reading");
            return;
        }
        Err(e) => panic!("sealed_head returned an unexpected error kind: {e:?}"),
    };
    assert_eq!(record[0], SEALED_VERSION);
    match shredded_record(seq, record) {
        Ok(plain) => {
            let event = decode_record(seq, &plain).expect("a shredded reading is a plain record");
            assert_eq!(event.seq, seq);
            // Namespaces read from records are taken in their NFKC form,
            // sealed or plain.
            let ns = Namespace::new(head.ns).expect("the shredded reading's namespace is valid");
            assert_eq!(event.ns, ns, "the shredded reading keeps the namespace");
        }
        Err(Error::Corrupted { seq: s, .. }) => assert_eq!(s, seq, "a corruption error names the record's key"),
        Err(e) => panic!("shredded_record returned an unexpected error kind: {e:?}"),
    }
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
        fixed[0] = SEALED_VERSION;
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
