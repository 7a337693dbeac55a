//! Time expressions in arbitrary queries (`mnemon::recall::query_time`):
//! never panics; every span found is non-empty and named by a phrase that
//! is the query's own text; the union covers every span; proximity is 1
//! inside a span and within 0..=1 anywhere.
//!
//! Input: `[reference: i64 LE seconds since 1970][offset: i16 LE minutes,
//! folded into ±14 h][query bytes]` (lossy UTF-8, so every input is read).
#![no_main]

use chrono::{DateTime, Duration, FixedOffset, Utc};
use libfuzzer_sys::fuzz_target;
use mnemon::recall::query_time;

fuzz_target!(|data: &[u8]| {
    let (secs, minutes, text) = match data {
        [a, b, c, d, e, f, g, h, m0, m1, rest @ ..] => {
            (i64::from_le_bytes([*a, *b, *c, *d, *e, *f, *g, *h]), i16::from_le_bytes([*m0, *m1]), rest)
        }
        _ => (1_680_000_000, 0, data),
    };
    let offset = FixedOffset::east_opt(i32::from(minutes) % (14 * 60) * 60).unwrap_or(FixedOffset::east_opt(0).unwrap());
    let reference = DateTime::<Utc>::from_timestamp(secs, 0).unwrap_or(DateTime::<Utc>::MIN_UTC).with_timezone(&offset);
    let text = String::from_utf8_lossy(text);
    let Some(t) = query_time(&text, reference) else {
        return;
    };
    assert!(!t.spans.is_empty(), "a time without spans for {text:?}");
    for s in &t.spans {
        assert!(s.from < s.to, "empty span {s:?} for {text:?}");
        assert!(!s.phrase.is_empty() && text.contains(s.phrase.as_str()), "phrase {:?} not in {text:?}", s.phrase);
        assert!(t.from <= s.from && s.to <= t.to, "the union {t:?} misses {s:?}");
        assert_eq!(t.proximity(s.from), 1.0);
    }
    for probe in [t.to, t.from - Duration::days(400), DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
        let p = t.proximity(probe);
        assert!((0.0..=1.0).contains(&p), "proximity {p} for {probe}");
    }
});
