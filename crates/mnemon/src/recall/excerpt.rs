//! Excerpts of long memories: the passage of a long memory that answers the
//! query, for the block to quote when the whole memory does not fit.
//!
//! A memory's vector is made from the encoder's window only (512 tokens for
//! the BERT models; the rest of a longer text is not read), and a block cut
//! to a long memory's opening words drops whatever its end says. So for a
//! recalled memory longer than [`EXCERPT_FROM_TOKENS`], its text is split
//! into passages of about [`PASSAGE_TOKENS`] at sentence ends, each passage
//! is embedded beside the query, and the best passage (cosine plus the share
//! of the query's terms it holds, [`TERM_WEIGHT`]) is offered to the block
//! ([`crate::recall::BlockParts::excerpts`]).

use crate::embed::{EmbedKind, Embedder};
use crate::error::Result;
use crate::recall::estimate_tokens;

/// Memories longer than this many tokens ([`estimate_tokens`]) get an
/// excerpt: longer than half the default 400-token budget, a memory seldom
/// fits a block whole beside anything else.
pub const EXCERPT_FROM_TOKENS: usize = 200;

/// Tokens of one passage, about: three or four sentences of English, a short
/// paragraph of Chinese; small enough that two fit the relevant part of a
/// 400-token block.
pub const PASSAGE_TOKENS: usize = 90;

/// Weight of the share of the query's terms a passage holds, added to its
/// cosine. A small encoder's cosines between a question and the passages of
/// one text are close together; the words the question names break the
/// tie toward the passage that holds them.
pub const TERM_WEIGHT: f32 = 0.2;

/// Most passages embedded for one memory (a 1 MiB memory is not embedded
/// whole at query time); later text is not considered.
pub const MAX_PASSAGES: usize = 64;

/// Most long memories of one block that get an excerpt (the best-ranked
/// ones): each costs one embedding call over its passages.
pub const MAX_EXCERPTS: usize = 3;

/// `text` in passages of about [`PASSAGE_TOKENS`], cut after sentence ends
/// (`.` `!` `?` `。` `！` `？` `；` or a line break) where there are any, else
/// at [`PASSAGE_TOKENS`] characters' worth; at most [`MAX_PASSAGES`].
pub fn passages(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut last_end = None;
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '；' | '\n') {
            last_end = Some(end);
        }
        if estimate_tokens(&text[start..end]) >= PASSAGE_TOKENS {
            let cut = last_end.filter(|&e| e > start).unwrap_or(end);
            let p = text[start..cut].trim();
            if !p.is_empty() {
                out.push(p);
            }
            start = cut;
            last_end = None;
            if out.len() == MAX_PASSAGES {
                return out;
            }
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The passage of `content` that best answers `query` (see the module
/// docs), or `None` when `content` is not longer than
/// [`EXCERPT_FROM_TOKENS`] or has a single passage.
///
/// # Errors
/// [`crate::Error::Embedder`] when embedding fails.
pub fn best_passage<'a>(
    embedder: &dyn Embedder,
    query: &str,
    query_vector: &[f32],
    content: &'a str,
) -> Result<Option<&'a str>> {
    if estimate_tokens(content) <= EXCERPT_FROM_TOKENS {
        return Ok(None);
    }
    let ps = passages(content);
    if ps.len() < 2 {
        return Ok(None);
    }
    let vectors = embedder.embed(&ps, EmbedKind::Passage)?;
    let terms: Vec<String> =
        crate::text::tokenize(query).into_iter().filter(|t| !crate::text::is_stop_word(t)).collect();
    // Each query term weighs by its idf among the passages: a word most
    // passages hold ("shop" in a travel diary) says little of which one
    // answers.
    let held: Vec<Vec<String>> = ps.iter().map(|p| crate::text::tokenize(p)).collect();
    let n = ps.len() as f32;
    let idf: Vec<f32> = terms
        .iter()
        .map(|t| {
            let df = held.iter().filter(|h| h.contains(t)).count() as f32;
            if df == 0.0 {
                0.0
            } else {
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            }
        })
        .collect();
    let mass: f32 = idf.iter().sum();
    let mut best: Option<(f32, &str)> = None;
    for ((p, v), have) in ps.iter().zip(&vectors).zip(&held) {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::EPSILON);
        let cos = v.iter().zip(query_vector).map(|(a, b)| a * b).sum::<f32>() / norm;
        let share = if mass > 0.0 {
            terms.iter().zip(&idf).filter(|(t, _)| have.contains(t)).map(|(_, w)| w).sum::<f32>() / mass
        } else {
            0.0
        };
        let s = cos + TERM_WEIGHT * share;
        if best.is_none_or(|(b, _)| s > b) {
            best = Some((s, p));
        }
    }
    Ok(best.map(|(_, p)| p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passages_cut_at_sentence_ends_and_cover_the_text() {
        let text = "One two three four five six seven. ".repeat(40);
        let ps = passages(&text);
        assert!(ps.len() > 2);
        for p in &ps {
            assert!(p.ends_with('.'), "{p}");
            assert!(estimate_tokens(p) <= PASSAGE_TOKENS + 10);
        }
        let joined: usize = ps.iter().map(|p| p.len()).sum();
        assert!(joined + ps.len() >= text.trim().len() - ps.len());
        let zh = "今天开会讨论了很多事情。".repeat(60);
        assert!(passages(&zh).len() > 3);
    }
}
