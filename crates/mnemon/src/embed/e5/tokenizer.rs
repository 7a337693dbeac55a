//! SentencePiece unigram tokenizer for multilingual-e5 (the XLM-RoBERTa
//! vocabulary of 250,002 pieces), built from the vocabulary and normaliser
//! stored in the model file.
//!
//! Pipeline, as the model's Hugging Face fast tokenizer does it:
//! 1. map every code point through the file's normalisation table
//!    (NFKC-like: full-width to ASCII, control characters dropped, tabs and
//!    line breaks to spaces);
//! 2. collapse runs of spaces into one;
//! 3. prefix `▁` (U+2581) unless the text starts with a space, then turn every
//!    space into `▁`;
//! 4. split before every `▁` and segment each word with Viterbi over the piece
//!    log-probabilities; a character no piece covers becomes `<unk>`
//!    (consecutive unknown characters fuse into one `<unk>`);
//! 5. wrap in `<s>` … `</s>`, truncating the content so the whole sequence
//!    fits the limit.
//!
//! Control pieces (`<s>`, `</s>`, `<pad>`, `<unk>`, `<mask>`) are never
//! matched inside text: a literal `"</s>"` in user input is tokenised as the
//! characters `<`, `/`, `s`, `>`.

use super::format::{NormTable, VocabTable};

/// The SentencePiece metaspace marker that stands for a space.
const META: char = '\u{2581}';
/// Penalty below the lowest piece score given to an unknown character
/// (SentencePiece's `kUnkPenalty`).
const UNK_PENALTY: f64 = 10.0;

/// A unigram tokenizer over the model file's vocabulary.
///
/// Immutable after construction; `Send + Sync`.
#[derive(Clone, Debug)]
pub struct E5Tokenizer {
    vocab: VocabTable,
    norm: NormTable,
    /// Open-addressing hash table: `0` = empty, otherwise piece id + 1.
    slots: Vec<u32>,
    max_piece_bytes: usize,
    unk_score: f64,
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for &b in bytes {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h ^ (h >> 29)
}

impl E5Tokenizer {
    /// Builds the tokenizer from a parsed vocabulary and normaliser (see
    /// [`super::format::parse_header`]).
    ///
    /// Pieces whose score is exactly 0 (SentencePiece's control symbols) and
    /// the declared special ids are left out of the segmentation table.
    pub fn new(vocab: VocabTable, norm: NormTable) -> Self {
        let n = vocab.len();
        let size = (n.max(1) * 2).next_power_of_two();
        let mask = size - 1;
        let mut slots = vec![0u32; size];
        let sp = vocab.specials;
        let mut max_piece_bytes = 1;
        let mut min_score = f64::INFINITY;
        for id in 0..n {
            let score = f64::from(vocab.scores[id]);
            min_score = min_score.min(score);
            let control = score == 0.0 || [sp.bos, sp.eos, sp.pad, sp.unk].contains(&(id as u32));
            let Some(piece) = vocab.piece(id) else {
                continue;
            };
            if control || piece.is_empty() {
                continue;
            }
            max_piece_bytes = max_piece_bytes.max(piece.len());
            let mut i = hash_bytes(piece) as usize & mask;
            loop {
                match slots[i] {
                    0 => {
                        slots[i] = id as u32 + 1;
                        break;
                    }
                    // Duplicate piece: keep the first id, as SentencePiece does.
                    s if vocab.piece(s as usize - 1) == Some(piece) => break,
                    _ => i = (i + 1) & mask,
                }
            }
        }
        let unk_score = if min_score.is_finite() { min_score } else { 0.0 } - UNK_PENALTY;
        E5Tokenizer { vocab, norm, slots, max_piece_bytes, unk_score }
    }

    /// Number of pieces in the vocabulary (250,002 for e5-small).
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// Id of `<s>`, which starts every sequence.
    pub fn bos_id(&self) -> u32 {
        self.vocab.specials.bos
    }

    /// Id of `</s>`, which ends every sequence.
    pub fn eos_id(&self) -> u32 {
        self.vocab.specials.eos
    }

    /// Id of `<pad>`.
    pub fn pad_id(&self) -> u32 {
        self.vocab.specials.pad
    }

    /// Id of `<unk>`.
    pub fn unk_id(&self) -> u32 {
        self.vocab.specials.unk
    }

    /// The text of piece `id` (e.g. `"▁hello"`), or `None` when out of range
    /// or not UTF-8.
    pub fn piece(&self, id: u32) -> Option<&str> {
        std::str::from_utf8(self.vocab.piece(id as usize)?).ok()
    }

    /// The id of the piece whose text is exactly `piece` (control pieces
    /// excluded), or `None`.
    pub fn piece_id(&self, piece: &str) -> Option<u32> {
        self.lookup(piece.as_bytes())
    }

    fn lookup(&self, bytes: &[u8]) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = hash_bytes(bytes) as usize & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return None;
            }
            if self.vocab.piece(s as usize - 1) == Some(bytes) {
                return Some(s - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Normalises `text` into the metaspace form that is segmented, e.g.
    /// `"Hello  Ｗorld"` → `"▁Hello▁World"`. Empty (or all-removed) input
    /// gives an empty string.
    pub fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 3);
        let mut prev_space = false;
        let mut push = |c: char, out: &mut String| {
            if c == ' ' {
                if !prev_space {
                    out.push(META);
                }
                prev_space = true;
            } else {
                if out.is_empty() {
                    out.push(META);
                }
                out.push(c);
                prev_space = false;
            }
        };
        for c in text.chars() {
            match self.norm.get(c) {
                Some(rep) => rep.iter().for_each(|&r| push(r, &mut out)),
                None => push(c, &mut out),
            }
        }
        out
    }

    /// Token ids of `text` without `<s>`/`</s>`, at most `max` of them (the
    /// first `max` of the full segmentation).
    pub fn encode_content(&self, text: &str, max: usize) -> Vec<u32> {
        let normalized = self.normalize(text);
        let mut ids = Vec::new();
        let mut lattice = Lattice::default();
        let mut start = 0;
        let bytes = normalized.as_bytes();
        while start < bytes.len() && ids.len() < max {
            // A word runs from one metaspace to the next: no piece contains
            // `▁` past its first character, so words segment independently.
            let rest = &normalized[start..];
            let skip = rest.chars().next().map_or(0, char::len_utf8);
            let end = rest[skip..].find(META).map_or(bytes.len(), |i| start + skip + i);
            self.viterbi(&normalized[start..end], &mut lattice, &mut ids);
            start = end;
        }
        ids.truncate(max);
        ids
    }

    /// Token ids of `text` wrapped in `<s>` … `</s>`, truncated to at most
    /// `max_tokens` ids in all (`max_tokens` below 2 is treated as 2).
    pub fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let mut ids = Vec::with_capacity(16);
        ids.push(self.bos_id());
        ids.extend(self.encode_content(text, max_tokens.max(2) - 2));
        ids.push(self.eos_id());
        ids
    }

    /// Segments one word, appending its ids to `out`.
    fn viterbi(&self, word: &str, lat: &mut Lattice, out: &mut Vec<u32>) {
        lat.bounds.clear();
        lat.bounds.extend(word.char_indices().map(|(i, _)| i));
        lat.bounds.push(word.len());
        let n = lat.bounds.len() - 1;
        lat.best.clear();
        lat.best.resize(n + 1, f64::NEG_INFINITY);
        lat.from.clear();
        lat.from.resize(n + 1, (0, 0));
        lat.best[0] = 0.0;
        let bytes = word.as_bytes();
        for i in 0..n {
            let base = lat.best[i];
            let b0 = lat.bounds[i];
            let mut single = false;
            for e in i + 1..=n {
                let len = lat.bounds[e] - b0;
                if len > self.max_piece_bytes {
                    break;
                }
                if let Some(id) = self.lookup(&bytes[b0..b0 + len]) {
                    let score = base + f64::from(self.vocab.scores[id as usize]);
                    if score > lat.best[e] {
                        lat.best[e] = score;
                        lat.from[e] = (i as u32, id + 1);
                    }
                    single |= e == i + 1;
                }
            }
            if !single {
                let score = base + self.unk_score;
                if score > lat.best[i + 1] {
                    lat.best[i + 1] = score;
                    lat.from[i + 1] = (i as u32, 0);
                }
            }
        }
        // Backtrack; `0` marks an unknown character. Fuse unknown runs.
        let first = out.len();
        let mut e = n;
        let mut last_unknown = false;
        while e > 0 {
            let (s, tag) = lat.from[e];
            if tag == 0 {
                if !last_unknown {
                    out.push(self.unk_id());
                }
                last_unknown = true;
            } else {
                out.push(tag - 1);
                last_unknown = false;
            }
            e = s as usize;
        }
        out[first..].reverse();
    }
}

/// Reusable Viterbi buffers.
#[derive(Default)]
struct Lattice {
    /// Byte offset of every character boundary in the word.
    bounds: Vec<usize>,
    /// Best score of a segmentation ending at each boundary.
    best: Vec<f64>,
    /// (start boundary, piece id + 1 or 0 for unknown) of that segmentation.
    from: Vec<(u32, u32)>,
}
