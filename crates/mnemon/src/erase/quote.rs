//! Cuts verbatim copies of forgotten text out of a forget's reason and
//! requester.
//!
//! A `Forgotten` event keeps its reason and requester for good: compaction
//! replaces erased payloads by tombstones but keeps the erasure requests, so
//! that an audit can say who asked and why. A reason that quotes what it
//! forgets ("remove 'I was treated for depression in 2019'") would carry
//! the text past compaction, and the erasure scan would find it there. The
//! writer therefore replaces, before the event is written, every span of the
//! reason (and requester) that copies a forgotten text verbatim by
//! [`ERASED_MARK`].
//!
//! What counts as a copy, in bytes of UTF-8: the whole text when it is at
//! least [`MIN_TEXT_BYTES`] long (the erasure scanner's own floor), and any
//! run of at least [`MIN_QUOTE_BYTES`] bytes of it, compared as written and
//! again after folding both sides (NFKC, lower case, only letters and
//! digits kept), so a copy in other case, in full-width forms, with other
//! spacing or punctuation, or with zero-width characters or spaces between
//! its letters is cut too. That is stricter than
//! the scanner, which finds copies of 47 bytes or more of a long text
//! (32-byte windows every 16 bytes), so a reason this leaves alone is never
//! a scan match. Shorter fragments, paraphrase and translation are not
//! copies; a reason should name ids, not content.

use std::collections::HashMap;

use super::MIN_TEXT_BYTES;

/// Shortest run, in bytes, of a longer forgotten text that is cut out of a
/// reason: 16, half the erasure scanner's 32-byte window, so every copy the
/// scanner could find (47 bytes or more) is cut with room to spare, while a
/// common word or two shared by reason and text is not.
pub(crate) const MIN_QUOTE_BYTES: usize = 16;

/// What replaces a cut span.
pub(crate) const ERASED_MARK: &str = "[erased]";

/// Which bytes of `label` lie in a verbatim copy of one of `texts` (the
/// whole text when at least [`MIN_TEXT_BYTES`] long, or a run of at least
/// [`MIN_QUOTE_BYTES`] bytes of a longer one).
fn copies<'a>(label: &str, texts: impl IntoIterator<Item = &'a str>) -> Vec<bool> {
    let l = label.as_bytes();
    let mut covered = vec![false; l.len()];
    // foldhash: one lookup per byte of every forgotten text, so SipHash
    // would dominate a forget of a whole namespace.
    let mut windows: HashMap<&[u8], Vec<usize>, foldhash::fast::RandomState> = HashMap::default();
    if l.len() >= MIN_QUOTE_BYTES {
        for (start, w) in l.windows(MIN_QUOTE_BYTES).enumerate() {
            windows.entry(w).or_default().push(start);
        }
    }
    for t in texts {
        let tb = t.as_bytes();
        if tb.len() < MIN_TEXT_BYTES {
            continue;
        }
        if tb.len() < MIN_QUOTE_BYTES {
            for (start, _) in label.match_indices(t) {
                covered[start..start + tb.len()].iter_mut().for_each(|c| *c = true);
            }
            continue;
        }
        if windows.is_empty() {
            continue;
        }
        for w in tb.windows(MIN_QUOTE_BYTES) {
            if let Some(starts) = windows.get(w) {
                for &s in starts {
                    covered[s..s + MIN_QUOTE_BYTES].iter_mut().for_each(|c| *c = true);
                }
            }
        }
    }
    covered
}

/// `text` folded as [`fold_mapped`] folds it, without the byte map.
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        fold_char(c, &mut out);
    }
    out
}

/// Appends `c` folded: NFKC, lower case, and only letters and digits kept
/// (spaces, punctuation, apostrophes of any shape and invisible characters
/// go), so a copy with other spacing or punctuation, or with its
/// characters spread apart, folds to the same text.
fn fold_char(c: char, out: &mut String) {
    use unicode_normalization::UnicodeNormalization;
    if crate::text::is_invisible(c) {
        return;
    }
    for n in std::iter::once(c).nfkc() {
        out.extend(n.to_lowercase().filter(|l| l.is_alphanumeric()));
    }
}

/// `text` folded for matching copies written another way ([`fold_char`]),
/// and for each byte of the result the byte range of the character of
/// `text` it came from. Characters that fold to nothing (spaces,
/// punctuation, invisible ones) have no byte; [`cut_quotes`] covers those
/// that lie inside a folded run.
fn fold_mapped(text: &str) -> (String, Vec<(usize, usize)>) {
    let mut out = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    for (s, c) in text.char_indices() {
        fold_char(c, &mut out);
        origin.resize(out.len(), (s, s + c.len_utf8()));
    }
    (out, origin)
}

/// `label` with every verbatim copy of any of `texts` replaced by
/// [`ERASED_MARK`] (adjacent or overlapping copies become one mark), and
/// the number of marks; a copy in other case, compatibility forms, other
/// spacing or punctuation, or with invisible characters inside counts
/// too. Cost, twice (as written, then
/// folded): one hash lookup per byte of each text longer than
/// [`MIN_QUOTE_BYTES`] when the label is at least that long, and one
/// substring search per shorter text; plus one NFKC fold of every text.
/// Nothing for labels under [`MIN_TEXT_BYTES`].
pub(crate) fn cut_quotes<'a>(label: &str, texts: impl IntoIterator<Item = &'a str>) -> (String, usize) {
    let l = label.as_bytes();
    if l.len() < MIN_TEXT_BYTES {
        return (label.to_string(), 0);
    }
    let texts: Vec<&str> = texts.into_iter().collect();
    let mut covered = copies(label, texts.iter().copied());
    // A copy written another way: in other case, in full-width or other
    // compatibility forms, with other spacing or punctuation, or with
    // invisible characters between its letters. Both sides are folded
    // ([`fold_char`]: letters and digits only) and a folded copy cuts the
    // characters it came from, what the fold dropped between them included.
    let (folded, origin) = fold_mapped(label);
    let folded_texts: Vec<String> = texts.iter().map(|t| fold(t)).collect();
    let mut folded_hits = vec![false; l.len()];
    let hits = copies(&folded, folded_texts.iter().map(String::as_str));
    for (i, &hit) in hits.iter().enumerate() {
        if hit {
            // The characters this folded byte came from, and inside a run
            // what the fold dropped between it and the byte before.
            let (s, e) = origin[i];
            let from = if i > 0 && hits[i - 1] { origin[i - 1].1.min(s) } else { s };
            folded_hits[from..e].iter_mut().for_each(|c| *c = true);
        }
    }
    // A run shorter than the mark in the label itself (a character whose
    // compatibility form is long) is not a copy: the mark would lengthen
    // the label, and fewer than MIN_TEXT_BYTES of it are no copy by the
    // rule above.
    let mut i = 0;
    while i < l.len() {
        let e = (i..l.len()).find(|&j| folded_hits[j] != folded_hits[i]).unwrap_or(l.len());
        if folded_hits[i] && e - i >= MIN_TEXT_BYTES.max(ERASED_MARK.len()) {
            covered[i..e].iter_mut().for_each(|c| *c = true);
        }
        i = e;
    }
    if !covered.contains(&true) {
        return (label.to_string(), 0);
    }
    // A run that begins or ends inside a character takes the whole character.
    let mut i = 0;
    while i < l.len() {
        if covered[i] {
            let mut s = i;
            while !label.is_char_boundary(s) {
                s -= 1;
                covered[s] = true;
            }
            let mut e = i;
            while e < l.len() && covered[e] {
                e += 1;
            }
            while !label.is_char_boundary(e) {
                covered[e] = true;
                e += 1;
            }
            i = e;
        } else {
            i += 1;
        }
    }
    let mut out = String::with_capacity(label.len());
    let mut marks = 0;
    let mut i = 0;
    while i < l.len() {
        let mut e = i;
        while e < l.len() && covered[e] == covered[i] {
            e += 1;
        }
        if covered[i] {
            // Spaces at either end of a cut run stay, so the mark keeps
            // its neighbours apart ("remove [erased] now", not "remove[erased]now").
            let run = &label[i..e];
            let body = run.trim_matches(|c: char| c.is_ascii_whitespace());
            if body.is_empty() {
                out.push_str(run);
            } else {
                let mut lead = run.len() - run.trim_start_matches(|c: char| c.is_ascii_whitespace()).len();
                let mut trail = run.len() - lead - body.len();
                // The result is never longer than the label: a space that
                // does not fit beside the mark goes (the trailing one first).
                if lead + ERASED_MARK.len() + trail > run.len() {
                    trail = run.len().saturating_sub(lead + ERASED_MARK.len()).min(trail);
                }
                if lead + ERASED_MARK.len() + trail > run.len() {
                    lead = run.len().saturating_sub(ERASED_MARK.len() + trail).min(lead);
                }
                out.push_str(&run[..lead]);
                out.push_str(ERASED_MARK);
                out.push_str(&run[run.len() - trail..]);
                marks += 1;
            }
        } else {
            out.push_str(&label[i..e]);
        }
        i = e;
    }
    (out, marks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A short forgotten text with spaces around it in the reason: the
    /// mark never makes the reason longer (found by the property below).
    #[test]
    fn a_cut_run_never_grows_the_label() {
        let (out, n) = cut_quotes(" a© 花", [" a© 花"]);
        assert_eq!((out.as_str(), n), ("[erased]", 1));
        let (out, n) = cut_quotes("x  abcdefgh  y", ["  abcdefgh  "]);
        assert_eq!((out.as_str(), n), ("x  [erased]  y", 1));
        let (out, n) = cut_quotes("x abcdefg y", [" abcdefg "]);
        assert_eq!((out.as_str(), n), ("x [erased]y", 1));
    }

    /// Other spacing, an apostrophe of another shape or none, and spaces
    /// between Chinese characters do not hide a copy.
    #[test]
    fn a_copy_with_other_spacing_or_punctuation_is_cut() {
        let text = "Quentin's nickname is Blueberry Muffin";
        for reason in [
            "quentin's nickname is blueberry   muffin",
            "Quentin\u{2019}s nickname is Blueberry Muffin",
            "Quentins nickname is Blueberry Muffin",
        ] {
            let (out, n) = cut_quotes(reason, [text]);
            assert_eq!((out.as_str(), n), ("[erased]", 1), "{reason:?}");
        }
        let zh = "李雷的住址是北京市朝阳区光华路8号";
        let (out, n) = cut_quotes("删除 李 雷 的 住 址 是 北 京 市 朝 阳 区 光 华 路 8 号", [zh]);
        assert_eq!((out.as_str(), n), ("删除 [erased]", 1));
    }

    #[test]
    fn spaces_around_a_cut_run_are_kept() {
        let text = "I was treated for depression in 2019 and";
        let (out, n) = cut_quotes("forget was treated for depression in 2019 now", [text]);
        assert_eq!((out.as_str(), n), ("forget [erased] now", 1));
    }

    #[test]
    fn a_quoted_text_is_cut_and_the_rest_kept() {
        let text = "I was treated for depression in 2019";
        let (out, n) = cut_quotes(&format!("user asked to remove \"{text}\" (ticket 42)"), [text]);
        assert_eq!(out, "user asked to remove \"[erased]\" (ticket 42)");
        assert_eq!(n, 1);
    }

    #[test]
    fn a_long_fragment_is_cut_a_short_one_kept() {
        let text = "My sister Dana lives at 14 Elm Street in Springfield";
        let (out, n) = cut_quotes("forget the Elm Street address line", [text]);
        assert_eq!((out.as_str(), n), ("forget the Elm Street address line", 0));
        let (out, n) = cut_quotes("forget: Dana lives at 14 Elm Street, please", [text]);
        assert_eq!((out.as_str(), n), ("forget: [erased], please", 1));
    }

    #[test]
    fn a_short_text_is_cut_only_whole() {
        let (out, n) = cut_quotes("drop 'likes jazz' now", ["likes jazz"]);
        assert_eq!((out.as_str(), n), ("drop '[erased]' now", 1));
        let (out, n) = cut_quotes("drop likes now", ["likes jazz"]);
        assert_eq!((out.as_str(), n), ("drop likes now", 0));
        // Under the scanner's floor: never searched, never cut.
        let (out, n) = cut_quotes("user request: cats", ["cats"]);
        assert_eq!((out.as_str(), n), ("user request: cats", 0));
    }

    #[test]
    fn chinese_copies_are_cut_on_character_boundaries() {
        let text = "我对花生过敏，去年住过一次院";
        let (out, n) = cut_quotes("用户要求删除：对花生过敏，去年住过一次院。谢谢", [text]);
        assert_eq!(n, 1);
        assert_eq!(out, "用户要求删除：[erased]。谢谢");
    }

    #[test]
    fn two_copies_of_two_texts_give_two_marks() {
        let a = "prefers window seats on long flights";
        let b = "is allergic to penicillin and amoxicillin";
        let (out, n) = cut_quotes(&format!("remove: {a}; also {b}."), [a, b]);
        assert_eq!((out.as_str(), n), ("remove: [erased]; also [erased].", 2));
    }

    #[test]
    fn a_run_that_starts_inside_a_character_takes_the_character() {
        // `©` is C2 A9 and `é` C3 A9: the shared run starts at A9, inside
        // the label's `é`, which is cut whole.
        let text = "©abcdefghijklmnopq";
        let (out, n) = cut_quotes("say éabcdefghijklmnopq now", [text]);
        assert_eq!((out.as_str(), n), ("say [erased] now", 1));
    }

    /// A label made of pieces of the texts and of other text.
    fn label_and_texts() -> impl Strategy<Value = (String, Vec<String>)> {
        let texts = proptest::collection::vec("[a-z ©é花生过敏。]{0,40}", 1..4);
        let parts =
            proptest::collection::vec((any::<bool>(), any::<usize>(), any::<usize>(), "[a-z ©é花。]{0,12}"), 0..6);
        (texts, parts).prop_map(|(texts, parts)| {
            let mut label = String::new();
            for (quote, a, b, other) in parts {
                if quote {
                    let t = &texts[a % texts.len()];
                    let (mut x, mut y) = (a % (t.len() + 1), b % (t.len() + 1));
                    if x > y {
                        std::mem::swap(&mut x, &mut y);
                    }
                    while !t.is_char_boundary(x) {
                        x -= 1;
                    }
                    while !t.is_char_boundary(y) {
                        y += 1;
                    }
                    label.push_str(&t[x..y]);
                } else {
                    label.push_str(&other);
                }
            }
            (label, texts)
        })
    }

    proptest! {
        // Whatever the label and texts: the result is valid UTF-8 no longer
        // than the label, holds no text of 8+ bytes whole nor any 16-byte
        // run of one between its marks, and equals the label when nothing
        // was cut.
        #[test]
        fn nothing_quoted_survives((label, texts) in label_and_texts()) {
            let (out, n) = cut_quotes(&label, texts.iter().map(String::as_str));
            prop_assert!(out.len() <= label.len());
            if n == 0 {
                prop_assert_eq!(&out, &label);
            }
            let pieces: Vec<&str> = out.split(ERASED_MARK).collect();
            for t in &texts {
                let tb = t.as_bytes();
                if tb.len() < MIN_TEXT_BYTES {
                    continue;
                }
                for p in &pieces {
                    if tb.len() < MIN_QUOTE_BYTES {
                        prop_assert!(!p.contains(t.as_str()), "{p:?} holds {t:?}");
                    } else {
                        for w in tb.windows(MIN_QUOTE_BYTES) {
                            prop_assert!(!p.as_bytes().windows(MIN_QUOTE_BYTES).any(|x| x == w), "{p:?} holds a run of {t:?}");
                        }
                    }
                }
            }
        }

        // The property above is not vacuous: a label that quotes a whole
        // text of 16 bytes or more always gets a cut.
        // A copy in other case, in full-width forms or with invisible
        // characters between its letters is cut like a verbatim one.
        #[test]
        fn a_copy_written_another_way_is_cut(text in "[a-zA-Z0-9 ]{16,40}", pre in "[a-z ]{0,8}", how in 0..4u8) {
            let copy: String = match how {
                0 => text.to_uppercase(),
                1 => text.to_lowercase(),
                2 => text.chars().map(|c| if c.is_ascii_graphic() { char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c) } else { c }).collect(),
                _ => text.chars().flat_map(|c| [c, '\u{200B}']).collect(),
            };
            let label = format!("{pre}{copy} end");
            let (out, n) = cut_quotes(&label, [text.as_str()]);
            prop_assert!(n >= 1, "{label:?} -> {out:?}");
            prop_assert!(out.len() <= label.len());
            let folded = fold_mapped(&out).0;
            let want = fold_mapped(&text).0;
            prop_assert!(!folded.contains(want.trim()), "{out:?}");
        }

        #[test]
        fn a_whole_quote_is_always_cut(texts in proptest::collection::vec("[a-z ©é花生过敏。]{16,40}", 1..3), pre in "[a-z ]{0,8}") {
            let label = format!("{pre}{}", texts[0]);
            let (_, n) = cut_quotes(&label, texts.iter().map(String::as_str));
            prop_assert!(n >= 1);
        }
    }
}
