//! Text at the bottom of the engine: the rules every other part reads
//! characters and words by, in one place, so that the embedder, the BM25
//! index, near-duplicate detection, the redactor and the input checks agree.
//!
//! - [`is_cjk`]: which characters are written without spaces (Han, kana and
//!   their marks) — one set for bigrams, hashing features and folding.
//! - [`tokenize`]: the search tokens of a text (NFKC, lower case, CJK
//!   bigrams, UAX #29 words, Porter2 stems), with [`is_stop_word`].
//! - [`chars`]: the character rules for caller text ([`check_chars`]), and
//!   the predicates they are built from ([`is_invisible`],
//!   [`is_bidi_control`], …).
//! - `fold`: views of a text with obfuscations undone (NFKC, confusable
//!   skeletons, letter-spaced runs), for the injection detector.
//! - [`searchable`]: the text search reads from a memory's content (a JSON
//!   object or array by its values).
//! - `lexicon`: closed English word classes (months, weekdays, number
//!   words, units, function words) read by near-duplicate detection, the
//!   query-time parser and the BM25 index.
//!
//! Nothing here depends on any other part of the engine.

pub mod chars;
pub(crate) mod fold;
pub mod intent;
pub(crate) mod lexicon;
mod searchable;
mod tokenize;

pub(crate) use chars::truncate_bytes;
pub use chars::{
    check_chars, has_visible, is_bidi_control, is_invisible, is_line_break_or_space, scrub, CharFault, TextField,
};
pub use searchable::searchable;
pub(crate) use tokenize::{has_cjk, mostly_cjk, nfkc_is_identity};
pub use tokenize::{is_stop_word, tokenize};

/// Whether `c` is written without spaces between words: Han ideographs
/// (the Unified block, Extensions A–I, the compatibility ideographs and
/// their supplement), Hiragana, Katakana (with the phonetic extensions, the
/// prolonged sound mark `ー` and the half-width forms) and the iteration and
/// closing marks `々 〆 〇`. Ranges from the Unicode 16.0 block table.
///
/// Such runs are cut into character bigrams for BM25 ([`tokenize`]), into
/// character n-gram features by the hashing embedder, and are never
/// confusable-folded. Hangul is not included: Korean is written with spaces.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3005..=0x3007      // 々 〆 〇
        | 0x3040..=0x309F    // Hiragana
        | 0x30A0..=0x30FF    // Katakana (with ー U+30FC)
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x323AF  // CJK Extensions B–I and the compatibility supplement
    )
}

#[cfg(test)]
mod tests {
    use super::is_cjk;

    #[test]
    fn one_set_of_cjk_characters() {
        for c in ['々', '〆', '〇', 'あ', 'ア', 'ー', 'ｱ', '㐀', '中', '豈', '𠀀', '\u{31350}'] {
            assert!(is_cjk(c), "{c:?}");
        }
        for c in ['a', '한', '。', '，', 'Ω', ' ', '1'] {
            assert!(!is_cjk(c), "{c:?}");
        }
    }
}
