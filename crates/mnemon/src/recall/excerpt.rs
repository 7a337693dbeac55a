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

/// Tokens of one passage, about: five or six sentences of English, a
/// paragraph of Chinese; enough to hold the sentence that names a topic and
/// the decision a few sentences on (90 placed 8 of 12 needed items on the everyday-questions dev split, 150 placed 9), and small enough to fit the relevant part of a 400-token block.
pub const PASSAGE_TOKENS: usize = 150;

/// Weight of the share of the query's terms a passage holds, added to its
/// cosine. A small encoder's cosines between a question and the passages of
/// one text are close together; the words the question names break the
/// tie toward the passage that holds them.
pub const TERM_WEIGHT: f32 = 0.2;

/// Most passages embedded for one memory: the query's terms pick them
/// (see [`best_passage`]), so a long memory costs one embedding call of a
/// bounded size at query time.
pub const EMBEDDED_PASSAGES: usize = 12;

/// Most long memories of one block that get an excerpt (the best-ranked
/// ones): each costs one embedding call over its passages.
pub const MAX_EXCERPTS: usize = 3;

/// `text` in overlapping passages of about [`PASSAGE_TOKENS`]: one starting
/// at each sentence (after `.` `!` `?` `。` `！` `？` `；` or a line break) and
/// running to the end of the sentence that reaches [`PASSAGE_TOKENS`], so
/// the sentence that names a topic and the one that answers it share a
/// passage. A sentence longer than a passage is cut at [`PASSAGE_TOKENS`]
/// characters' worth.
pub fn passages(text: &str) -> Vec<&str> {
    // Sentence ends, as byte offsets.
    let mut sentences: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    // The sentence's estimate, kept as its two counts (see
    // `estimate_tokens`) so that the text is read once.
    let (mut cjk, mut other) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        if super::context::whole_token(c) {
            cjk += 1;
        } else {
            other += 1;
        }
        let long = cjk + other.div_ceil(4) >= PASSAGE_TOKENS;
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '；' | '\n') || long {
            if !text[start..end].trim().is_empty() {
                sentences.push((start, end));
            }
            start = end;
            (cjk, other) = (0, 0);
        }
    }
    if !text[start..].trim().is_empty() {
        sentences.push((start, text.len()));
    }
    let mut out = Vec::new();
    for i in 0..sentences.len() {
        let from = sentences[i].0;
        let mut to = sentences[i].1;
        for s in &sentences[i + 1..] {
            if estimate_tokens(&text[from..to]) >= PASSAGE_TOKENS {
                break;
            }
            to = s.1;
        }
        out.push(text[from..to].trim());
        if to == text.len() {
            break;
        }
    }
    out
}

/// The passage of `content` that best answers `query` (see the module
/// docs), or `None` when `content` is not longer than
/// [`EXCERPT_FROM_TOKENS`] or has a single passage. Passages are ranked
/// by the idf-weighted share of the query's terms they hold; the best
/// [`EMBEDDED_PASSAGES`] (evenly spread ones when no passage holds a query
/// term, as for a question in another language) are embedded, and the
/// passage with the highest cosine plus [`TERM_WEIGHT`] times its share
/// wins.
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
    let share: Vec<f32> = held
        .iter()
        .map(|have| {
            if mass > 0.0 {
                terms.iter().zip(&idf).filter(|(t, _)| have.contains(t)).map(|(_, w)| w).sum::<f32>() / mass
            } else {
                0.0
            }
        })
        .collect();
    let mut chosen: Vec<usize> = (0..ps.len()).collect();
    if share.iter().any(|&s| s > 0.0) {
        chosen.sort_by(|&a, &b| share[b].total_cmp(&share[a]).then(a.cmp(&b)));
        chosen.truncate(EMBEDDED_PASSAGES);
    } else if ps.len() > EMBEDDED_PASSAGES {
        let step = ps.len() as f32 / EMBEDDED_PASSAGES as f32;
        chosen = (0..EMBEDDED_PASSAGES).map(|k| (k as f32 * step) as usize).collect();
    }
    let texts: Vec<&str> = chosen.iter().map(|&k| ps[k]).collect();
    let vectors = embedder.embed(&texts, EmbedKind::Passage)?;
    let mut best: Option<(f32, &str)> = None;
    for (&k, v) in chosen.iter().zip(&vectors) {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::EPSILON);
        let cos = v.iter().zip(query_vector).map(|(a, b)| a * b).sum::<f32>() / norm;
        let s = cos + TERM_WEIGHT * share[k];
        if best.is_none_or(|(b, _)| s > b) {
            best = Some((s, ps[k]));
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
        // Every sentence starts a passage, and the last one reaches the end.
        assert!(ps.len() >= 30);
        assert!(text.trim().ends_with(ps.last().unwrap()));
        let zh = "今天开会讨论了很多事情。".repeat(60);
        assert!(passages(&zh).len() > 3);
    }
}
