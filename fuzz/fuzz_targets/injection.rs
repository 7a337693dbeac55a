//! Injected-instruction scoring on arbitrary text: never panics, the score
//! is a number in 0..=1, and `check` agrees with `score` and the threshold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemon::safety::{InjectionDetector, DEFAULT_THRESHOLD};

fuzz_target!(|data: &[u8]| {
    // The first 4 bytes pick a threshold; the rest is the text (lossy UTF-8
    // so every input is scored).
    let (threshold, text) = match data {
        [a, b, c, d, rest @ ..] => (f32::from_le_bytes([*a, *b, *c, *d]), rest),
        _ => (DEFAULT_THRESHOLD, data),
    };
    let text = String::from_utf8_lossy(text);

    let default = InjectionDetector::new();
    let finding = default.score(&text);
    assert!((0.0..=1.0).contains(&finding.score), "score {} out of range", finding.score);
    assert_eq!(finding.matched.is_empty(), finding.score == 0.0, "score {} with {:?}", finding.score, finding.matched);
    let names: Vec<&str> = InjectionDetector::patterns().map(|(n, _)| n).collect();
    assert!(finding.matched.iter().all(|m| names.contains(m)), "unknown pattern in {:?}", finding.matched);

    for d in [default, InjectionDetector::new().with_threshold(threshold)] {
        let t = d.threshold();
        assert!((0.0..=1.0).contains(&t), "threshold {t} out of range");
        match d.check(&text) {
            Some(f) => {
                assert_eq!(f, finding, "check and score disagree");
                assert!(f.score >= t && !f.matched.is_empty());
            }
            None => assert!(finding.matched.is_empty() || finding.score < t),
        }
    }
});
