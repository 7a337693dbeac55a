//! The evaluation vector-cache decoder on arbitrary bytes: never panics,
//! decodes a prefix of the input, and re-encoding what it decoded gives
//! back exactly that prefix.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemon_eval::{encode_vector_record, parse_vector_records};

fuzz_target!(|data: &[u8]| {
    let (records, len) = parse_vector_records(data);
    assert!(len <= data.len());
    let mut again = Vec::with_capacity(len);
    for (key, v) in &records {
        assert!(key.0 <= 1 && !v.is_empty() && v.iter().all(|x| x.is_finite()));
        again.extend_from_slice(&encode_vector_record(key, v));
    }
    assert_eq!(&again[..], &data[..len], "decode then encode is not the identity on the valid prefix");
});
