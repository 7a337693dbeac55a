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

#[path = "record_input.rs"]
mod record_input;

use libfuzzer_sys::fuzz_target;
use mnemon::crypt::{sealed_head, shredded_record, SEALED_VERSION};
use mnemon::event::decode_record;
use mnemon::{Error, Namespace};

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
    let Some((seq, record)) = record_input::split(data) else {
        return;
    };
    check(seq, record);
    if let Some(fixed) = record_input::with_checksum(record, Some(SEALED_VERSION)) {
        check(seq, &fixed);
    }
});
