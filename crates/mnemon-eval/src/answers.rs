//! Reference answers of LongMemEval and whether a text holds them: the
//! measure of `mnemon eval longmemeval --context-block`, the share of
//! questions whose answer text is present in the prompt block.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use mnemon::Result;

#[derive(Deserialize)]
struct AnswerRecord {
    question_id: String,
    answer: serde_json::Value,
}

/// The reference answer of every LongMemEval question in `path` (JSON
/// lines or one JSON document, gzip when the name ends in `.gz`), by
/// `question_id`. An answer given as a number or other JSON value is kept
/// as its JSON text.
///
/// # Errors
/// [`mnemon::Error::Io`] when the file cannot be read;
/// [`mnemon::Error::InvalidInput`] (field `"file"`) naming the line when a
/// record does not parse.
pub fn load_longmemeval_answers(path: &Path) -> Result<HashMap<String, String>> {
    let text = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    let mut out = HashMap::new();
    super::longmemeval::read_records(path, |r: AnswerRecord| {
        out.insert(r.question_id, text(r.answer));
        Ok(())
    })?;
    Ok(out)
}

/// `text` lower-cased with every run of characters that are not letters or
/// digits as one space, trimmed, between single spaces (so a phrase can be
/// matched on word boundaries by plain substring search).
pub fn normalize_answer(text: &str) -> String {
    let mut out = String::from(" ");
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

/// Whether the answer's words occur in `text` as one phrase, on word
/// boundaries, ignoring case and punctuation (`"25:50"` matches `"25 50"`);
/// an answer holding CJK characters (written without spaces) matches
/// anywhere. An answer with no letter or digit is never present.
pub fn answer_present(answer: &str, text: &str) -> bool {
    let a = normalize_answer(answer);
    if a.trim().is_empty() {
        return false;
    }
    let t = normalize_answer(text);
    if a.chars().any(mnemon::text::is_cjk) {
        t.contains(a.trim())
    } else {
        t.contains(&a)
    }
}

/// Words of [`ANSWER_STOP_WORDS`] are not counted by [`answer_word_recall`]:
/// the function words and the rubric phrasing of LongMemEval's preference
/// answers ("The user would prefer responses that …"), which say nothing
/// about the answer itself.
pub const ANSWER_STOP_WORDS: &[&str] = &[
    "the",
    "a",
    "an",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "for",
    "with",
    "that",
    "this",
    "their",
    "they",
    "them",
    "user",
    "would",
    "prefer",
    "responses",
    "response",
    "suggestions",
    "suggest",
    "not",
    "be",
    "is",
    "are",
    "as",
    "by",
    "from",
    "at",
    "it",
    "its",
    "such",
    "any",
    "might",
    "may",
    "could",
    "should",
    "also",
    "more",
    "you",
    "your",
    "previous",
    "previously",
    "mentioned",
    "specifically",
    "possibly",
    "particularly",
    "about",
    "which",
    "what",
];

/// The share of the answer's distinct content words (letters or digits,
/// not in [`ANSWER_STOP_WORDS`]) that occur as words in `text`, in
/// `0.0..=1.0`; `None` when the answer has no content word.
pub fn answer_word_recall(answer: &str, text: &str) -> Option<f64> {
    let words = |s: &str| -> Vec<String> { normalize_answer(s).split_whitespace().map(String::from).collect() };
    let mut wanted = words(answer);
    wanted.retain(|w| !ANSWER_STOP_WORDS.contains(&w.as_str()));
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return None;
    }
    let have: std::collections::HashSet<String> = words(text).into_iter().collect();
    let found = wanted.iter().filter(|w| have.contains(*w)).count();
    Some(found as f64 / wanted.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_match_on_word_boundaries() {
        assert!(answer_present("Premier Silver", "- [2023-05-01] (fact) Status: premier silver, then gold"));
        assert!(answer_present("25:50", "My best is 25 50 now"));
        assert!(!answer_present("four", "fourteen restaurants"));
        assert!(!answer_present("...", "anything"));
        assert!(answer_present("北京", "用户住在北京"), "CJK runs compare as one word");
        assert_eq!(
            answer_word_recall("The user would prefer Adobe Premiere tips", "premiere pro tips"),
            Some(2.0 / 3.0)
        );
        assert_eq!(answer_word_recall("the user", "x"), None);
    }
}
