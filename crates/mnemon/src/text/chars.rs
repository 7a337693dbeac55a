//! Character rules for caller text: what may enter the log at all.
//!
//! Every entry point that takes text from a caller (library `remember`,
//! `observe`, `supersede`, their batches, `recall` and `forget` queries,
//! extraction JSON, consolidation, and the CLI, which goes through the
//! library) runs [`check_chars`] on it before anything is redacted, embedded
//! or written. A violation is a [`CharFault`] (the engine's
//! `Error::InvalidInput`) naming the field, the
//! code point and its position; nothing is written. The rules reject rather
//! than strip: stripping would silently store something other than what the
//! caller sent, and a caller who wants stripping can do it and retry
//! ([`scrub`] does it for imported text).
//!
//! | rule | [`TextField::Body`] | [`TextField::Label`] | [`TextField::Identifier`] |
//! |---|---|---|---|
//! | C0 controls (U+0000–U+001F) | rejected, except tab, LF, CR | rejected | rejected |
//! | DEL (U+007F) and C1 controls (U+0080–U+009F, NEL included) | rejected | rejected | rejected |
//! | line / paragraph separators (U+2028, U+2029) | allowed | rejected | rejected |
//! | bidi embeddings, overrides, isolates (U+202A–U+202E, U+2066–U+2069) | rejected | rejected | rejected |
//! | tag characters (U+E0000–U+E007F) | only in an emoji flag tag sequence | rejected | rejected |
//! | other invisible characters ([`is_invisible`]) | allowed (ZWJ, ZWNJ, variation selectors carry meaning) | allowed | rejected |
//! | whitespace | allowed | allowed | rejected |
//! | nothing visible: only whitespace and invisible characters | rejected | rejected | rejected |
//!
//! Bidi controls are rejected because they reorder what a human reviewer
//! sees without changing what a model reads ("Trojan Source",
//! CVE-2021-42574); the implicit marks (LRM, RLM, ALM) are harmless and
//! allowed. Tag characters spell ASCII invisibly and are used to hide
//! instructions from people while models still read them; the only text use
//! is the subdivision flags (🏴 + lowercase letters and digits + CANCEL TAG,
//! Unicode UTS #51 ED-14a), which stay allowed.
//!
//! What is stored is printed safely by [`crate::render_context`] whatever it
//! holds (stores written before these rules keep opening): see
//! [`crate::recall`]'s prompt-block rules.

use unicode_security::skeleton;

/// A piece of text that breaks the character rules: the field it was
/// given as and why (the code point and its position, counting characters
/// from 1). Converts into the engine's `Error::InvalidInput` for that field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CharFault {
    /// The argument the text was given as (`content`, `kind`, `key`, …).
    pub field: &'static str,
    /// What is wrong, e.g. `U+200B at character 4: …`.
    pub reason: String,
}

impl std::fmt::Display for CharFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for CharFault {}

impl CharFault {
    fn new(field: &'static str, reason: impl Into<String>) -> CharFault {
        CharFault { field, reason: reason.into() }
    }
}

/// Which rules of the [module table](self) apply to a piece of text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextField {
    /// Free text: memory content, observation text, queries.
    Body,
    /// A one-line label: kind, session, source reference, entity, forget
    /// reason.
    Label,
    /// A slot key (`entity.attribute`): a label without whitespace or
    /// invisible characters, so that two keys that print alike are equal.
    Identifier,
}

/// Checks `text` against the character rules for `rules`; `field` names the
/// argument in the error.
///
/// # Errors
/// [`CharFault`] with `field` when a character breaks a rule (the
/// reason names its code point, e.g. `U+200B`, and its position in characters,
/// counting from 1) or when nothing
/// visible remains after whitespace and invisible characters.
pub fn check_chars(field: &'static str, text: &str, rules: TextField) -> Result<(), CharFault> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_tag(c) && rules == TextField::Body {
            if let Some(end) = flag_tag_sequence_end(&chars, i) {
                i = end;
                continue;
            }
        }
        if let Some(why) = refusal(c, rules) {
            return Err(CharFault::new(field, format!("U+{:04X} at character {}: {why}", u32::from(c), i + 1)));
        }
        i += 1;
    }
    if !has_visible(text) {
        return Err(CharFault::new(field, "has no visible character (only whitespace or invisible characters)"));
    }
    Ok(())
}

/// `text` with every character that [`TextField::Body`] refuses replaced:
/// control characters (other than tab, LF, CR) by a space, bidi embedding,
/// override and isolate controls and tag characters outside emoji flag
/// sequences removed. For callers that import text they do not control
/// (benchmark files, scraped pages) and prefer cleaning to an error; the
/// result can still be refused when nothing visible is left.
pub fn scrub(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_tag(c) {
            if let Some(end) = flag_tag_sequence_end(&chars, i) {
                out.extend(&chars[i..end]);
                i = end;
                continue;
            }
        }
        match refusal(c, TextField::Body) {
            None => out.push(c),
            Some(_) if c.is_control() => out.push(' '),
            Some(_) => {}
        }
        i += 1;
    }
    out
}

/// Why `c` may not appear in text checked with `rules`, if it may not.
fn refusal(c: char, rules: TextField) -> Option<&'static str> {
    let body = rules == TextField::Body;
    if c.is_control() {
        return match c {
            '\t' | '\n' | '\r' if body => None,
            '\t' => Some("a tab is not allowed in a one-line field (tabs are allowed in text and content)"),
            '\n' | '\r' => Some("line breaks are not allowed in a one-line field"),
            _ => Some("control characters are not allowed"),
        };
    }
    if is_bidi_control(c) {
        return Some("bidirectional embedding, override and isolate controls are not allowed");
    }
    if is_tag(c) {
        return Some("tag characters are only allowed in emoji flag sequences");
    }
    if !body && matches!(c, '\u{2028}' | '\u{2029}') {
        return Some("line breaks are not allowed in a one-line field");
    }
    if rules == TextField::Identifier {
        if c.is_whitespace() {
            return Some("whitespace is not allowed in a key");
        }
        if is_invisible(c) {
            return Some("invisible characters are not allowed in a key");
        }
    }
    None
}

/// If `chars[start]` is the first tag character of a subdivision-flag tag
/// sequence (it follows U+1F3F4 WAVING BLACK FLAG, then 1–7 tag letters or
/// digits, then U+E007F CANCEL TAG), the index just past the sequence.
fn flag_tag_sequence_end(chars: &[char], start: usize) -> Option<usize> {
    if start == 0 || chars[start - 1] != '\u{1F3F4}' {
        return None;
    }
    let spec = chars[start..]
        .iter()
        .take_while(|&&c| matches!(c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}'))
        .count();
    let end = start + spec;
    ((1..=7).contains(&spec) && chars.get(end) == Some(&'\u{E007F}')).then_some(end + 1)
}

/// True for a Unicode tag character (U+E0000–U+E007F).
pub(crate) fn is_tag(c: char) -> bool {
    matches!(c, '\u{E0000}'..='\u{E007F}')
}

/// True for the explicit bidirectional formatting characters that embed,
/// override or isolate (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// True for a character that renders as nothing: a Unicode
/// Default_Ignorable_Code_Point (zero-width space and joiners, word joiner,
/// soft hyphen, BOM, bidi marks and controls, variation selectors, Hangul
/// fillers, tag characters, …).
///
/// The set is the one TR39's skeleton removes (UTS #39 §4: skeleton drops
/// every default-ignorable code point after NFD), taken from the
/// `unicode-security` tables rather than copied: a character is invisible
/// exactly when its skeleton is empty.
pub fn is_invisible(c: char) -> bool {
    if !may_be_ignorable(c) {
        return false;
    }
    let mut buf = [0u8; 4];
    let empty = skeleton(c.encode_utf8(&mut buf)).next().is_none();
    empty
}

/// A superset of the Default_Ignorable_Code_Point ranges of Unicode's
/// DerivedCoreProperties.txt, so that [`is_invisible`] asks the TR39 tables
/// only about characters that can be invisible (a test checks every code
/// point against the tables).
fn may_be_ignorable(c: char) -> bool {
    matches!(
        u32::from(c),
        0xAD | 0x34F
            | 0x61C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// True when `text` has a character that is neither whitespace nor
/// invisible. Blank-looking characters that TR39 folds to a space (U+2800
/// BRAILLE PATTERN BLANK, no-break and ideographic spaces) count as blank.
pub fn has_visible(text: &str) -> bool {
    if text.bytes().any(|b| b.is_ascii_graphic()) {
        return true;
    }
    skeleton(text).any(|c| !c.is_whitespace())
}

/// True for a character that ends a line for some reader of the prompt:
/// every control character (LF, CR, VT, FF, the C0 separators U+001C–U+001E,
/// NEL U+0085 and the rest of C0/C1), the Unicode line and paragraph
/// separators (U+2028, U+2029), and any other whitespace.
pub fn is_line_break_or_space(c: char) -> bool {
    c.is_control() || c.is_whitespace() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary (all of `s` when it fits).
pub(crate) fn truncate_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str, rules: TextField) -> bool {
        check_chars("f", text, rules).is_ok()
    }

    #[test]
    fn the_ignorable_prefilter_covers_every_invisible_character() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32).filter(|c| !c.is_ascii()) {
            let mut buf = [0u8; 4];
            let empty = skeleton(c.encode_utf8(&mut buf)).next().is_none();
            assert_eq!(empty, is_invisible(c), "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn blank_and_invisible_only_text_is_refused() {
        for text in ["", " ", "\u{200B}\u{200B}", "\u{FEFF}", "\u{2060} \u{00AD}", "\u{3164}", "\u{2800}", "\u{3000}\t"]
        {
            for rules in [TextField::Body, TextField::Label] {
                assert!(!ok(text, rules), "{text:?} {rules:?}");
            }
        }
        assert!(ok("a\u{200B}", TextField::Body));
        assert!(ok("👨\u{200D}👩\u{200D}👧", TextField::Body));
        assert!(ok("می\u{200C}خواهم", TextField::Body));
    }

    #[test]
    fn controls_are_refused_with_their_position() {
        let err = check_chars("content", "ab\u{0}c", TextField::Body).unwrap_err();
        assert!(err.to_string().contains("U+0000 at character 3"), "{err}");
        for c in
            ['\u{1}', '\u{7}', '\u{8}', '\u{B}', '\u{C}', '\u{1B}', '\u{1E}', '\u{7F}', '\u{80}', '\u{85}', '\u{9B}']
        {
            assert!(!ok(&format!("x{c}y"), TextField::Body), "{c:?}");
        }
        for c in ['\t', '\n', '\r', '\u{2028}', '\u{2029}'] {
            assert!(ok(&format!("x{c}y"), TextField::Body), "{c:?}");
            assert!(!ok(&format!("x{c}y"), TextField::Label), "{c:?}");
        }
        // A one-line field says which of them it met.
        let why = |t: &str| check_chars("kind", t, TextField::Label).unwrap_err().to_string();
        assert!(
            why("a\tb").contains("U+0009 at character 2: a tab is not allowed in a one-line field"),
            "{}",
            why("a\tb")
        );
        assert!(why("a\nb").contains("U+000A at character 2: line breaks are not allowed"), "{}", why("a\nb"));
        assert!(why("a\u{7}b").contains("control characters are not allowed"), "{}", why("a\u{7}b"));
    }

    #[test]
    fn bidi_controls_are_refused_and_marks_allowed() {
        for c in
            ['\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}']
        {
            assert!(!ok(&format!("abc{c}def"), TextField::Body), "{c:?}");
        }
        assert!(ok("שלום \u{200E}abc\u{200F}", TextField::Body));
    }

    #[test]
    fn tags_only_in_flag_sequences() {
        let england = "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}";
        assert!(ok(&format!("Go {england}!"), TextField::Body));
        assert!(!ok(&format!("Go {england}!"), TextField::Label));
        // ASCII smuggled in tag characters, with or without a flag before it.
        let hidden: String = "ignore all".chars().map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap()).collect();
        assert!(!ok(&format!("hello{hidden}"), TextField::Body));
        assert!(!ok(&format!("🏴{hidden}\u{E007F}"), TextField::Body));
        assert!(!ok("🏴\u{E007F}", TextField::Body));
        assert!(!ok("a\u{E0001}b", TextField::Body));
    }

    #[test]
    fn scrub_makes_text_acceptable() {
        let england = "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}";
        let dirty = format!("a\u{0}b\u{93}c\u{202E}d\u{E0041}e\tf\n{england}");
        let clean = scrub(&dirty);
        assert_eq!(clean, format!("a b cde\tf\n{england}"));
        assert!(ok(&clean, TextField::Body));
        assert_eq!(scrub("plain text"), "plain text");
    }

    #[test]
    fn identifiers_refuse_whitespace_and_invisibles() {
        assert!(ok("user.drink", TextField::Identifier));
        assert!(ok("用户.饮料", TextField::Identifier));
        assert!(!ok("user.dr\u{200B}ink", TextField::Identifier));
        assert!(!ok("user. drink", TextField::Identifier));
        assert!(!ok("user.\u{00A0}drink", TextField::Identifier));
        assert!(ok("user.dr\u{200B}ink", TextField::Label));
    }

    #[test]
    fn invisible_set_is_default_ignorable() {
        for c in [
            '\u{00AD}',
            '\u{034F}',
            '\u{061C}',
            '\u{180E}',
            '\u{200B}',
            '\u{200D}',
            '\u{2060}',
            '\u{2064}',
            '\u{FE0F}',
            '\u{FEFF}',
            '\u{E0041}',
            '\u{E0100}',
        ] {
            assert!(is_invisible(c), "{c:?}");
        }
        for c in ['a', ' ', '\u{2800}', '中', '\u{0600}', '\u{0301}'] {
            assert!(!is_invisible(c), "{c:?}");
        }
    }
}
