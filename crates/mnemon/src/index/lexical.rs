//! In-memory BM25 index.

use std::fmt;
use std::hash::BuildHasher;

use smallvec::SmallVec;

use super::exact::{Hit, IdMap, TopK};

thread_local! {
    /// Per-thread score array and touched slots of [`LexicalIndex::search`]
    /// (all zero and empty between searches), so that a search allocates
    /// nothing once the array has grown to the largest index searched.
    static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<u32>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

#[cfg(test)]
thread_local! {
    /// Searches of this thread that looked terms up instead of walking them.
    static PRUNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
use crate::text::{has_cjk, is_stop_word, tokenize};

/// BM25 term-frequency saturation `k1` (Robertson & Sparck Jones; the common
/// default from Robertson & Zaragoza, "The Probabilistic Relevance Framework:
/// BM25 and Beyond", 2009).
pub const BM25_K1: f32 = 1.2;
/// BM25 document-length normalisation `b` (same source as [`BM25_K1`]).
pub const BM25_B: f32 = 0.75;

/// Weight of a word-bigram term relative to a single word (see
/// [`LexicalIndex`]). Measured on the LoCoMo dev split (evidence
/// recall@10, Porter2 stemming on both sides): without bigrams lexical
/// 0.613, hybrid 0.610 (hashing embedder), 0.683 (all-MiniLM-L6-v2), 0.655
/// (multilingual-e5-small); with weight 0.25: 0.614, 0.611, 0.687, 0.662.
/// Weights 0.15 and 0.35 land within 0.003 of these; 0.5 and 1.0 lose
/// hybrid recall (hashing 0.610, 0.603).
pub const BIGRAM_WEIGHT: f32 = 0.25;

/// Separator inside a word-bigram term. [`tokenize`] never yields a space,
/// so a bigram term cannot collide with a single-token term.
const BIGRAM_SEP: char = ' ';

/// One posting: the slot of a document containing the term and the
/// term's frequency in it (8 bytes; the document's id and length are the
/// slot's, in [`LexicalIndex`]'s slot tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Posting {
    slot: u32,
    tf: u32,
}

#[derive(Debug)]
struct Doc {
    /// Number of indexed tokens (after stop-word removal).
    len: u32,
    /// The document's slot: its postings name it by this number.
    slot: u32,
    /// Distinct term ids in the document.
    terms: Box<[u32]>,
}

/// A term's postings, sorted by slot. Most terms of a large index occur in
/// one or two documents only (rare words, names, numbers and most word
/// bigrams), so the first two postings are held inline: no allocation of
/// their own (`union`: 24 bytes, as one inline 16-byte posting took before).
type PostingList = SmallVec<[Posting; 2]>;

/// The id a free slot holds.
const NO_DOC: u64 = u64::MAX;

/// Free slots at which the slot tables are renumbered (when they are also
/// at least half of all slots), so that a store that forgets much does not
/// keep dead slots.
const RENUMBER_FREE_SLOTS: usize = 1024;

/// Relative margin of [`LexicalIndex::search`]'s pruning: a document is
/// dropped only when its bound is under the floor by more than this share,
/// far above the rounding of a sum of a few dozen `f32` terms (~10⁻⁶).
const PRUNE_MARGIN: f64 = 1e-4;

/// The first position at or after `from` of `list` (sorted by slot) whose
/// slot is not below `slot`: an exponential search from `from`, so a run
/// of ascending lookups costs `O(log gap)` each.
fn gallop(list: &[Posting], from: usize, slot: u32) -> usize {
    let mut lo = from;
    let mut step = 1usize;
    while let Some(p) = list.get(lo + step - 1) {
        if p.slot >= slot {
            break;
        }
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(list.len());
    lo + list[lo..hi].partition_point(|p| p.slot < slot)
}

/// BM25 lexical index over the tokens of [`tokenize`] minus
/// [stop words](super::is_stop_word), plus word bigrams.
///
/// **Terms.** A text's terms are its tokens without stop words and, for each
/// two tokens adjacent in that sequence that are both non-CJK, the bigram
/// `"a b"` (so `"joined a pottery class"` gives `join`, `potteri`, `class`,
/// `join potteri`, `potteri class`). CJK tokens are already character
/// bigrams and take no part in word bigrams: pairing them (in effect
/// character trigrams) lowered MADial-Bench zh dev recall@10 from 0.622 to
/// 0.611 (lexical). A document's length `|d|` counts its tokens only.
///
/// Scoring (Okapi BM25, Robertson & Sparck Jones, with `k1 = 1.2`,
/// `b = 0.75`, see [`BM25_K1`], [`BM25_B`]): for each distinct query term `t`
/// present in document `d`,
///
/// ```text
/// idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))        (always > 0)
/// score   += idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·|d| / avgdl))
/// ```
///
/// where `N` is the number of indexed documents, `df(t)` the number containing
/// `t`, `tf` the count of `t` in `d`, `|d|` the token count of `d` and `avgdl`
/// the mean token count. (This `idf` is the non-negative variant used by
/// Lucene.) Repeated query terms count once. A bigram term's contribution is
/// multiplied by [`BIGRAM_WEIGHT`] (0.25), so a memory that has two query
/// words side by side, as the query has them, ranks above one that has the
/// same words apart; single words still decide most of the score.
///
/// **Layout.** A posting names its document by a 32-bit *slot* instead of
/// its 64-bit id; the slot tables map it to the id and the document's
/// length. A posting is 8 bytes instead of 16, and a term held by one or
/// two documents needs no allocation of its own. Slots are handed out in
/// ascending order and never reused, so a new document's postings are
/// appended to their lists (no list is shifted, whatever the ids); a
/// removal frees its slot, and once free slots reach
/// `RENUMBER_FREE_SLOTS` (1,024) and half of all slots, every slot is
/// renumbered in one pass in the same order (lists stay sorted), which
/// costs one pass over the postings per that many removals.
///
/// Statistics are integer counts and a document's score sums its terms in
/// the query's term order, so after any sequence of inserts and removals
/// the postings (read as documents, not slots) equal those of an index built
/// from scratch with the remaining documents, and scores are bit-for-bit
/// equal.
pub struct LexicalIndex {
    /// term → term id: a table of term ids hashed by their term's text,
    /// which only `terms` holds, so each term's text is stored once.
    dict: hashbrown::HashTable<u32>,
    /// Hash of a term's text for `dict` (foldhash: several times cheaper
    /// than SipHash on short terms, randomly seeded per process).
    hasher: foldhash::fast::RandomState,
    /// term id → postings, sorted by slot. Empty lists are recycled.
    postings: Vec<PostingList>,
    /// term id → term (empty for a recycled id).
    terms: Vec<Box<str>>,
    /// Recycled term ids.
    free: Vec<u32>,
    docs: IdMap<Doc>,
    /// slot → document id ([`NO_DOC`] for a free slot).
    slot_ids: Vec<u64>,
    /// slot → document length in tokens (read by scoring).
    slot_lens: Vec<u32>,
    /// Number of free slots (their id is [`NO_DOC`]).
    free_slots: usize,
    /// Sum of document lengths.
    total_len: u64,
}

impl Default for LexicalIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl LexicalIndex {
    /// An empty index.
    pub fn new() -> Self {
        LexicalIndex {
            dict: hashbrown::HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            postings: Vec::new(),
            terms: Vec::new(),
            free: Vec::new(),
            docs: IdMap::default(),
            slot_ids: Vec::new(),
            slot_lens: Vec::new(),
            free_slots: 0,
            total_len: 0,
        }
    }

    /// Indexes `text` as document `id`, replacing any previous text of `id`.
    ///
    /// A text with no indexable token (empty, punctuation, stop words only)
    /// is still counted as a document of length 0. Cost: tokenisation plus
    /// one dictionary lookup and one append per distinct term, word bigrams
    /// included, in any id order (plus, for a replacement, the removal).
    pub fn insert(&mut self, id: u64, text: &str) {
        self.remove(id);
        let mut tokens = tokenize(text);
        tokens.retain(|t| !is_stop_word(t));
        let len = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        let pairs = word_bigrams(&tokens);
        tokens.extend(pairs);
        // Sorted so that term ids are assigned in a deterministic order;
        // equal tokens are then adjacent and counted as one term.
        tokens.sort_unstable();
        // Slots are counted in `u32`: past 2³² − 1 documents in one index
        // (far beyond what a namespace holds in memory) two would share one.
        let slot = u32::try_from(self.slot_ids.len()).expect("fewer than 2^32 documents in one lexical index");
        self.slot_ids.push(id);
        self.slot_lens.push(len);
        let mut terms = Vec::with_capacity(tokens.len());
        let mut rest = tokens.as_slice();
        while let Some(first) = rest.first() {
            let run = rest.iter().take_while(|t| *t == first).count();
            let tf = u32::try_from(run).unwrap_or(u32::MAX);
            let tid = self.intern(first);
            rest = &rest[run..];
            let list = &mut self.postings[tid as usize];
            // The newest slot is the largest: appending keeps the list sorted.
            debug_assert!(list.last().is_none_or(|p| p.slot < slot));
            list.push(Posting { slot, tf });
            terms.push(tid);
        }
        self.total_len += u64::from(len);
        self.docs.insert(id, Doc { len, slot, terms: terms.into_boxed_slice() });
    }

    /// Removes document `id`. Returns `false` if it was not indexed.
    /// Statistics (N, df, avgdl) are updated exactly.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(doc) = self.docs.remove(&id) else {
            return false;
        };
        self.total_len -= u64::from(doc.len);
        for &tid in doc.terms.iter() {
            let Some(list) = self.postings.get_mut(tid as usize) else {
                continue;
            };
            if let Ok(pos) = list.binary_search_by_key(&doc.slot, |p| p.slot) {
                list.remove(pos);
            }
            if list.is_empty() {
                self.release(tid);
            }
        }
        self.free_slot(doc.slot);
        self.renumber_if_sparse();
        true
    }

    /// Marks `slot` free.
    fn free_slot(&mut self, slot: u32) {
        if let Some(id) = self.slot_ids.get_mut(slot as usize) {
            *id = NO_DOC;
            self.slot_lens[slot as usize] = 0;
            self.free_slots += 1;
        }
    }

    /// Renumbers the slots of the live documents `0..n` in their present
    /// order once free slots reach [`RENUMBER_FREE_SLOTS`] and half of all
    /// slots: the map is increasing, so every posting list stays sorted.
    fn renumber_if_sparse(&mut self) {
        if self.free_slots < RENUMBER_FREE_SLOTS || self.free_slots * 2 < self.slot_ids.len() {
            return;
        }
        let mut map = vec![u32::MAX; self.slot_ids.len()];
        let mut next = 0usize;
        for (old, new) in map.iter_mut().enumerate() {
            let id = self.slot_ids[old];
            if id != NO_DOC {
                *new = next as u32;
                self.slot_ids[next] = id;
                self.slot_lens[next] = self.slot_lens[old];
                next += 1;
            }
        }
        self.slot_ids.truncate(next);
        self.slot_lens.truncate(next);
        self.slot_ids.shrink_to(next + next / 4);
        self.slot_lens.shrink_to(next + next / 4);
        for list in &mut self.postings {
            for p in list.iter_mut() {
                p.slot = map[p.slot as usize];
            }
        }
        for doc in self.docs.values_mut() {
            doc.slot = map[doc.slot as usize];
        }
        self.free_slots = 0;
    }

    /// Removes every document of `ids` that is indexed (others are
    /// ignored) and returns how many were. Same result as calling
    /// [`LexicalIndex::remove`] for each, but each posting list they touch
    /// is filtered once: linear in the postings touched, where one
    /// `remove` per document shifts a list once per removed document
    /// (quadratic when many documents share common terms, as after
    /// replaying a log that forgot many memories).
    pub fn remove_many(&mut self, ids: &[u64]) -> usize {
        let mut gone: std::collections::HashSet<u32> = std::collections::HashSet::with_capacity(ids.len());
        let mut touched: Vec<u32> = Vec::new();
        for &id in ids {
            if let Some(doc) = self.docs.remove(&id) {
                self.total_len -= u64::from(doc.len);
                touched.extend(doc.terms.iter());
                gone.insert(doc.slot);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for tid in touched {
            let Some(list) = self.postings.get_mut(tid as usize) else {
                continue;
            };
            list.retain(|p| !gone.contains(&p.slot));
            if list.is_empty() {
                self.release(tid);
            }
        }
        let n = gone.len();
        for slot in gone {
            self.free_slot(slot);
        }
        self.renumber_if_sparse();
        n
    }

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether no document is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Whether document `id` is indexed.
    pub fn contains(&self, id: u64) -> bool {
        self.docs.contains_key(&id)
    }

    /// The ids of the indexed documents, in no particular order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.docs.keys().copied()
    }

    /// The `k` best documents for `query` among ids for which `filter(id)`
    /// is true, as `(id, BM25 score)`, best first (ties: smaller id first).
    ///
    /// Scores are the BM25 sum described on [`LexicalIndex`], word bigrams
    /// of the query weighted by [`BIGRAM_WEIGHT`].
    /// Only documents sharing at least one term with the query are scored,
    /// so every returned score is > 0; a query with no indexed term returns
    /// nothing. Scores are unbounded above and comparable only within one
    /// index state. `filter` must be a pure function of the id: it may be
    /// called more than once for a document, and not at all for one that
    /// cannot rank.
    ///
    /// **Pruning** (exact: the result is that of scoring every matching
    /// document, bit for bit). The terms are walked from the highest upper
    /// bound down (a term's contribution is below `idf·weight·(k1 + 1)`).
    /// Before a term whose postings, with those after it, outnumber four
    /// times the documents scored so far, the `k`-th best partial score of
    /// a document that passes `filter` is a floor under the final `k`-th
    /// score (contributions are positive); when the bounds of the terms
    /// left sum under that floor, no document unseen so far can rank, and
    /// the terms left count for the documents seen only: a list longer than
    /// twice the documents still in the running is searched for each of
    /// them (an exponential search, lists being sorted by slot), a shorter
    /// one walked; a document is dropped once its partial score plus the
    /// bounds left falls under the floor. The
    /// common words of a large store (held by most memories, with the
    /// longest lists and the smallest `idf`) are so looked up instead of
    /// walked. Comparisons keep a relative margin of 10⁻⁴ against rounding.
    pub fn search(&self, query: &str, k: usize, filter: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)> {
        self.search_pruned(query, k, filter, true)
    }

    /// [`LexicalIndex::search`], with the pruning on or off (off scores
    /// every matching document; the two agree bit for bit).
    fn search_pruned(&self, query: &str, k: usize, filter: &dyn Fn(u64) -> bool, prune: bool) -> Vec<(u64, f32)> {
        if k == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        let words: Vec<String> = tokenize(query).into_iter().filter(|t| !is_stop_word(t)).collect();
        let mut q: Vec<(String, f32)> = word_bigrams(&words).into_iter().map(|b| (b, BIGRAM_WEIGHT)).collect();
        q.extend(words.into_iter().map(|w| (w, 1.0)));
        q.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        q.dedup_by(|a, b| a.0 == b.0);
        let n = self.docs.len() as f32;
        let avgdl = (self.total_len as f64 / self.docs.len() as f64) as f32;
        // The indexed query terms as (idf·weight, postings), in the order a
        // document's score sums them: upper bound descending, then term
        // text (a function of the index state, not of slots, so a rebuilt
        // index scores bit for bit alike).
        let mut terms: Vec<(f32, &PostingList, &str)> = q
            .iter()
            .filter_map(|(term, weight)| {
                let list = self.postings.get(self.term_id(term)? as usize)?;
                let df = list.len() as f32;
                Some((weight * (1.0 + (n - df + 0.5) / (df + 0.5)).ln(), list, term.as_str()))
            })
            .collect();
        terms.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.cmp(b.2)));
        // rest[j]: the sum of the upper bounds of terms j.. (f64).
        let mut rest = vec![0.0f64; terms.len() + 1];
        let mut postings_left = vec![0usize; terms.len() + 1];
        for j in (0..terms.len()).rev() {
            rest[j] = rest[j + 1] + f64::from(terms[j].0) * f64::from(BM25_K1 + 1.0);
            postings_left[j] = postings_left[j + 1] + terms[j].1.len();
        }
        // tf·(k1+1) / (tf + k1·(1 − b) + k1·b/avgdl·|d|): one division a
        // posting.
        let (fixed, per_token) = (BM25_K1 * (1.0 - BM25_B), if avgdl > 0.0 { BM25_K1 * BM25_B / avgdl } else { 0.0 });
        let contribution = |idf: f32, p: &Posting| {
            let tf = p.tf as f32;
            let len = self.slot_lens.get(p.slot as usize).copied().unwrap_or(0);
            idf * tf * (BM25_K1 + 1.0) / (tf + fixed + per_token * len as f32)
        };
        // Scores by slot, in a dense array kept per thread (its length the
        // slot count, zero outside a search) with the slots touched. Every
        // term's contribution is positive (idf > 0, tf ≥ 1), so a zero
        // score marks a slot not touched yet.
        let mut top = TopK::new(k);
        let mut rank = |scores: &mut Vec<f32>, touched: &mut Vec<u32>| {
            // Left by a search whose filter panicked.
            for slot in touched.drain(..) {
                if let Some(acc) = scores.get_mut(slot as usize) {
                    *acc = 0.0;
                }
            }
            if scores.len() < self.slot_ids.len() {
                scores.resize(self.slot_ids.len(), 0.0);
            }
            let mut probe_from = None;
            for (j, &(idf, list, _)) in terms.iter().enumerate() {
                if prune && j > 0 && touched.len() >= k && postings_left[j] >= 4 * touched.len() {
                    let floor = self.partial_floor(scores, touched, k, filter);
                    if rest[j] * (1.0 + PRUNE_MARGIN) < floor {
                        probe_from = Some((j, floor));
                        break;
                    }
                }
                for p in list {
                    let s = contribution(idf, p);
                    let Some(acc) = scores.get_mut(p.slot as usize) else { continue };
                    if *acc == 0.0 {
                        touched.push(p.slot);
                    }
                    *acc += s;
                }
            }
            let mut offer = |slot: u32, scores: &mut Vec<f32>| {
                let Some(acc) = scores.get_mut(slot as usize) else { return };
                let score = std::mem::take(acc);
                let Some(&id) = self.slot_ids.get(slot as usize) else { return };
                let hit = Hit { score, id };
                if score > 0.0 && top.would_accept(hit) && filter(id) {
                    top.push(hit);
                }
            };
            let Some((from, floor)) = probe_from else {
                for slot in touched.drain(..) {
                    offer(slot, scores);
                }
                return;
            };
            #[cfg(test)]
            PRUNED.with(|c| c.set(c.get() + 1));
            // The documents seen so far that can still rank, by slot; a
            // document once dropped is never taken back.
            let alive = |score: f32, rest: f64| (f64::from(score) + rest) * (1.0 + PRUNE_MARGIN) >= floor;
            let mut cands: Vec<u32> =
                touched.iter().copied().filter(|&slot| alive(scores[slot as usize], rest[from])).collect();
            let mut sorted = false;
            for (j, &(idf, list, _)) in terms.iter().enumerate().skip(from) {
                if list.len() <= 2 * cands.len() {
                    // A list about as short as the candidates: walked, its
                    // contributions added to the documents seen (a dropped
                    // one too, which no longer matters).
                    for p in list {
                        if let Some(acc) = scores.get_mut(p.slot as usize).filter(|acc| **acc > 0.0) {
                            *acc += contribution(idf, p);
                        }
                    }
                    continue;
                }
                // A longer list: each candidate looked up in it.
                cands.retain(|&slot| alive(scores[slot as usize], rest[j]));
                if !sorted {
                    cands.sort_unstable();
                    sorted = true;
                }
                let mut at = 0usize;
                for &slot in &cands {
                    at = gallop(list, at, slot);
                    if let Some(p) = list.get(at).filter(|p| p.slot == slot) {
                        scores[slot as usize] += contribution(idf, p);
                    }
                }
            }
            cands.retain(|&slot| alive(scores[slot as usize], 0.0));
            for &slot in &cands {
                offer(slot, scores);
            }
            for slot in touched.drain(..) {
                scores[slot as usize] = 0.0;
            }
        };
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                let (scores, touched) = &mut *scratch;
                rank(scores, touched);
            }
            // A search from inside a filter of this thread's search.
            Err(_) => rank(&mut Vec::new(), &mut Vec::new()),
        });
        top.into_sorted()
    }

    /// The `k`-th best partial score among the `touched` documents that
    /// pass `filter`, or −∞ when it cannot be told cheaply (fewer than `k`
    /// of the best `4·k` partial scores pass). A floor under the final
    /// `k`-th best score, since every contribution left is positive.
    fn partial_floor(&self, scores: &[f32], touched: &[u32], k: usize, filter: &dyn Fn(u64) -> bool) -> f64 {
        let mut best = TopK::new(k.saturating_mul(4));
        for &slot in touched {
            let hit = Hit { score: scores[slot as usize], id: u64::from(slot) };
            if best.would_accept(hit) {
                best.push(hit);
            }
        }
        let mut passed = 0usize;
        for (slot, score) in best.into_sorted() {
            let Some(&id) = self.slot_ids.get(slot as usize) else { continue };
            if id != NO_DOC && filter(id) {
                passed += 1;
                if passed == k {
                    return f64::from(score);
                }
            }
        }
        f64::NEG_INFINITY
    }

    /// The sum of `idf(t)` over the distinct non-stop-word tokens of `query`
    /// (single tokens only, not word bigrams)
    /// (a term absent from the index counts with `df = 0`): the BM25 score of
    /// a document of average length holding each query term once, and so a
    /// query-specific scale for BM25 scores that does not depend on which
    /// documents were retrieved. 0 for a query with no terms or an empty index.
    pub fn idf_mass(&self, query: &str) -> f32 {
        if self.docs.is_empty() {
            return 0.0;
        }
        let mut q: Vec<String> = tokenize(query).into_iter().filter(|t| !is_stop_word(t)).collect();
        q.sort_unstable();
        q.dedup();
        let n = self.docs.len() as f32;
        q.iter()
            .map(|term| {
                let df =
                    self.term_id(term).and_then(|tid| self.postings.get(tid as usize)).map_or(0.0, |l| l.len() as f32);
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .sum()
    }

    /// Names in `query` that no document of the index holds: words that
    /// begin with an upper-case letter other than a sentence's first word,
    /// that are not stop words, month or weekday names or family words
    /// (`Mom`, `Dad`, `Grandma`), and none of whose
    /// terms (as [`tokenize`] stems them) occurs in any document; a
    /// possessive `'s` is dropped. In the query's order, each once. A question about a person, place or thing
    /// the store never heard of (`"What did Jean say?"` where nobody is
    /// called Jean) is about something it does not hold, however close its
    /// other words come. Scripts without case have no such names.
    pub fn unknown_names(&self, query: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in query_names(query) {
            let terms: Vec<String> = tokenize(&name.to_lowercase()).into_iter().filter(|t| !is_stop_word(t)).collect();
            let known = terms.iter().any(|t| {
                self.term_id(t).and_then(|tid| self.postings.get(tid as usize)).is_some_and(|l| !l.is_empty())
            });
            if !known && !out.iter().any(|w| w == name) {
                out.push(name.to_string());
            }
        }
        for word in self.unknown_relations(query) {
            if !out.contains(&word) {
                out.push(word);
            }
        }
        out
    }

    /// The relation words of `query` (kin and the people of one's life:
    /// "sister", "landlord", "dentist", "表妹", "二舅", "外婆"; [`RELATIONS`])
    /// that no document names by any word of their group ("mom" is known
    /// where a document says "mother"), each group once, in the order of
    /// [`RELATIONS`]. A question about one's sister in a store that only
    /// knows the brother is about someone it does not hold.
    pub fn unknown_relations(&self, query: &str) -> Vec<String> {
        let named = relation_words(query);
        let known = |w: &str| {
            let terms = tokenize(w);
            !terms.is_empty()
                && terms.iter().all(|t| {
                    self.term_id(t).and_then(|tid| self.postings.get(tid as usize)).is_some_and(|l| !l.is_empty())
                })
        };
        let mut out = Vec::new();
        for group in RELATIONS {
            // A group that opens with a Chinese word is named by its Chinese
            // words only: its English word is there to make it known.
            let chinese = group.first().is_some_and(|w| !w.is_ascii());
            let name = group.iter().find(|w| !(chinese && w.is_ascii()) && named.contains(w));
            if let Some(w) = name {
                if !group.iter().any(|g| known(g)) && !out.iter().any(|o| o == w) {
                    out.push((*w).to_string());
                }
            }
        }
        out
    }

    /// Estimated heap bytes held: posting lists (8 bytes a posting; a
    /// list's first two postings inline), term texts and dictionary,
    /// per-document term lists, slot tables and maps. Capacity-based.
    pub fn memory_bytes(&self) -> usize {
        let list = std::mem::size_of::<PostingList>();
        let postings: usize = self
            .postings
            .iter()
            .map(|l| list + if l.spilled() { l.capacity() * std::mem::size_of::<Posting>() } else { 0 })
            .sum::<usize>();
        let slots = self.slot_ids.capacity() * 8 + self.slot_lens.capacity() * 4;
        let terms: usize = self.terms.iter().map(|t| t.len() + 16).sum();
        let dict = (self.dict.capacity() * (4 + 1)) * 8 / 7;
        let docs: usize = self.docs.values().map(|d| d.terms.len() * 4).sum::<usize>()
            + self.docs.capacity() * (8 + std::mem::size_of::<Doc>() + 1) * 8 / 7;
        std::mem::size_of::<Self>() + postings + terms + dict + docs + slots + self.free.capacity() * 4
    }

    /// The id of `term`, if some document holds it.
    fn term_id(&self, term: &str) -> Option<u32> {
        let terms = &self.terms;
        self.dict.find(self.hasher.hash_one(term), |&tid| &*terms[tid as usize] == term).copied()
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(tid) = self.term_id(term) {
            return tid;
        }
        let tid = match self.free.pop() {
            Some(tid) => {
                self.terms[tid as usize] = term.into();
                tid
            }
            None => {
                let tid = self.terms.len() as u32;
                self.terms.push(term.into());
                self.postings.push(PostingList::new());
                tid
            }
        };
        let Self { dict, terms, hasher, .. } = self;
        dict.insert_unique(hasher.hash_one(term), tid, |&t| hasher.hash_one(&*terms[t as usize]));
        tid
    }

    /// Forgets term `tid`, whose posting list has become empty, and keeps
    /// its id for reuse.
    fn release(&mut self, tid: u32) {
        let hash = self.hasher.hash_one(&*self.terms[tid as usize]);
        if let Ok(entry) = self.dict.find_entry(hash, |&t| t == tid) {
            entry.remove();
        }
        self.terms[tid as usize] = Box::default();
        self.postings[tid as usize] = PostingList::new();
        self.free.push(tid);
    }

    /// Canonical view of the index statistics, independent of insertion
    /// history and slots: (N, total length, term → (document id, tf,
    /// document length) by id).
    #[cfg(test)]
    #[allow(clippy::type_complexity)]
    fn snapshot(&self) -> (usize, u64, std::collections::BTreeMap<String, Vec<(u64, u32, u32)>>) {
        let mut m = std::collections::BTreeMap::new();
        for &tid in &self.dict {
            let mut list: Vec<(u64, u32, u32)> = self.postings[tid as usize]
                .iter()
                .map(|p| (self.slot_ids[p.slot as usize], p.tf, self.slot_lens[p.slot as usize]))
                .collect();
            list.sort_unstable();
            m.insert(self.terms[tid as usize].to_string(), list);
        }
        // Every document's slot names it, and every other slot is free.
        for (id, doc) in &self.docs {
            assert_eq!(self.slot_ids[doc.slot as usize], *id);
            assert_eq!(self.slot_lens[doc.slot as usize], doc.len);
        }
        assert_eq!(self.docs.len() + self.free_slots, self.slot_ids.len());
        assert_eq!(self.slot_ids.iter().filter(|id| **id == NO_DOC).count(), self.free_slots);
        for list in &self.postings {
            assert!(list.windows(2).all(|w| w[0].slot < w[1].slot), "a posting list out of slot order");
        }
        (self.docs.len(), self.total_len, m)
    }
}

/// The word-bigram terms of a token sequence (stop words already removed):
/// `"a b"` for each adjacent pair in which neither token has a CJK
/// character, in text order, repeats kept.
fn word_bigrams(tokens: &[String]) -> Vec<String> {
    tokens
        .windows(2)
        .filter(|w| !has_cjk(&w[0]) && !has_cjk(&w[1]))
        .map(|w| {
            let mut s = String::with_capacity(w[0].len() + w[1].len() + 1);
            s.push_str(&w[0]);
            s.push(BIGRAM_SEP);
            s.push_str(&w[1]);
            s
        })
        .collect()
}

impl fmt::Debug for LexicalIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LexicalIndex")
            .field("docs", &self.docs.len())
            .field("terms", &self.dict.len())
            .field("total_len", &self.total_len)
            .finish()
    }
}

/// Family words written with a capital when they address or name one's own
/// relative (`Where does Mom live?`): a role the store may hold as `mother`,
/// not a name it never heard (English).
const KINSHIP_WORDS: &[&str] = &[
    "mom",
    "mommy",
    "mum",
    "mummy",
    "mother",
    "ma",
    "mama",
    "dad",
    "daddy",
    "father",
    "pa",
    "papa",
    "grandma",
    "granny",
    "grandmother",
    "grandpa",
    "grandfather",
    "nana",
    "gran",
    "grandad",
    "granddad",
    "auntie",
    "aunt",
    "uncle",
    "sis",
    "bro",
    "sister",
    "brother",
    "son",
    "daughter",
    "wife",
    "husband",
    "baby",
    "honey",
];

/// The names in `query`, each once, in its order: words that begin with an
/// upper-case letter other than a sentence's first word, that are not stop
/// words, month or weekday names, `I'm`-like contractions or family words
/// (`Mom`, `Dad`, `Grandma`), with a possessive `'s` dropped ("Mark's"
/// gives "Mark"). Scripts without case have no such names.
pub fn query_names(query: &str) -> Vec<&str> {
    let starts = sentence_first_words(query);
    let mut out: Vec<&str> = Vec::new();
    for word in query.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’')) {
        let word = word.trim_matches(|c| c == '\'' || c == '’');
        if !word.chars().next().is_some_and(char::is_uppercase) || word.chars().count() < 2 || starts.contains(&word) {
            continue;
        }
        let lower = word.to_lowercase().replace('’', "'");
        if lower.starts_with("i'")
            || crate::text::lexicon::en_month(&lower, true).is_some()
            || crate::text::lexicon::en_weekday(&lower).is_some()
            || KINSHIP_WORDS.contains(&lower.as_str())
        {
            continue;
        }
        let name = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")).unwrap_or(word);
        let content = tokenize(&name.to_lowercase()).into_iter().any(|t| !is_stop_word(&t));
        if content && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The relation words ([`RELATIONS`]) that `text` names, each once, in the
/// order of [`RELATIONS`]: an English word as a whole word in any case
/// (a possessive `'s` dropped: "Sister's" names "sister"), a Chinese word
/// where it occurs and no longer relation word holding it occurs too
/// ("外甥女" names the niece, not "外甥"), a phrase ("wife's parents") where
/// its words stand in a row. "Son Eli" names "son"; "Sonia" names nothing.
pub fn relation_words(text: &str) -> Vec<&'static str> {
    let lower = text.to_lowercase().replace('’', "'");
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.strip_suffix("'s").unwrap_or(w).trim_matches('\''))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<&'static str> = Vec::new();
    for w in RELATIONS.iter().flat_map(|g| g.iter().copied()) {
        if out.contains(&w) {
            continue;
        }
        let named = if w.contains(' ') {
            // A phrase ("wife's parents"): its words in a row.
            let phrase: Vec<&str> = w.split(' ').map(|p| p.strip_suffix("'s").unwrap_or(p)).collect();
            words.windows(phrase.len()).any(|run| run == phrase.as_slice())
        } else if w.is_ascii() {
            words.contains(&w)
        } else {
            lower.contains(w)
                && !RELATIONS
                    .iter()
                    .flat_map(|g| g.iter())
                    .any(|o| o.len() > w.len() && o.contains(w) && lower.contains(o))
        };
        if named {
            out.push(w);
        }
    }
    out
}

/// Relation words by group (a group is known where any of its words is):
/// kin and the people of one's life, in English and Chinese. A closed
/// class: a relation missing here only leaves its question to the cosine
/// floor.
pub const RELATIONS: &[&[&str]] = &[
    // Each English group holds the Chinese words it covers, so that a
    // question in one language about a person named in the other is not
    // about a stranger; the Chinese groups below keep the distinctions
    // Chinese makes (older or younger, the mother's or the father's side)
    // and hold the English word that covers them.
    &["mom", "mommy", "mum", "mummy", "mother", "mama", "妈妈", "母亲", "老妈"],
    &["dad", "daddy", "father", "papa", "爸爸", "父亲", "老爸"],
    &["grandma", "granny", "grandmother", "nana", "gran", "外婆", "姥姥", "奶奶", "祖母"],
    &["grandpa", "grandfather", "grandad", "granddad", "外公", "姥爷", "爷爷", "祖父"],
    &["aunt", "auntie", "姑姑", "姑妈", "阿姨", "姨妈", "大姑", "二姑", "小姑", "大姨", "二姨", "小姨", "舅妈"],
    &["uncle", "舅舅", "大舅", "二舅", "小舅", "叔叔", "伯伯", "大伯"],
    &["sister", "sis", "姐姐", "妹妹"],
    &["brother", "bro", "哥哥", "弟弟"],
    &["cousin", "表妹", "表姐", "表弟", "表哥", "堂妹", "堂姐", "堂弟", "堂哥"],
    &["niece", "侄女", "外甥女"],
    &["nephew", "侄子", "外甥"],
    &["wife", "老婆", "妻子", "太太"],
    &["husband", "老公", "丈夫"],
    &["son", "儿子"],
    &["daughter", "女儿"],
    &["boyfriend", "男朋友", "男友"],
    &["girlfriend", "女朋友", "女友"],
    &["fiance", "fiancee", "fiancé", "fiancée", "未婚夫", "未婚妻"],
    &["stepmother", "stepmom", "继母"],
    &["stepfather", "stepdad", "继父"],
    &[
        "in-laws",
        "parents-in-law",
        "mother-in-law",
        "father-in-law",
        "wife's parents",
        "husband's parents",
        "岳父",
        "岳母",
        "岳父母",
        "公公",
        "婆婆",
    ],
    &["boss", "manager", "supervisor", "老板", "领导", "上司"],
    &["colleague", "coworker", "co-worker", "同事"],
    &["roommate", "flatmate", "housemate", "室友"],
    &["neighbor", "neighbour", "邻居"],
    &["landlord", "landlady", "房东"],
    &["dentist", "orthodontist", "牙医", "牙科", "看牙"],
    &["therapist", "counselor", "counsellor", "psychologist", "心理医生", "咨询师"],
    &["vet", "veterinarian", "兽医"],
    &["babysitter", "nanny", "保姆", "阿姨"],
    &["tutor", "家教"],
    &["coach", "trainer", "教练"],
    &["lawyer", "attorney", "律师"],
    &["accountant", "会计"],
    &["mechanic", "修车师傅"],
    &["plumber", "水管工"],
    &["hairdresser", "barber", "stylist", "理发师", "发型师"],
    &["外婆", "姥姥", "grandma", "grandmother", "granny"],
    &["奶奶", "祖母", "grandma", "grandmother", "granny"],
    &["外公", "姥爷", "grandpa", "grandfather"],
    &["爷爷", "祖父", "grandpa", "grandfather"],
    &["姐姐", "sister"],
    &["妹妹", "sister"],
    &["哥哥", "brother"],
    &["弟弟", "brother"],
    &["表妹", "cousin"],
    &["表姐", "cousin"],
    &["表弟", "cousin"],
    &["表哥", "cousin"],
    &["堂妹", "cousin"],
    &["堂姐", "cousin"],
    &["堂弟", "cousin"],
    &["堂哥", "cousin"],
    &["舅舅", "舅妈", "uncle"],
    &["大舅", "uncle"],
    &["二舅", "uncle"],
    &["小舅", "uncle"],
    &["叔叔", "uncle"],
    &["伯伯", "大伯", "uncle"],
    &["姑姑", "姑妈", "aunt"],
    &["大姑", "aunt"],
    &["二姑", "aunt"],
    &["小姑", "aunt"],
    &["姨妈", "aunt"],
    &["大姨", "aunt"],
    &["二姨", "aunt"],
    &["小姨", "aunt"],
    &["侄女", "niece"],
    &["外甥女", "niece"],
    &["侄子", "nephew"],
    &["外甥", "nephew"],
];

/// The first word of every sentence of `text` (after its start, or after
/// `.`, `?`, `!` or their full-width forms).
fn sentence_first_words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at_start = true;
    let mut word_start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        let in_word = c.is_alphanumeric() || c == '\'' || c == '’';
        match (in_word, word_start) {
            (true, None) => word_start = Some(i),
            (false, Some(s)) => {
                if at_start {
                    out.push(text[s..i].trim_matches(|c| c == '\'' || c == '’'));
                }
                at_start = false;
                word_start = None;
            }
            _ => {}
        }
        if matches!(c, '.' | '?' | '!' | '。' | '？' | '！') {
            at_start = true;
        }
    }
    if let (Some(s), true) = (word_start, at_start) {
        out.push(text[s..].trim_matches(|c| c == '\'' || c == '’'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(_: u64) -> bool {
        true
    }

    fn corpus() -> Vec<(u64, &'static str)> {
        vec![
            (1, "I like my coffee strong and slightly acidic in the morning"),
            (2, "The cat sleeps on the warm windowsill all afternoon"),
            (3, "Booked flights to Tokyo for the conference in March"),
            (4, "我喜欢喝偏酸的咖啡"),
            (5, "他每天早上跑步五公里"),
            (6, "明天去北京出差，需要订酒店"),
            (7, "The conference keynote is about running large language models"),
            (8, "iPhone15手机的电池续航很好"),
        ]
    }

    fn build(docs: &[(u64, &str)]) -> LexicalIndex {
        let mut ix = LexicalIndex::new();
        for (id, t) in docs {
            ix.insert(*id, t);
        }
        ix
    }

    #[test]
    fn unknown_relations_are_groups_no_document_names() {
        let ix = build(&[
            (1, "Brother Jake's birthday is October 3"),
            (2, "表姐在广州当老师"),
            (3, "My mother lives in Leeds"),
        ]);
        assert_eq!(ix.unknown_relations("When is my sister's birthday?"), vec!["sister"]);
        assert!(ix.unknown_relations("When is my brother's birthday?").is_empty());
        // Another word of the group, or of the other language, is known.
        assert!(ix.unknown_relations("Where does mom live?").is_empty());
        assert!(ix.unknown_relations("我妈妈住在哪").is_empty());
        assert!(ix.unknown_relations("What does my cousin teach?").is_empty());
        assert_eq!(ix.unknown_relations("我表妹在哪工作？"), vec!["表妹"]);
        assert!(ix.unknown_relations("我表姐在哪工作？").is_empty());
    }

    #[test]
    fn unknown_names_are_capitalised_words_no_document_holds() {
        let ix = build(&corpus());
        // Tokyo is known (any case), Kyoto is not; the sentence's first word,
        // month names, stop words and "I'm" are never names.
        assert_eq!(ix.unknown_names("Did I fly to Tokyo or Kyoto in March?"), vec!["Kyoto"]);
        // A relation word no document names is unknown too.
        assert_eq!(ix.unknown_names("Kyoto? When did Jean's sister call"), vec!["Jean", "sister"]);
        assert_eq!(ix.unknown_names("Where I'm going The Friday trip"), Vec::<String>::new());
        assert_eq!(ix.unknown_names("what about tokyo and kyoto"), Vec::<String>::new());
        assert_eq!(ix.unknown_names("我们什么时候去北京"), Vec::<String>::new());
        assert_eq!(ix.unknown_names("Did Lena and Lena's dog visit Tokyo"), vec!["Lena"]);
        assert_eq!(LexicalIndex::new().unknown_names("Ask Tokyo"), vec!["Tokyo"]);
        // A relative called by their role is no stranger.
        // A relative called by their role is no name; a relation that no
        // document names is unknown all the same, after the names.
        assert_eq!(
            ix.unknown_names("Where does Mom live? When did Grandma and Dad visit Kyoto"),
            vec!["Kyoto", "mom", "dad", "grandma"]
        );
    }

    #[test]
    fn english_query_ranks_right_doc_first() {
        let ix = build(&corpus());
        let r = ix.search("what coffee do I like?", 3, &all);
        assert_eq!(r[0].0, 1, "{r:?}");
        let r = ix.search("flights to the conference", 3, &all);
        assert_eq!(r[0].0, 3, "{r:?}");
        assert!(r.iter().any(|(id, _)| *id == 7));
        let r = ix.search("cats sleeping", 3, &all);
        assert_eq!(r[0].0, 2, "{r:?}");
        assert!(r.iter().all(|(_, s)| *s > 0.0));
    }

    #[test]
    fn chinese_query_ranks_right_doc_first() {
        let ix = build(&corpus());
        let r = ix.search("咖啡", 3, &all);
        assert_eq!(r, vec![(4, r[0].1)]);
        let r = ix.search("喜欢什么咖啡", 3, &all);
        assert_eq!(r[0].0, 4, "{r:?}");
        let r = ix.search("北京酒店", 3, &all);
        assert_eq!(r[0].0, 6, "{r:?}");
        let r = ix.search("iphone 手机", 3, &all);
        assert_eq!(r[0].0, 8, "{r:?}");
    }

    #[test]
    fn no_shared_term_no_result_and_filter_honoured() {
        let ix = build(&corpus());
        assert!(ix.search("zebra", 5, &all).is_empty());
        assert!(ix.search("the of and", 5, &all).is_empty(), "stop words only");
        assert!(ix.search("", 5, &all).is_empty());
        assert!(ix.search("conference", 0, &all).is_empty());
        let r = ix.search("conference", 5, &|id| id != 3);
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![7]);
    }

    #[test]
    fn remove_and_replace() {
        let mut ix = build(&corpus());
        assert!(ix.remove(4));
        assert!(!ix.remove(4));
        assert!(ix.search("咖啡", 3, &all).is_empty());
        assert_eq!(ix.len(), 7);
        ix.insert(2, "a dog now sleeps there");
        assert!(ix.search("cat", 3, &all).is_empty());
        assert_eq!(ix.search("dog", 3, &all)[0].0, 2);
        assert_eq!(ix.len(), 7);
    }

    #[test]
    fn remove_many_equals_one_remove_per_document() {
        let docs = corpus();
        let mut one = build(&docs);
        let mut many = build(&docs);
        let ids = [4, 1, 77, 6, 4];
        for id in ids {
            one.remove(id);
        }
        assert_eq!(many.remove_many(&ids), 3);
        assert_eq!(one.len(), many.len());
        for q in ["cat", "咖啡", "coffee dog", "the quick brown", "sleeps"] {
            assert_eq!(one.search(q, 10, &all), many.search(q, 10, &all), "{q}");
        }
        // Freed terms are reused alike: new documents score the same too.
        one.insert(40, "a cat and a new word zebra");
        many.insert(40, "a cat and a new word zebra");
        for q in ["zebra", "cat"] {
            assert_eq!(one.search(q, 10, &all), many.search(q, 10, &all), "{q}");
        }
    }

    #[test]
    fn incremental_state_equals_rebuilt_state() {
        let docs = corpus();
        let mut inc = LexicalIndex::new();
        // Out-of-order inserts, replacements and removals.
        for (id, t) in docs.iter().rev() {
            inc.insert(*id, t);
        }
        inc.insert(2, "temporary text about coffee and cats");
        inc.insert(100, "another temporary coffee document");
        inc.remove(100);
        inc.remove(5);
        inc.insert(2, docs[1].1);
        inc.insert(9, "后来加的咖啡文档 coffee");
        let mut expected: Vec<(u64, &str)> = docs.into_iter().filter(|(id, _)| *id != 5).collect();
        expected.push((9, "后来加的咖啡文档 coffee"));
        let fresh = build(&expected);
        assert_eq!(inc.snapshot(), fresh.snapshot());
        // Every term id in use is in the dictionary once, no freed one is.
        assert_eq!(inc.dict.len(), inc.terms.iter().filter(|t| !t.is_empty()).count());
        for q in ["coffee", "咖啡", "conference running", "cat", "iphone 电池"] {
            assert_eq!(inc.search(q, 10, &all), fresh.search(q, 10, &all), "query {q}");
        }
        // Removing everything returns to the empty state.
        for (id, _) in &expected {
            assert!(inc.remove(*id));
        }
        assert_eq!(inc.snapshot(), LexicalIndex::new().snapshot());
        assert!(inc.dict.is_empty());
    }

    #[test]
    fn postings_are_eight_bytes_and_two_fit_inline() {
        assert_eq!(std::mem::size_of::<Posting>(), 8);
        assert_eq!(std::mem::size_of::<PostingList>(), 24);
        assert_eq!(PostingList::new().inline_size(), 2);
    }

    /// Random inserts, replacements, removals and batch removals, enough to
    /// renumber the slots several times: the postings (read as documents)
    /// and every score stay equal, bit for bit, to those of an index built
    /// from scratch with the documents left.
    #[test]
    fn slots_renumbered_after_many_removals_keep_scores_exact() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let words = ["coffee", "tea", "cat", "dog", "run", "park", "咖啡", "茶", "book", "music", "rain", "sun"];
        let mut rng = SmallRng::seed_from_u64(7);
        let text = |rng: &mut SmallRng| -> String {
            (0..rng.gen_range(1..8)).map(|_| words[rng.gen_range(0..words.len())]).collect::<Vec<_>>().join(" ")
        };
        let mut ix = LexicalIndex::new();
        let mut live: std::collections::BTreeMap<u64, String> = std::collections::BTreeMap::new();
        let mut renumbered = 0;
        for step in 0..12_000u64 {
            let before = ix.slot_ids.len();
            match rng.gen_range(0..10) {
                0..=4 => {
                    let id = rng.gen_range(0..6_000u64);
                    let t = text(&mut rng);
                    ix.insert(id, &t);
                    live.insert(id, t);
                }
                5..=7 => {
                    let id = rng.gen_range(0..6_000u64);
                    assert_eq!(ix.remove(id), live.remove(&id).is_some());
                }
                _ => {
                    let ids: Vec<u64> = (0..40).map(|_| rng.gen_range(0..6_000u64)).collect();
                    let want = ids
                        .iter()
                        .collect::<std::collections::BTreeSet<_>>()
                        .iter()
                        .filter(|id| live.contains_key(id))
                        .count();
                    assert_eq!(ix.remove_many(&ids), want);
                    for id in &ids {
                        live.remove(id);
                    }
                }
            }
            renumbered += usize::from(ix.slot_ids.len() + 1 < before);
            if step % 3_000 == 2_999 {
                let docs: Vec<(u64, &str)> = live.iter().map(|(id, t)| (*id, t.as_str())).collect();
                let fresh = build(&docs);
                assert_eq!(ix.snapshot(), fresh.snapshot(), "step {step}");
                for q in ["coffee tea", "咖啡 cat", "run in the park", "rain sun book"] {
                    let a = ix.search(q, 20, &all);
                    let b = fresh.search(q, 20, &all);
                    assert_eq!(a.len(), b.len(), "{q}");
                    for (x, y) in a.iter().zip(&b) {
                        assert_eq!((x.0, x.1.to_bits()), (y.0, y.1.to_bits()), "{q}");
                    }
                }
            }
        }
        assert!(renumbered >= 2, "slots were renumbered {renumbered} times");
    }

    #[test]
    fn idf_mass_sums_idf_of_distinct_query_terms() {
        let mut ix = LexicalIndex::default();
        ix.insert(1, "coffee beans from Kenya");
        ix.insert(2, "green tea");
        let n = 2.0f32;
        let idf = |df: f32| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        // "coffee" (df 1) twice counts once; "the" is a stop word; "mars" is unseen (df 0).
        let got = ix.idf_mass("the coffee COFFEE mars");
        assert!((got - (idf(1.0) + idf(0.0))).abs() < 1e-5, "{got}");
        assert_eq!(ix.idf_mass("the of"), 0.0);
        assert_eq!(LexicalIndex::default().idf_mass("coffee"), 0.0);
        // CJK bigrams (偏酸, 酸的) count too, unseen here.
        assert!(ix.idf_mass("偏酸的") > 0.0);
    }

    /// Two memories hold the same query words, equally often and with the
    /// same length; the one that has them side by side, as the question
    /// does, ranks first, by exactly the weighted bigram's BM25.
    #[test]
    fn adjacent_query_words_rank_the_verbatim_memory_first() {
        let apart = "Caroline: my group of friends gave me so much support when I moved house";
        let verbatim = "Caroline: the support group meeting for trans people felt so uplifting";
        let ix = build(&[(1, apart), (2, verbatim), (3, "Melanie: we took the kids camping last weekend")]);
        assert_eq!(ix.docs[&1].len, ix.docs[&2].len);
        let r = ix.search("When did Caroline go to the support group?", 3, &all);
        assert_eq!(r.iter().map(|h| h.0).collect::<Vec<_>>(), [2, 1], "{r:?}");
        // The gap is the bigram "support group" (df 1 of N 3) alone.
        let idf = (1.0f32 + (3.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
        let avgdl = (ix.total_len as f32) / 3.0;
        let len = ix.docs[&2].len as f32;
        let bigram = BIGRAM_WEIGHT * idf * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * len / avgdl));
        assert!((r[0].1 - r[1].1 - bigram).abs() < 1e-5, "{r:?}, bigram {bigram}");
        // Words in the other order are not that bigram.
        let r = ix.search("group support", 3, &all);
        assert!((r[0].1 - r[1].1).abs() < 1e-6, "{r:?}");
    }

    /// Word bigrams pair adjacent non-CJK tokens only (stop words removed
    /// first); CJK text keeps its character bigrams and nothing more, and a
    /// bigram never counts toward a document's length.
    #[test]
    fn word_bigrams_skip_cjk_and_stop_words() {
        let ix = build(&[(1, "iPhone15手机的电池续航很好"), (2, "a walk in the park"), (3, "我喜欢喝偏酸的咖啡")]);
        let (_, total_len, terms) = ix.snapshot();
        let pairs: Vec<&str> = terms.keys().filter(|t| t.contains(BIGRAM_SEP)).map(String::as_str).collect();
        assert_eq!(pairs, ["iphon 15", "walk park"]);
        assert_eq!(total_len, 3 + 7 + 2 + 8, "tokens only: iphone 15 + 7 CJK bigrams, walk park, 8 CJK bigrams");
        assert_eq!(word_bigrams(&["咖啡".to_string(), "coffee".to_string()]), Vec::<String>::new());
        // A query's bigrams find the document; a query of CJK finds it by its character bigrams as before.
        assert_eq!(ix.search("walking in the park", 3, &all)[0].0, 2);
        assert_eq!(ix.search("偏酸的咖啡", 3, &all)[0].0, 3);
    }

    #[test]
    fn bm25_matches_hand_computation() {
        // "apple banana" also holds the bigram term "apple banana", which
        // neither changes its length nor matches the query "apple".
        let ix = build(&[(1, "apple banana"), (2, "apple apple cherry date")]);
        // N = 2, avgdl = 3, df(apple) = 2.
        let idf = (1.0f32 + (2.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln();
        let s1 = idf * 1.0 * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * 2.0 / 3.0));
        let s2 = idf * 2.0 * 2.2 / (2.0 + 1.2 * (0.25 + 0.75 * 4.0 / 3.0));
        let r = ix.search("apple", 2, &all);
        assert_eq!(r[0].0, 2);
        assert!((r[0].1 - s2).abs() < 1e-6 && (r[1].1 - s1).abs() < 1e-6, "{r:?}");
    }

    /// Pruned and exhaustive search agree bit for bit, and with every
    /// matching memory ranked, filtered and cut to `k`: random stores where
    /// a few words are in nearly every memory (the case the pruning is
    /// for), random filters and `k`.
    #[test]
    fn pruned_search_equals_exhaustive_search() {
        use proptest::prelude::*;
        let common = ["user", "likes", "memory", "note", "said", "today"];
        let rare: Vec<String> = (0..200).map(|i| format!("w{i}x")).collect();
        let mut runner =
            proptest::test_runner::TestRunner::new(proptest::test_runner::Config { cases: 48, ..Default::default() });
        // Words 0..4 of `common` are in most memories, 4..6 in fewer.
        let doc = (proptest::collection::vec(0usize..6, 1..8), proptest::collection::vec(0usize..200, 0..4));
        // Stores large enough, and queries with both kinds of words, that
        // the pruning is taken in many cases (a store of a few memories,
        // or a query of common words alone, rarely prunes).
        let strategy = (
            proptest::collection::vec(doc, 150..600),
            proptest::collection::vec(0usize..6, 1..4),
            proptest::collection::vec(0usize..200, 1..4),
            1usize..40,
            0u64..4,
        );
        // Batches of random cases until at least 5 took the pruning, so the
        // property is always tested where it matters.
        for _ in 0..8 {
            if PRUNED.with(|c| c.get()) >= 5 {
                break;
            }
            runner
                .run(&strategy, |(docs, q_common, q_rare, k, modulo)| {
                    let mut ix = LexicalIndex::new();
                    for (id, (c, r)) in docs.iter().enumerate() {
                        let mut words: Vec<&str> = c.iter().map(|&i| common[if i < 4 { i } else { i % 2 }]).collect();
                        if c.len() > 5 {
                            words.push(common[c[0].max(4)]);
                        }
                        words.extend(r.iter().map(|&i| rare[i].as_str()));
                        ix.insert(id as u64, &words.join(" "));
                    }
                    // Some removals, so that slots have holes.
                    for id in (0..docs.len() as u64).step_by(7) {
                        ix.remove(id);
                    }
                    let mut words: Vec<&str> = q_common.iter().map(|&i| common[i]).collect();
                    words.extend(q_rare.iter().map(|&i| rare[i].as_str()));
                    let query = words.join(" ");
                    let filter = |id: u64| modulo == 0 || !id.is_multiple_of(modulo + 1);
                    let pruned = ix.search_pruned(&query, k, &filter, true);
                    let exhaustive = ix.search_pruned(&query, k, &filter, false);
                    let bits = |r: &[(u64, f32)]| r.iter().map(|&(id, s)| (id, s.to_bits())).collect::<Vec<_>>();
                    prop_assert_eq!(bits(&pruned), bits(&exhaustive), "query {:?}, k {}", query, k);
                    // Every matching memory ranked, filtered and cut to `k`.
                    let all = ix.search_pruned(&query, docs.len(), &|_| true, false);
                    let oracle: Vec<(u64, f32)> = all.into_iter().filter(|&(id, _)| filter(id)).take(k).collect();
                    prop_assert_eq!(bits(&exhaustive), bits(&oracle), "query {:?}, k {}", query, k);
                    Ok(())
                })
                .unwrap();
        }
        assert!(PRUNED.with(|c| c.get()) >= 5, "the pruning was taken in too few cases to be tested");
    }

    /// A store where every memory holds the query's common words: the
    /// pruned search skips their lists and finds the rare word's memories.
    #[test]
    fn common_words_are_looked_up_not_walked() {
        let mut ix = LexicalIndex::new();
        for id in 0..5_000u64 {
            let text =
                if id % 1000 == 3 { format!("user likes memory ferrets{id}") } else { "user likes memory".into() };
            ix.insert(id, &text);
        }
        ix.insert(9_999, "user likes memory ferrets");
        let before = PRUNED.with(|c| c.get());
        let r = ix.search_pruned("does the user like ferrets memory", 3, &all, true);
        assert_eq!(PRUNED.with(|c| c.get()), before + 1, "the common words were walked");
        assert_eq!(r[0].0, 9_999);
        assert_eq!(r, ix.search_pruned("does the user like ferrets memory", 3, &all, false));
    }
}
