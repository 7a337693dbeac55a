//! Personal-data redaction on arbitrary UTF-8: never panics, respects the
//! documented length bound, leaves only well-formed placeholders behind, and
//! is idempotent; invisible characters anywhere change nothing but
//! themselves. Checked with the built-in detectors and with one custom
//! pattern added.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mnemon::text::is_invisible;
use mnemon::safety::{Redactor, MAX_GROWTH_PER_SPAN};

const BUILT_IN: [&str; 5] = ["[PHONE]", "[CN_ID]", "[CARD]", "[EMAIL]", "[SSN]"];
const CUSTOM: &str = "[EMPLOYEE_ID]";

static PLAIN: LazyLock<Redactor> = LazyLock::new(Redactor::new);
static WITH_CUSTOM: LazyLock<Redactor> =
    LazyLock::new(|| Redactor::new().with_pattern("EMPLOYEE_ID", r"EMP-[0-9]{3,6}").expect("valid custom pattern"));

/// Occurrences of the placeholders `known` in `s` (they cannot overlap: each
/// holds one `[`, at its start).
fn placeholders(s: &str, known: &[&str]) -> usize {
    known.iter().map(|p| s.matches(p).count()).sum()
}

fn check(r: &Redactor, text: &str, known: &[&str], growth: usize) {
    let spans = r.find(text);
    for s in &spans {
        assert!(s.start < s.end && s.end <= text.len(), "span {s:?} out of range");
        assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end), "span {s:?} splits a char");
        let covered = &text[s.range()];
        assert!(!covered.contains(['[', ']']), "span {s:?} covers a bracket: {covered:?}");
    }
    assert!(spans.windows(2).all(|w| w[0].end <= w[1].start), "spans overlap or are unsorted: {spans:?}");

    let once = r.redact(text);
    assert_eq!(once.total(), spans.len(), "counts disagree with find()");
    assert_eq!(r.max_growth_per_span(), growth);
    assert!(
        once.text.len() <= text.len() + growth * once.total(),
        "{} bytes > {} + {growth} * {}",
        once.text.len(),
        text.len(),
        once.total()
    );
    // Every replaced span left exactly one known placeholder, and nothing
    // that was in the input was turned into or out of a placeholder.
    assert_eq!(
        placeholders(&once.text, known),
        placeholders(text, known) + once.total(),
        "placeholders in {:?} from {text:?}",
        once.text
    );
    if spans.is_empty() {
        assert_eq!(once.text, text, "nothing found but the text changed");
    }

    let twice = r.redact(&once.text);
    assert_eq!(twice.text, once.text, "redaction is not idempotent for {text:?}");
    assert!(twice.is_clean(), "second pass found {:?} in {:?}", twice.counts, once.text);
}

/// Invisible characters change nothing a reader sees: with them removed,
/// the redaction of `text` is the redaction of `text` without them.
fn check_invisible(r: &Redactor, text: &str) {
    let visible = |s: &str| s.chars().filter(|&c| !is_invisible(c)).collect::<String>();
    let plain = visible(text);
    if plain.len() != text.len() {
        let (with, without) = (r.redact(text), r.redact(&plain));
        assert_eq!(visible(&with.text), visible(&without.text), "invisible characters changed {text:?}");
        assert_eq!(with.counts, without.counts);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    check(&PLAIN, text, &BUILT_IN, MAX_GROWTH_PER_SPAN);
    check_invisible(&PLAIN, text);
    let mut all = BUILT_IN.to_vec();
    all.push(CUSTOM);
    check(&WITH_CUSTOM, text, &all, CUSTOM.len());
});
