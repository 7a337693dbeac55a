//! Language-aware tokenisation shared by the BM25 index and entity overlap.
//!
//! See [`tokenize`] for the exact pipeline.

use std::collections::HashSet;
use std::sync::LazyLock;

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};
use unicode_segmentation::UnicodeSegmentation;

/// Splits text into normalised search tokens.
///
/// The pipeline, in order:
///
/// 1. **NFKC normalisation**, then Unicode **lowercasing**, then the right
///    single quote `’` is mapped to `'`. NFKC folds full-width forms, so
///    `"ＡＢＣ１２３"` becomes `"abc123"` and half-width katakana becomes
///    full-width.
/// 2. The text is cut into **runs**: maximal sequences of CJK characters
///    (Han ideographs incl. extensions and compatibility ideographs, Hiragana,
///    Katakana, and the marks `々 〆 〇 ー`) and the text between them.
/// 3. **CJK runs** become overlapping character **bigrams**
///    (`"咖啡店"` → `"咖啡"`, `"啡店"`); a run of one character becomes that
///    single character. Han, Hiragana and Katakana are bigrammed together
///    (as in Lucene's CJK bigram filter); nothing is dropped or transliterated.
/// 4. **Other runs** are split into words by Unicode word segmentation
///    (UAX #29, `unicode_words`: punctuation, spaces and symbols such as emoji
///    are dropped). Each word is then
///    - stripped of a possessive `'s` suffix (`"john's"` → `"john"`),
///    - split where letters meet digits (`"iphone15"` → `"iphone"`, `"15"`;
///      consistent with `"GPT-4"` → `"gpt"`, `"4"`). Numbers keep their inner
///      separators (`"3.14"`, `"1,000"` stay one token).
///    - lightly stemmed if it consists of ASCII letters only (see below).
///
/// **Light English stemming** (one rule at most, first match wins; applied
/// only to all-ASCII-letter tokens longer than 3 bytes). It is deliberately
/// simpler than Porter's algorithm and only folds the commonest inflections:
///
/// | suffix | rule | example |
/// |---|---|---|
/// | `-ies`, `-ied` (word > 4) | → `-y` | stories → story, studied → study |
/// | `-sses` | → `-ss` | classes → class |
/// | `-xes`, `-ches`, `-shes`, `-zzes` | drop `-es` | boxes → box, matches → match |
/// | `-ss`, `-us`, `-is` | unchanged | class, status, analysis |
/// | `-s` | drop | cats → cat, houses → house |
/// | `-ing` (stem ≥ 3 bytes with a vowel) | drop, undouble | running → run, walking → walk |
/// | `-ed` (stem ≥ 3 bytes with a vowel, not `-eed`) | drop, undouble | stopped → stop, walked → walk |
///
/// "Undouble" turns a final doubled consonant other than `l`, `s`, `z` into
/// one (`runn` → `run`). Stems are not restored (`making` → `mak`, while
/// `make` stays `make`); both query and documents go through the same rules.
///
/// Stop words are **not** removed here (the BM25 index removes a short English
/// list on top, see [`is_stop_word`]). Korean words (space-separated) come out
/// as whole words; other scripts written without spaces (Thai, Lao, ...) are
/// not segmented beyond what UAX #29 does.
///
/// Never panics; the empty string gives an empty vector. Tokens are returned
/// in text order and may repeat.
pub fn tokenize(text: &str) -> Vec<String> {
    let normalized = search_form(text);
    let mut out = Vec::new();
    let mut other_start: Option<usize> = None;
    let mut cjk_run: Vec<char> = Vec::new();
    for (pos, c) in normalized.char_indices() {
        if is_cjk(c) {
            if let Some(start) = other_start.take() {
                push_words(&normalized[start..pos], &mut out);
            }
            cjk_run.push(c);
        } else {
            if !cjk_run.is_empty() {
                push_bigrams(&cjk_run, &mut out);
                cjk_run.clear();
            }
            if other_start.is_none() {
                other_start = Some(pos);
            }
        }
    }
    if let Some(start) = other_start {
        push_words(&normalized[start..], &mut out);
    }
    if !cjk_run.is_empty() {
        push_bigrams(&cjk_run, &mut out);
    }
    out
}

/// Step 1 of [`tokenize`]: NFKC, lowercase, `’` → `'`. Text that passes
/// the NFKC quick check (all ASCII does, and most other text) is already in
/// NFKC, so the decomposition and recomposition are skipped; the result is
/// the same either way.
fn search_form(text: &str) -> String {
    let lowered =
        if nfkc_is_identity(text) { text.to_lowercase() } else { text.nfkc().collect::<String>().to_lowercase() };
    if lowered.contains('\u{2019}') {
        lowered.replace('\u{2019}', "'")
    } else {
        lowered
    }
}

/// Whether NFKC leaves `text` unchanged, by the Unicode quick check
/// (UAX #15): `true` only when that is certain, so a `false` merely means
/// "normalise to find out".
pub(crate) fn nfkc_is_identity(text: &str) -> bool {
    text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes
}

/// Whether `token` is in the short English stop-word list that the BM25 index
/// ignores (articles, pronouns, auxiliaries, common prepositions and
/// conjunctions; 60-odd words, all ASCII and unchanged by the stemmer).
///
/// Used by [`LexicalIndex`](super::LexicalIndex) only; [`tokenize`] keeps stop
/// words so that other callers see every word. No CJK token is a stop word.
pub fn is_stop_word(token: &str) -> bool {
    // Every stop word is 1..=7 ASCII bytes; most tokens are ruled out by
    // length before the set is asked.
    (1..=STOP_WORD_MAX_LEN).contains(&token.len()) && STOP_SET.contains(token)
}

/// Length in bytes of the longest entry of [`STOP_WORDS`] (checked by a test).
const STOP_WORD_MAX_LEN: usize = 7;

/// [`STOP_WORDS`] as a hash set: one hash instead of seven string
/// comparisons of a binary search, the BM25 index's hottest lookup.
static STOP_SET: LazyLock<HashSet<&'static str, foldhash::fast::RandomState>> =
    LazyLock::new(|| STOP_WORDS.iter().copied().collect());

/// Sorted (for binary search); every entry is a fixed point of [`stem`]
/// (checked by a test).
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "but",
    "by", "can", "could", "did", "do", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "just", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "us",
    "very", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you",
    "your",
];

/// Han (URO, Ext A, Ext B–H, compatibility), Hiragana, Katakana (incl.
/// phonetic extensions and the prolonged sound mark), and `々 〆 〇`.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3005..=0x3007      // 々 〆 〇
        | 0x3040..=0x309F    // Hiragana
        | 0x30A0..=0x30FF    // Katakana (incl. ー U+30FC)
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK Ext A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0xFF66..=0xFF9F    // half-width katakana (NFKC folds these; kept for safety)
        | 0x20000..=0x3134F  // CJK Ext B–H and compatibility supplement
    )
}

fn push_bigrams(run: &[char], out: &mut Vec<String>) {
    if run.len() == 1 {
        out.push(run[0].to_string());
        return;
    }
    for pair in run.windows(2) {
        let mut s = String::with_capacity(8);
        s.extend(pair.iter());
        out.push(s);
    }
}

fn push_words(chunk: &str, out: &mut Vec<String>) {
    for word in chunk.unicode_words() {
        let word = word.strip_suffix("'s").unwrap_or(word);
        split_letters_digits(word, out);
    }
}

/// Splits `word` where an alphabetic character meets a numeric one and pushes
/// the (stemmed) pieces. Other characters (`.`, `,`, `'`, `_`) stay with the
/// piece they are in.
fn split_letters_digits(word: &str, out: &mut Vec<String>) {
    let mut start = 0;
    let mut prev: Option<bool> = None; // Some(true) = numeric, Some(false) = alphabetic
    for (pos, c) in word.char_indices() {
        let class = if c.is_numeric() {
            Some(true)
        } else if c.is_alphabetic() {
            Some(false)
        } else {
            None
        };
        if let (Some(p), Some(k)) = (prev, class) {
            if p != k {
                push_piece(&word[start..pos], out);
                start = pos;
            }
        }
        if class.is_some() {
            prev = class;
        }
    }
    push_piece(&word[start..], out);
}

fn push_piece(piece: &str, out: &mut Vec<String>) {
    if piece.chars().any(char::is_alphanumeric) {
        out.push(stem(piece));
    }
}

/// The light English stemmer described on [`tokenize`].
fn stem(word: &str) -> String {
    let b = word.as_bytes();
    if b.len() <= 3 || !b.iter().all(u8::is_ascii_lowercase) {
        return word.to_string();
    }
    let n = b.len();
    if n > 4 && (word.ends_with("ies") || word.ends_with("ied")) {
        return format!("{}y", &word[..n - 3]);
    }
    if word.ends_with("sses") {
        return word[..n - 2].to_string();
    }
    if ["xes", "ches", "shes", "zzes"].iter().any(|s| word.ends_with(s)) {
        return word[..n - 2].to_string();
    }
    if word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return word.to_string();
    }
    if word.ends_with('s') {
        return word[..n - 1].to_string();
    }
    if let Some(s) = word.strip_suffix("ing") {
        if s.len() >= 3 && has_vowel(s) {
            return undouble(s);
        }
        return word.to_string();
    }
    if let Some(s) = word.strip_suffix("ed") {
        if s.len() >= 3 && has_vowel(s) && !s.ends_with('e') {
            return undouble(s);
        }
    }
    word.to_string()
}

fn has_vowel(s: &str) -> bool {
    s.bytes().any(|c| matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'y'))
}

fn undouble(s: &str) -> String {
    let b = s.as_bytes();
    let n = b.len();
    if n >= 2 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'a' | b'e' | b'i' | b'o' | b'u' | b'l' | b's' | b'z') {
        return s[..n - 1].to_string();
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        tokenize(s)
    }

    #[test]
    fn english_words_lowercased_and_stemmed() {
        assert_eq!(
            toks("The Cats were RUNNING; John's boxes, stories & classes!"),
            ["the", "cat", "were", "run", "john", "box", "story", "class"]
        );
        assert_eq!(
            toks("walked stopped studied matches status analysis"),
            ["walk", "stop", "study", "match", "status", "analysis"]
        );
        // Short words and "-eed" words are left alone.
        assert_eq!(toks("gas bus need speed thing string"), ["gas", "bus", "need", "speed", "thing", "string"]);
        // Curly apostrophe handled like the ASCII one.
        assert_eq!(toks("Mary’s"), ["mary"]);
        assert_eq!(toks(""), Vec::<String>::new());
        assert_eq!(toks("  ...  !!! "), Vec::<String>::new());
    }

    #[test]
    fn chinese_becomes_bigrams() {
        assert_eq!(toks("我喜欢喝偏酸的咖啡"), ["我喜", "喜欢", "欢喝", "喝偏", "偏酸", "酸的", "的咖", "咖啡"]);
        // Punctuation splits runs; a one-character run is kept as a unigram.
        assert_eq!(toks("咖啡，茶。好"), ["咖啡", "茶", "好"]);
    }

    #[test]
    fn japanese_scripts_bigrammed_together() {
        assert_eq!(toks("コーヒーが好き"), ["コー", "ーヒ", "ヒー", "ーが", "が好", "好き"]);
        // Half-width katakana is folded to full-width by NFKC.
        assert_eq!(toks("ｺｰﾋｰ"), toks("コーヒー"));
    }

    #[test]
    fn mixed_latin_digits_cjk() {
        assert_eq!(toks("iPhone15手机"), ["iphone", "15", "手机"]);
        assert_eq!(toks("我买了3台iPhone"), ["我买", "买了", "3", "台", "iphone"]);
        assert_eq!(toks("GPT-4 and gpt4"), ["gpt", "4", "and", "gpt", "4"]);
        assert_eq!(toks("pi is 3.14, not 1,000"), ["pi", "is", "3.14", "not", "1,000"]);
        assert_eq!(toks("2024年"), ["2024", "年"]);
    }

    #[test]
    fn full_width_forms_fold() {
        assert_eq!(toks("１２３ＡＢＣ"), ["123", "abc"]);
        assert_eq!(toks("価格は１０００円"), ["価格", "格は", "1000", "円"]);
    }

    #[test]
    fn korean_words_kept_whole() {
        assert_eq!(toks("나는 커피를 좋아해"), ["나는", "커피를", "좋아해"]);
    }

    #[test]
    fn stop_words_sorted_and_stem_invariant() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOP_WORDS, "stop list must be sorted and unique");
        for w in STOP_WORDS {
            assert_eq!(stem(w), *w, "stop word {w} changes under stemming");
            assert!(is_stop_word(w));
        }
        assert!(!is_stop_word("coffee"));
        assert!(!is_stop_word("咖啡"));
        assert!(!is_stop_word(""));
        assert_eq!(STOP_WORDS.iter().map(|w| w.len()).max(), Some(STOP_WORD_MAX_LEN));
    }

    /// The quick-check shortcut gives exactly what full NFKC gives.
    #[test]
    fn search_form_equals_full_normalisation() {
        let slow = |t: &str| t.nfkc().collect::<String>().to_lowercase().replace('\u{2019}', "'");
        for t in [
            "",
            "Plain ASCII, with CAPS and 3.14",
            "Mary’s café",
            "cafe\u{301} (combining accent)",
            "ＡＢＣ１２３ full width",
            "ｺｰﾋｰ half-width kana",
            "ﬁ ligature and ① circled",
            "我喜欢喝偏酸的咖啡",
            "Ǆ titlecase digraph, İstanbul, ΣΑΣ",
            "\u{2126} ohm sign, \u{212B} angstrom",
        ] {
            assert_eq!(search_form(t), slow(t), "{t:?}");
            if nfkc_is_identity(t) {
                assert_eq!(t.nfkc().collect::<String>(), t, "{t:?}");
            }
        }
        assert!(nfkc_is_identity("plain ascii") && nfkc_is_identity("咖啡"));
        assert!(!nfkc_is_identity("ＡＢＣ") && !nfkc_is_identity("ﬁ"));
    }

    proptest::proptest! {
        #[test]
        fn search_form_equals_full_normalisation_on_any_text(t in "\\PC{0,40}") {
            let slow = t.nfkc().collect::<String>().to_lowercase().replace('\u{2019}', "'");
            proptest::prop_assert_eq!(search_form(&t), slow);
            if nfkc_is_identity(&t) {
                proptest::prop_assert_eq!(t.nfkc().collect::<String>(), t);
            }
        }
    }
}
