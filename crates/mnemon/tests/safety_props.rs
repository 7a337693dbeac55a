//! Property tests of the safety stage: redaction never panics, respects its
//! length bound, is idempotent, and reports well-formed spans; injection
//! scoring never panics and stays in range.

use mnemon::safety::{InjectionDetector, PiiKind, Redactor, MAX_GROWTH_PER_SPAN};
use mnemon::text::is_invisible;
use proptest::prelude::*;

/// Fragments that exercise the detectors and their boundaries.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("13812345678".to_owned()),
        Just("138 1234 5678".to_owned()),
        Just("+86".to_owned()),
        Just("0086".to_owned()),
        Just("11010519491231002X".to_owned()),
        Just("6222020200112233446".to_owned()),
        Just("4111 1111 1111 1111".to_owned()),
        Just("jane.roe@example.com".to_owned()),
        Just("@".to_owned()),
        Just("+1 415 555 0100".to_owned()),
        Just("(415) 555-0100".to_owned()),
        Just("010-12345678".to_owned()),
        Just("07700 900456".to_owned()),
        Just("+44 (0)20 7946 0958".to_owned()),
        Just("01 23 45 67 89".to_owned()),
        Just("03-1234-5678".to_owned()),
        Just("+100 000 000".to_owned()),
        Just("2023-11-05".to_owned()),
        Just("978-3-16-148410-0".to_owned()),
        Just("Order #".to_owned()),
        Just("元".to_owned()),
        Just("[PHONE]".to_owned()),
        Just("[EMAIL]".to_owned()),
        Just("１３８".to_owned()),
        Just("手机号".to_owned()),
        Just("，".to_owned()),
        "[0-9]{1,20}",
        "[ .\\-()+xX@_a-z]{1,3}",
        "[0-9 .\\-()+]{1,12}",
        any::<char>().prop_map(String::from),
    ]
}

/// Invisible characters of every class: zero-width space, non-joiner and
/// joiner, word joiner, invisible times, soft hyphen, BOM, Mongolian vowel
/// separator, a variation selector, combining grapheme joiner, LRM, a tag.
const INVISIBLE: [char; 12] = [
    '\u{200B}',
    '\u{200C}',
    '\u{200D}',
    '\u{2060}',
    '\u{2062}',
    '\u{00AD}',
    '\u{FEFF}',
    '\u{180E}',
    '\u{FE0F}',
    '\u{034F}',
    '\u{200E}',
    '\u{E0020}',
];

fn mixed_text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..12).prop_map(|v| v.concat())
}

fn check_redaction(r: &Redactor, text: &str) -> Result<(), TestCaseError> {
    let spans = r.find(text);
    for s in &spans {
        prop_assert!(s.start < s.end && s.end <= text.len());
        prop_assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
    }
    prop_assert!(spans.windows(2).all(|w| w[0].end <= w[1].start));

    let once = r.redact(text);
    prop_assert_eq!(once.total(), spans.len());
    prop_assert!(
        once.text.len() <= text.len() + r.max_growth_per_span() * once.total(),
        "{} > {} + {} * {}",
        once.text.len(),
        text.len(),
        r.max_growth_per_span(),
        once.total()
    );

    let twice = r.redact(&once.text);
    prop_assert_eq!(&twice.text, &once.text);
    prop_assert!(twice.is_clean(), "second pass found {:?} in {:?}", twice.counts, once.text);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn redact_arbitrary_unicode(text in any::<String>()) {
        let r = Redactor::new();
        check_redaction(&r, &text)?;
        prop_assert!(r.redact(&text).text.len() <= text.len() + MAX_GROWTH_PER_SPAN * r.find(&text).len());
    }

    #[test]
    fn redact_mixed_fragments(text in mixed_text()) {
        check_redaction(&Redactor::new(), &text)?;
    }

    #[test]
    fn redact_with_custom_pattern(text in mixed_text()) {
        let r = Redactor::new()
            .with_pattern("EMPLOYEE_NUMBER_WITH_LONG_LABEL", "E[0-9]")
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_redaction(&r, &text)?;
    }

    #[test]
    fn known_values_never_survive(prefix in "[\\p{Han}a-z ,.，。:]{0,6}", suffix in "[\\p{Han}a-z ,，。:]{0,6}") {
        let r = Redactor::new();
        for (value, kind) in [
            ("13812345678", PiiKind::CnMobile),
            ("11010519491231002X", PiiKind::CnId),
            ("6222020200112233446", PiiKind::BankCard),
            ("jane.roe@example.com", PiiKind::Email),
            ("+1 415 555 0100", PiiKind::Phone),
            ("07700 900456", PiiKind::Phone),
        ] {
            // Letters glued to a number or an address legitimately block it.
            let glued = |s: &str, at_end: bool| {
                let c = if at_end { s.chars().last() } else { s.chars().next() };
                c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' && kind == PiiKind::Email)
            };
            if glued(&prefix, true) || glued(&suffix, false) {
                continue;
            }
            // For phones, a unit of money or magnitude right after makes an
            // amount (`…元`, `…万`), and a word right before may label an
            // identifier (`ref 0770…`).
            let phone = matches!(kind, PiiKind::Phone | PiiKind::CnMobile);
            let unit_after = suffix.trim_start().starts_with(['元', '円', '圆', '圓', '块', '塊', '万', '萬', '亿', '億']);
            let word_before =
                prefix.trim_end_matches([' ', ':', '.', '，', ',', '。']).ends_with(|c: char| c.is_ascii_alphabetic());
            if phone && (unit_after || word_before) {
                continue;
            }
            let text = format!("{prefix}{value}{suffix}");
            let out = r.redact(&text);
            prop_assert!(!out.text.contains(value), "{:?} -> {:?}", text, out.text);
            prop_assert!(r.find(&text).iter().any(|s| s.kind == kind && &text[s.range()] == value));
        }
    }

    /// Invisible characters inserted anywhere change nothing a reader sees:
    /// with them removed, the redacted text is the redacted text of the
    /// original (so a value split by one is replaced whole), and the counts
    /// are the same.
    #[test]
    fn invisible_characters_never_hide_a_value(
        text in mixed_text(),
        inserts in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(INVISIBLE.to_vec())), 1..6),
    ) {
        let r = Redactor::new();
        let mut chars: Vec<char> = text.chars().collect();
        for (at, c) in inserts {
            let i = at.index(chars.len() + 1);
            chars.insert(i, c);
        }
        let hidden: String = chars.into_iter().collect();
        let visible = |s: &str| s.chars().filter(|&c| !is_invisible(c)).collect::<String>();
        let (plain, with) = (r.redact(&visible(&text)), r.redact(&hidden));
        prop_assert_eq!(visible(&with.text), visible(&plain.text), "{:?}", hidden);
        prop_assert_eq!(with.counts, plain.counts);
        check_redaction(&r, &hidden)?;
    }

    #[test]
    fn injection_score_in_range(text in any::<String>()) {
        let f = InjectionDetector::new().score(&text);
        prop_assert!((0.0..=1.0).contains(&f.score));
        let _ = InjectionDetector::new().check(&text);
    }
}
