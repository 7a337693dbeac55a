//! Time expressions in arbitrary queries (`mnemon::recall::query_time`):
//! never panics; a span found is non-empty, named by a non-empty phrase,
//! and its proximity is 1 inside and within 0..=1 anywhere.
//!
//! Input: `[reference: i64 seconds since 1970, little-endian][query bytes]`
//! (lossy UTF-8, so every input is read).
#![no_main]

use chrono::{DateTime, Duration, Utc};
use libfuzzer_sys::fuzz_target;
use mnemon::recall::query_time;

fuzz_target!(|data: &[u8]| {
    let (secs, text) = match data {
        [a, b, c, d, e, f, g, h, rest @ ..] => (i64::from_le_bytes([*a, *b, *c, *d, *e, *f, *g, *h]), rest),
        _ => (1_680_000_000, data),
    };
    let reference = DateTime::<Utc>::from_timestamp(secs, 0).unwrap_or(DateTime::<Utc>::MIN_UTC);
    let text = String::from_utf8_lossy(text);
    let Some(t) = query_time(&text, reference) else {
        return;
    };
    assert!(t.from < t.to, "empty span {t:?} for {text:?}");
    assert!(!t.phrase.is_empty(), "span without a phrase for {text:?}");
    assert_eq!(t.proximity(t.from), 1.0);
    for probe in [reference, t.to, t.from - Duration::days(400), DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
        let p = t.proximity(probe);
        assert!((0.0..=1.0).contains(&p), "proximity {p} for {probe}");
    }
});
