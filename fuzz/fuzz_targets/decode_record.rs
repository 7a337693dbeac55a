//! `decode_record` on arbitrary bytes: never panics, and whatever decodes
//! re-encodes to a record that decodes to the same event.
//!
//! Input: `[seq: u64 little-endian][record bytes]`. Each input is decoded
//! twice: as given, and with the checksum in bytes 1..5 of the record
//! recomputed over the payload, so that mutations reach the payload decoder
//! instead of stopping at the checksum check.
#![no_main]

#[path = "record_input.rs"]
mod record_input;

use libfuzzer_sys::fuzz_target;
use mnemon::{event::decode_record, event::encode_record, event::SEALED_VERSION, Error};

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
    let Some((seq, record)) = record_input::split(data) else {
        return;
    };
    check(seq, record);
    if let Some(fixed) = record_input::with_checksum(record, None) {
        check(seq, &fixed);
    }
});
