//! Language-aware tokenisation shared by the BM25 index and entity overlap.
//!
//! See [`tokenize`] for the exact pipeline.

use std::collections::HashSet;
use std::sync::LazyLock;

use super::is_cjk;
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
///    - split where letters meet digits (`"iphone15"` → `"iphone"`, `"15"` before stemming;
///      consistent with `"GPT-4"` → `"gpt"`, `"4"`). Numbers keep their inner
///      separators (`"3.14"`, `"1,000"` stay one token).
///    - stemmed by the Snowball English stemmer ("Porter2", M. Porter,
///      snowballstem.org; the `rust-stemmers` crate) if it consists of ASCII
///      letters only and is not a [stop word](is_stop_word).
///
/// **Stemming** folds inflections and derivations to one stem, on query and
/// documents alike: `running`, `runs`, `run` → `run`; `stories`, `story` →
/// `stori`; `making`, `make` → `make`; `connections` → `connect`. Stems need
/// not be words. Irregular forms stay apart (`ran`, `went`). Porter2 replaced
/// a hand-written light stemmer (plurals, `-ing`, `-ed` only): on the LoCoMo
/// dev split it raised evidence recall@10 of lexical recall from 0.602 to
/// 0.613 (hashing-embedder hybrid 0.600 → 0.610). Words with other
/// letters (`café`, Cyrillic, Korean) and words with digits or apostrophes
/// are left as they are; stop words are left unstemmed so that
/// [`is_stop_word`] recognises them after tokenisation.
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
/// conjunctions; 60-odd words, all ASCII; [`tokenize`] does not stem them).
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

/// Sorted and unique (checked by a test); [`stem`] leaves every entry as it is.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "but",
    "by", "can", "could", "did", "do", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "just", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "us",
    "very", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you",
    "your",
];

/// Whether `token` has a CJK character (as [`tokenize`] defines CJK), i.e.
/// is a character bigram or single character of a CJK run.
pub(crate) fn has_cjk(token: &str) -> bool {
    token.chars().any(is_cjk)
}

/// Whether `text` is written mostly in CJK script: at least one CJK
/// character per three ASCII letters (a CJK character carries about a
/// word, an English word about five letters), so "Tom的生日是七月十八号" is
/// CJK and "My colleague 王伟 said hi" is not.
pub(crate) fn mostly_cjk(text: &str) -> bool {
    let (mut cjk, mut latin) = (0usize, 0usize);
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else if c.is_ascii_alphabetic() {
            latin += 1;
        }
    }
    cjk > 0 && cjk * 3 >= latin
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

/// The Snowball English stemmer (Porter2), built once.
static ENGLISH: LazyLock<rust_stemmers::Stemmer> =
    LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));

/// Stems `word` as described on [`tokenize`]: Porter2 for a word of
/// lowercase ASCII letters that is not a stop word, the word itself otherwise.
fn stem(word: &str) -> String {
    if word.is_empty() || !word.bytes().all(|c| c.is_ascii_lowercase()) || is_stop_word(word) {
        return word.to_string();
    }
    if word.len() > STEM_MEMO_WORD_MAX {
        return ENGLISH.stem(word).into_owned();
    }
    STEMS.with_borrow_mut(|memo| {
        if let Some(s) = memo.get(word) {
            return s.to_string();
        }
        let s = ENGLISH.stem(word).into_owned();
        if memo.len() >= STEM_MEMO_MAX {
            memo.clear();
        }
        memo.insert(word.into(), s.as_str().into());
        s
    })
}

/// Words of at most this many bytes are memoised by [`STEMS`] (longer ones
/// are rare and stemmed each time).
const STEM_MEMO_WORD_MAX: usize = 24;

/// Entries [`STEMS`] holds before it starts over: at most about 1 MB per
/// thread (its table of 16k buckets and two small allocations per entry),
/// kept for the thread's life. Seed value.
const STEM_MEMO_MAX: usize = 8_192;

thread_local! {
    /// Stems this thread has computed, by word. Porter2 takes a few hundred
    /// nanoseconds a word, most of the BM25 indexing of a memory (measured
    /// with `perf` on `cargo bench --bench ingest`: stemming was about half
    /// of `tokenize`), and the words of a store follow Zipf's law, so most
    /// words of a new text were seen before. A pure function's memo: the
    /// stems are the same with or without it. It holds words in process
    /// memory only, never on disk; a word of a forgotten memory stays in it
    /// until 8,192 newer words (or the thread's end) push it out, like
    /// other freed memory of the process (erasure is proved on disk).
    static STEMS: std::cell::RefCell<std::collections::HashMap<Box<str>, Box<str>, foldhash::fast::RandomState>> =
        std::cell::RefCell::new(std::collections::HashMap::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        tokenize(s)
    }

    #[test]
    fn mostly_cjk_weighs_a_character_as_three_letters() {
        assert!(mostly_cjk("我对海鲜过敏。"));
        assert!(mostly_cjk("Tom的生日是七月十八号，他想要一台新的咖啡机。"));
        assert!(mostly_cjk("我现在用的是华为Mate 60"));
        assert!(!mostly_cjk("My colleague 王伟 said the build is green again."));
        assert!(!mostly_cjk("What does Tom want for his birthday?"));
        assert!(!mostly_cjk("12345 !!!"));
        assert!(mostly_cjk("東京タワーに行った"));
    }

    #[test]
    fn english_words_lowercased_and_stemmed() {
        assert_eq!(
            toks("The Cats were RUNNING; John's boxes, stories & classes!"),
            ["the", "cat", "were", "run", "john", "box", "stori", "class"]
        );
        assert_eq!(
            toks("walked stopped studied matches status analysis"),
            ["walk", "stop", "studi", "match", "status", "analysi"]
        );
        // Curly apostrophe handled like the ASCII one.
        assert_eq!(toks("Mary’s"), ["mari"]);
        assert_eq!(toks(""), Vec::<String>::new());
        assert_eq!(toks("  ...  !!! "), Vec::<String>::new());
    }

    /// Inflected and derived forms of one word meet on one stem, which the
    /// previous light stemmer did not do for `-e` words, `-ly`, `-ness`,
    /// `-ation` and the like.
    #[test]
    fn inflections_share_a_stem() {
        for group in [
            &["run", "runs", "running"][..],
            &["story", "stories"],
            &["make", "makes", "making"],
            &["hike", "hiked", "hiking", "hikes"],
            &["adopt", "adopted", "adopting", "adoption"],
            &["generous", "generously"],
            &["paint", "painting", "paintings", "painted"],
            &["happy", "happiness"],
            &["connect", "connected", "connection", "connections"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(stems.iter().all(|s| *s == stems[0]), "{group:?} -> {stems:?}");
        }
        // Irregular forms and different words stay apart.
        assert_ne!(stem("ran"), stem("run"));
        assert_ne!(stem("news"), stem("new"));
        assert_ne!(stem("car"), stem("care"));
    }

    /// The memo gives the stems Porter2 gives, for words seen once, seen
    /// again, too long to memoise, and after it has started over.
    #[test]
    fn memoised_stems_equal_porter2() {
        // Distinct words, more than the memo holds, so that it starts over.
        let letters = |mut n: usize| {
            let mut s = String::new();
            loop {
                s.push(char::from(b'a' + (n % 26) as u8));
                n /= 26;
                if n == 0 {
                    return s;
                }
            }
        };
        let words: Vec<String> = (0..(STEM_MEMO_MAX + 500))
            .map(|i| {
                let base = ["running", "happiness", "generously", "connections", "argued", "flies"][i % 6];
                format!("{}{base}", letters(i))
            })
            .collect();
        let distinct: HashSet<&String> = words.iter().collect();
        assert_eq!(distinct.len(), words.len());
        for round in 0..2 {
            for w in
                words.iter().chain(["running", "x".repeat(40).as_str(), "generalizations"].map(String::from).iter())
            {
                assert_eq!(stem(w), ENGLISH.stem(w).into_owned(), "{w} (round {round})");
            }
        }
        // It started over (each round adds 8,195 new entries), and never
        // held more than its cap.
        let held = STEMS.with_borrow(|m| m.len());
        assert!(held < STEM_MEMO_MAX, "{held}");
    }

    /// Only words of ASCII letters are stemmed: other scripts, digits,
    /// apostrophes and stop words come out as they went in.
    #[test]
    fn non_english_tokens_and_stop_words_not_stemmed() {
        assert_eq!(toks("cafés наблюдения"), ["cafés", "наблюдения"]);
        assert_eq!(toks("don't 3rd"), ["don't", "3", "rd"]);
        assert_eq!(toks("these very things were"), ["these", "very", "thing", "were"]);
        assert_eq!(stem(""), "");
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
        assert_eq!(toks("iPhone15手机"), ["iphon", "15", "手机"]);
        assert_eq!(toks("我买了3台iPhone"), ["我买", "买了", "3", "台", "iphon"]);
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
            assert_eq!(toks(w), [*w], "stop word {w} changes under tokenisation");
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
