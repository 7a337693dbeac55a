//! Excerpts of long memories: the passages of a long memory that answer the
//! query, for the block to quote when the whole memory does not fit.
//!
//! A memory's vector is made from the encoder's window only (512 tokens for
//! the BERT models; the rest of a longer text is not read), and a block cut
//! to a long memory's opening words drops whatever its end says. So for a
//! recalled memory longer than [`EXCERPT_FROM_TOKENS`], its text is split
//! into consecutive passages of about [`PASSAGE_TOKENS`] at sentence ends,
//! the passages are embedded beside the query, and the best
//! [`EXCERPT_PASSAGES`] (cosine plus the share of the query's terms they
//! hold, [`TERM_WEIGHT`]; the passage after the best one favoured by
//! [`FOLLOW_BONUS`]) are offered to the block
//! ([`crate::recall::BlockParts::excerpts`]): the passage that names a topic
//! and the one that settles it are often apart.

use crate::embed::{EmbedKind, Embedder};
use crate::error::Result;
use crate::recall::estimate_tokens;

/// Memories longer than this many tokens ([`estimate_tokens`]) get an
/// excerpt: longer than half the default 400-token budget, a memory seldom
/// fits a block whole beside anything else.
pub const EXCERPT_FROM_TOKENS: usize = 200;

/// Tokens of one passage, about: five or six sentences of English, a
/// paragraph of Chinese; two fit the relevant part of a 400-token block.
/// Chosen on LoCoMo dev sessions taken as long memories (the answer turn
/// quoted, two passages: 100 tokens 102 of 120, 150 tokens 106 of 120) and the
/// everyday-questions dev split.
pub const PASSAGE_TOKENS: usize = 150;

/// Passages an excerpt quotes at most, best first where the budget does
/// not hold them all: one placed the answer turn of 94 of 120 LoCoMo dev
/// sessions, two 106.
pub const EXCERPT_PASSAGES: usize = 2;

/// Weight of the share of the query's terms a passage holds, added to its
/// cosine. A small encoder's cosines between a question and the passages of
/// one text are close together; the words the question names break the
/// tie toward the passage that holds them (LoCoMo dev sessions, two
/// passages: weight 0 placed 97 of 120 answer turns, 0.2 placed 106).
pub const TERM_WEIGHT: f32 = 0.2;

/// Added to the score of the passage right after the best one when the
/// second passage is picked: a text names a topic and settles it a little
/// later ("last item, the analytics store …" and then the choice), so the
/// continuation wins a near tie. Chosen on LoCoMo dev sessions taken as
/// long memories (single-evidence questions, two passages: 0 placed the
/// answer turn of 440 of 565, 0.03 442, 0.05 443, 0.1 440, always the next
/// passage 436) and the everyday-questions dev split (long memories: 0 and
/// 0.1 passed 4 of 6, 0.03 and 0.05 5, always the next 2).
pub const FOLLOW_BONUS: f32 = 0.05;

/// Most passages embedded for one memory (every passage of a memory up to
/// about 3,600 tokens): past that, the query's terms pick them (see
/// [`best_passages`]), so a long memory costs one embedding call of a
/// bounded size at query time.
pub const EMBEDDED_PASSAGES: usize = 24;

/// Most long memories of one block that get an excerpt (the best-ranked
/// ones): each costs one embedding call over its passages.
pub const MAX_EXCERPTS: usize = 3;

/// `text` in consecutive passages of about [`PASSAGE_TOKENS`], cut at
/// sentence ends (after `.` `!` `?` `。` `！` `？` `；` or a line break): each
/// runs from where the last ended to the end of the sentence that reaches
/// [`PASSAGE_TOKENS`]. A sentence longer than a passage is cut at
/// [`PASSAGE_TOKENS`] tokens' worth. The passages, trimmed, cover every
/// sentence of the text once, in order.
pub fn passages(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    // The passage's estimate, kept as its two counts (see
    // `estimate_tokens`) so that the text is read once.
    let (mut cjk, mut other) = (0usize, 0usize);
    let mut sentence_cjk_other = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        if super::context::whole_token(c) {
            cjk += 1;
            sentence_cjk_other.0 += 1;
        } else {
            other += 1;
            sentence_cjk_other.1 += 1;
        }
        let sentence_long = sentence_cjk_other.0 + sentence_cjk_other.1.div_ceil(4) >= PASSAGE_TOKENS;
        let sentence_end = matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '；' | '\n') || sentence_long;
        if sentence_end {
            sentence_cjk_other = (0, 0);
            if cjk + other.div_ceil(4) >= PASSAGE_TOKENS {
                let p = text[start..end].trim();
                if !p.is_empty() {
                    out.push(p);
                }
                start = end;
                (cjk, other) = (0, 0);
            }
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The passages of `content` that best answer `query` (see the module
/// docs), at most [`EXCERPT_PASSAGES`], best first; empty when `content` is
/// not longer than [`EXCERPT_FROM_TOKENS`] or has a single passage.
/// Passages are ranked by the idf-weighted share of the query's terms they
/// hold; the best [`EMBEDDED_PASSAGES`] (evenly spread ones when no passage
/// holds a query term, as for a question in another language) are
/// embedded, and those with the highest cosine plus [`TERM_WEIGHT`] times
/// their share win, the passage after the best one with [`FOLLOW_BONUS`]
/// added.
///
/// # Errors
/// [`crate::Error::Embedder`] when embedding fails.
pub fn best_passages<'a>(
    embedder: &dyn Embedder,
    query: &str,
    query_vector: &[f32],
    content: &'a str,
) -> Result<Vec<&'a str>> {
    if estimate_tokens(content) <= EXCERPT_FROM_TOKENS {
        return Ok(Vec::new());
    }
    let ps = passages(content);
    if ps.len() < 2 {
        return Ok(Vec::new());
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
    if ps.len() > EMBEDDED_PASSAGES {
        if share.iter().any(|&s| s > 0.0) {
            chosen.sort_by(|&a, &b| share[b].total_cmp(&share[a]).then(a.cmp(&b)));
            chosen.truncate(EMBEDDED_PASSAGES);
        } else {
            let step = ps.len() as f32 / EMBEDDED_PASSAGES as f32;
            chosen = (0..EMBEDDED_PASSAGES).map(|k| (k as f32 * step) as usize).collect();
        }
    }
    let texts: Vec<&str> = chosen.iter().map(|&k| ps[k]).collect();
    let vectors = embedder.embed(&texts, EmbedKind::Passage)?;
    let mut scored: Vec<(f32, usize)> = chosen
        .iter()
        .zip(&vectors)
        .map(|(&k, v)| {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::EPSILON);
            let cos = v.iter().zip(query_vector).map(|(a, b)| a * b).sum::<f32>() / norm;
            (cos + TERM_WEIGHT * share[k], k)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    // The second pick: the passage right after the best one gains
    // [`FOLLOW_BONUS`] (the topic named, then settled).
    if let Some(&(_, best)) = scored.first() {
        for s in scored.iter_mut().skip(1) {
            if s.1 == best + 1 {
                s.0 += FOLLOW_BONUS;
            }
        }
        scored[1..].sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    Ok(scored.into_iter().take(EXCERPT_PASSAGES).map(|(_, k)| ps[k]).collect())
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
        // Consecutive: together they are the text, every sentence once.
        assert_eq!(ps.join(" "), text.trim());
        let zh = "今天开会讨论了很多事情。".repeat(60);
        let zps = passages(&zh);
        assert!(zps.len() > 3);
        assert_eq!(zps.concat(), zh);
        // A sentence longer than a passage is cut.
        let run = "字".repeat(PASSAGE_TOKENS * 3);
        assert_eq!(passages(&run).len(), 3);
    }
}
