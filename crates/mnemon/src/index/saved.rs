//! The graph file: each namespace's searched HNSW graph (its [`View`] and
//! slot table), saved beside the log at a clean close so that the next
//! open loads it instead of rebuilding it.
//!
//! The file is derived: the log alone defines the store, and a file that is
//! missing, damaged, of another version, or that does not match the log
//! exactly is deleted and the graph is rebuilt. It is read once, by the
//! open that follows the close that wrote it, and deleted by that open
//! whether it was used or not, so it never outlives the process that read
//! it: a forget can only happen in a process that already deleted it, and
//! the next close writes it again from the state after the forget, with
//! the codes of every tombstoned slot (removed, replaced or forgotten
//! vectors) written as zeros. The byte layout is in `docs/FORMAT.md`
//! ("Graph file").
//!
//! Useful for: opening a large store with its graph ready. Not useful for:
//! recovery (it holds nothing the log does not), or encrypted stores (the
//! codes are derived from sealed vectors, so it is never written for them).

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use super::view::{Codes, View, NONE};

/// Name of the graph file in the data directory's root.
pub(crate) const GRAPH_FILE: &str = "graphs.bin";
/// First eight bytes of the graph file.
const MAGIC: [u8; 8] = *b"MNGRAPH\0";
/// Version of the graph file's layout; a file of another version is
/// rebuilt, never read.
pub(crate) const GRAPH_FORMAT_VERSION: u32 = 1;
/// Bytes before the body: magic, version, body length, CRC-32 of the body.
const HEADER_BYTES: usize = 8 + 4 + 8 + 4;
/// Largest `dim` a saved graph may claim.
const MAX_DIM: usize = 1 << 16;
/// Largest `M` a saved graph may claim (as [`super::HnswParams::m`] is
/// clamped).
const MAX_M: usize = 128;
/// Highest layer a saved node may reach (`hnsw_rs` uses 16 layers).
const MAX_DEPTH: u8 = 15;
/// Longest namespace name a saved graph may claim, in bytes.
const MAX_NAME: usize = 1 << 16;

/// One namespace's graph as saved: the searched view over slots
/// `0..ids.len()`, the memory id of each slot and whether the slot is live,
/// and the parameters it was built with.
pub(crate) struct SavedGraph {
    pub(super) view: View,
    pub(super) ids: Vec<u64>,
    pub(super) live: Vec<bool>,
    pub(super) m: usize,
    pub(super) ef_construction: usize,
    pub(super) seed: u64,
}

/// A graph to save, borrowed from its index (see
/// [`VectorIndex::saved_graph`](super::VectorIndex::saved_graph)).
pub(crate) struct GraphToSave<'a> {
    pub(super) view: std::sync::Arc<View>,
    pub(super) ids: &'a [u64],
    pub(super) live: &'a [bool],
    pub(super) m: usize,
    pub(super) ef_construction: usize,
    pub(super) seed: u64,
}

/// The decoded graph file: the log position and embedder it was written
/// for, and a graph per namespace.
pub(crate) struct GraphFile {
    /// Seq of the last event the graphs cover.
    pub last_seq: u64,
    /// FNV-1a 64 of the embedder's model id.
    pub model_hash: u64,
    /// Namespace name and graph.
    pub graphs: Vec<(String, SavedGraph)>,
}

/// Encodes the graph file: header, then the body (see `docs/FORMAT.md`).
/// Tombstoned slots' codes and scales are written as zeros.
pub(crate) fn encode(last_seq: u64, model_hash: u64, graphs: &[(&str, GraphToSave<'_>)]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(last_seq.to_le_bytes());
    body.extend(model_hash.to_le_bytes());
    body.extend(u32_of(graphs.len()).to_le_bytes());
    for (name, g) in graphs {
        encode_graph(&mut body, name, g);
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend(MAGIC);
    out.extend(GRAPH_FORMAT_VERSION.to_le_bytes());
    out.extend((body.len() as u64).to_le_bytes());
    out.extend(crc32fast::hash(&body).to_le_bytes());
    out.extend(body);
    out
}

/// `n` as a `u32` (sizes the encoder writes are far below `u32::MAX`;
/// saturates otherwise, which the decoder then rejects).
fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn encode_graph(out: &mut Vec<u8>, name: &str, g: &GraphToSave<'_>) {
    let v = &g.view;
    let slots = v.slots;
    let live = |s: usize| g.live.get(s).copied().unwrap_or(false);
    out.extend(u32_of(name.len()).to_le_bytes());
    out.extend(name.as_bytes());
    out.extend(u32_of(v.dim).to_le_bytes());
    out.extend(u32_of(g.m).to_le_bytes());
    out.extend(u32_of(g.ef_construction).to_le_bytes());
    out.extend(g.seed.to_le_bytes());
    out.extend((slots as u64).to_le_bytes());
    out.push(v.top);
    out.extend(v.entry.to_le_bytes());
    for s in 0..slots {
        out.extend(g.ids.get(s).copied().unwrap_or(0).to_le_bytes());
    }
    out.extend((0..slots).map(|s| u8::from(live(s))));
    out.extend(&v.depth[..slots]);
    for s in 0..slots {
        let scale = if live(s) { v.scales[s] } else { 0.0 };
        out.extend(scale.to_le_bytes());
    }
    for s in 0..slots {
        if live(s) {
            out.extend(v.codes.row(s).iter().map(|c| c.to_le_bytes()[0]));
        } else {
            out.resize(out.len() + v.dim, 0);
        }
    }
    for l in &v.links0[..slots * v.stride0] {
        out.extend(l.to_le_bytes());
    }
    out.extend((v.upper.len() as u64).to_le_bytes());
    for a in &v.upper_at[..slots] {
        out.extend(a.to_le_bytes());
    }
    for l in &v.upper {
        out.extend(l.to_le_bytes());
    }
}

/// A cursor over the body that refuses to read past its end.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.bytes.len() {
            return Err(format!("{n} bytes wanted, {} left", self.bytes.len()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A count of items of `each` bytes that must fit in what is left.
    fn count(&mut self, n: u64, each: usize) -> Result<usize, String> {
        let n = usize::try_from(n).map_err(|_| "count too large".to_string())?;
        match n.checked_mul(each) {
            Some(bytes) if bytes <= self.bytes.len() => Ok(n),
            _ => Err(format!("{n} items of {each} bytes do not fit")),
        }
    }
    fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let raw = self.take(n.checked_mul(4).ok_or("overflow")?)?;
        Ok(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
}

/// Decodes a graph file, checking its header, CRC and every bound and
/// link, so that a search on a decoded graph cannot index out of range.
/// Never panics; any defect is an `Err` with its reason.
pub(crate) fn decode(bytes: &[u8]) -> Result<GraphFile, String> {
    let mut r = Reader { bytes };
    if r.take(8)? != MAGIC {
        return Err("not a graph file".into());
    }
    let version = r.u32()?;
    if version != GRAPH_FORMAT_VERSION {
        return Err(format!("graph file version {version}, this build reads {GRAPH_FORMAT_VERSION}"));
    }
    let len = r.u64()?;
    let crc = r.u32()?;
    if usize::try_from(len).ok() != Some(r.bytes.len()) {
        return Err(format!("body of {len} bytes claimed, {} present", r.bytes.len()));
    }
    if crc32fast::hash(r.bytes) != crc {
        return Err("checksum mismatch".into());
    }
    let last_seq = r.u64()?;
    let model_hash = r.u64()?;
    let n = r.u32()?;
    let mut graphs = Vec::new();
    for _ in 0..n {
        graphs.push(decode_graph(&mut r)?);
    }
    if !r.bytes.is_empty() {
        return Err(format!("{} bytes after the last graph", r.bytes.len()));
    }
    Ok(GraphFile { last_seq, model_hash, graphs })
}

fn decode_graph(r: &mut Reader<'_>) -> Result<(String, SavedGraph), String> {
    let name_len = r.u32()? as usize;
    if name_len > MAX_NAME {
        return Err("namespace name too long".into());
    }
    let name = std::str::from_utf8(r.take(name_len)?).map_err(|_| "namespace name is not UTF-8")?.to_string();
    let dim = r.u32()? as usize;
    let m = r.u32()? as usize;
    let ef_construction = r.u32()? as usize;
    let seed = r.u64()?;
    if dim == 0 || dim > MAX_DIM || !(2..=MAX_M).contains(&m) {
        return Err(format!("dim {dim} or m {m} out of range"));
    }
    let (stride0, stride_up) = (2 * m, m);
    // Each slot takes at least its id, live flag, depth, scale, codes,
    // layer-0 links and upper offset.
    let per_slot = 8 + 1 + 1 + 4 + dim + 4 * stride0 + 4;
    let raw_slots = r.u64()?;
    let top = r.u8()?;
    let entry = r.u32()?;
    let slots = r.count(raw_slots, per_slot)?;
    if slots > NONE as usize {
        return Err("too many slots".into());
    }
    let ids: Vec<u64> =
        r.take(slots * 8)?.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    let live = r
        .take(slots)?
        .iter()
        .map(|&b| if b <= 1 { Ok(b == 1) } else { Err("bad live flag") })
        .collect::<Result<Vec<bool>, _>>()?;
    let depth = r.take(slots)?.to_vec();
    let scales: Vec<f32> = r.u32s(slots)?.into_iter().map(f32::from_bits).collect();
    if scales.iter().any(|s| !s.is_finite()) {
        return Err("a scale is not finite".into());
    }
    let raw_codes = r.take(slots * dim)?;
    let links0 = r.u32s(slots * stride0)?;
    let upper_len = r.u64()?;
    let upper_at = r.u32s(slots)?;
    let upper_len = r.count(upper_len, 4)?;
    let upper = r.u32s(upper_len)?;
    // Structure: every link names a slot, every upper list lies inside
    // `upper`, the entry point is a node of the top layer.
    if top > MAX_DEPTH || depth.iter().any(|&d| d > MAX_DEPTH) {
        return Err("a layer above the highest".into());
    }
    if links0.iter().chain(&upper).any(|&l| l != NONE && l as usize >= slots) {
        return Err("a link to no slot".into());
    }
    for (s, (&d, &at)) in depth.iter().zip(&upper_at).enumerate() {
        let fits = match d {
            0 => at == NONE,
            _ => {
                (at as usize).checked_add(usize::from(d) * stride_up).is_some_and(|end| at != NONE && end <= upper_len)
            }
        };
        if !fits {
            return Err(format!("upper lists of slot {s} out of range"));
        }
    }
    if slots > 0 && (entry as usize >= slots || depth[entry as usize] != top) {
        return Err("entry point is not a node of the top layer".into());
    }
    if slots == 0 && (entry != 0 || top != 0) {
        return Err("an empty graph with an entry point".into());
    }
    let mut codes = Codes::zeroed(dim, slots);
    for (s, row) in raw_codes.chunks_exact(dim).enumerate() {
        for (c, &b) in codes.row_mut(s).iter_mut().zip(row) {
            *c = i8::from_le_bytes([b]);
        }
    }
    let view = View { slots, dim, codes, scales, links0, stride0, upper_at, depth, upper, stride_up, entry, top };
    Ok((name, SavedGraph { view, ids, live, m, ef_construction, seed }))
}

/// Writes `bytes` as the graph file of the store at `root` atomically: a
/// temporary file, fsynced, renamed over the old one, then the directory
/// fsynced.
///
/// # Errors
/// The I/O error of any step (the temporary file is removed).
pub(crate) fn write(root: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = root.join(format!("{GRAPH_FILE}.tmp"));
    let done = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, root.join(GRAPH_FILE))?;
        File::open(root)?.sync_all()
    })();
    if done.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    done
}

/// Reads and deletes the graph file of the store at `root` (and a
/// temporary one a crash left), fsyncing the directory after. `Ok(None)`
/// when there was none or it does not decode (it is rebuilt).
///
/// # Errors
/// The I/O error of reading or deleting it.
pub(crate) fn take(root: &Path) -> std::io::Result<Option<GraphFile>> {
    let path = root.join(GRAPH_FILE);
    let tmp = root.join(format!("{GRAPH_FILE}.tmp"));
    let had_tmp = tmp.exists();
    if had_tmp {
        fs::remove_file(&tmp)?;
    }
    let bytes = match fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if bytes.is_some() {
        fs::remove_file(&path)?;
    }
    if bytes.is_some() || had_tmp {
        File::open(root)?.sync_all()?;
    }
    Ok(bytes.and_then(|b| decode(&b).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::quant::quantize;
    use crate::index::view::{level_of, tests::lcg_vectors};
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A grown view of `n` points (`M` 4, 8-d), ids `100 + slot`, slot 3
    /// tombstoned.
    fn sample(n: usize) -> (View, Vec<u64>, Vec<bool>) {
        let mut view = View::empty(8, 4);
        for v in lcg_vectors(0x5eed, n, 8) {
            let mut codes = vec![0i8; 8];
            let scale = quantize(&v, &mut codes);
            let slot = view.slots();
            view.insert(&codes, scale, level_of(7, slot, 4, 15), 32);
        }
        let ids = (0..n as u64).map(|s| 100 + s).collect();
        let live = (0..n).map(|s| s != 3).collect();
        (view, ids, live)
    }

    fn encoded(n: usize) -> Vec<u8> {
        let (view, ids, live) = sample(n);
        let g = GraphToSave { view: Arc::new(view), ids: &ids, live: &live, m: 4, ef_construction: 32, seed: 7 };
        encode(42, 9, &[("ns", g)])
    }

    /// Decoding what was encoded gives the same graph, with the tombstoned
    /// slot's codes and scale zeroed and every other slot's kept.
    #[test]
    fn a_graph_round_trips_without_its_tombstones_codes() {
        let (view, ids, live) = sample(300);
        assert!(view.top >= 1, "several layers");
        let bytes = encoded(300);
        let file = decode(&bytes).unwrap();
        assert_eq!((file.last_seq, file.model_hash, file.graphs.len()), (42, 9, 1));
        let (name, g) = &file.graphs[0];
        assert_eq!(name, "ns");
        assert_eq!((g.m, g.ef_construction, g.seed), (4, 32, 7));
        assert_eq!((&g.ids, &g.live), (&ids, &live));
        let d = &g.view;
        assert_eq!((d.slots, d.dim, d.entry, d.top), (view.slots, view.dim, view.entry, view.top));
        assert_eq!(
            (&d.links0, &d.depth, &d.upper_at, &d.upper),
            (&view.links0, &view.depth, &view.upper_at, &view.upper)
        );
        for s in 0..300 {
            if s == 3 {
                assert!(d.codes.row(s).iter().all(|&c| c == 0));
                assert_eq!(d.scales[s], 0.0);
            } else {
                assert_eq!((d.codes.row(s), d.scales[s]), (view.codes.row(s), view.scales[s]));
            }
        }
        let q = lcg_vectors(0xfeed, 1, 8).remove(0);
        let want: Vec<usize> = view.search(&q, 16).into_iter().filter(|&s| s != 3).collect();
        let got: Vec<usize> = d.search(&q, 16).into_iter().filter(|&s| s != 3).collect();
        assert_eq!(got[..5], want[..5]);
    }

    /// A flipped byte is caught by the checksum; a cut file by its length;
    /// another version or magic is refused.
    #[test]
    fn damage_is_refused() {
        let bytes = encoded(50);
        for at in [0, 9, 13, 21, HEADER_BYTES, bytes.len() / 2, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[at] ^= 0x40;
            assert!(decode(&b).is_err(), "flip at {at}");
        }
        for len in [0, 7, HEADER_BYTES, bytes.len() - 1] {
            assert!(decode(&bytes[..len]).is_err(), "cut at {len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
    }

    /// Rewrites the CRC so that a mutated body reaches the structural checks.
    fn fix_crc(b: &mut [u8]) {
        if b.len() >= HEADER_BYTES {
            let crc = crc32fast::hash(&b[HEADER_BYTES..]);
            b[20..24].copy_from_slice(&crc.to_le_bytes());
            let len = (b.len() - HEADER_BYTES) as u64;
            b[12..20].copy_from_slice(&len.to_le_bytes());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Arbitrary bytes never panic the decoder.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode(&bytes);
            let mut framed = MAGIC.to_vec();
            framed.extend(GRAPH_FORMAT_VERSION.to_le_bytes());
            framed.extend([0u8; 12]);
            framed.extend(&bytes);
            fix_crc(&mut framed);
            let _ = decode(&framed);
        }

        /// A valid file with bytes changed, inserted or cut (its checksum
        /// made right again) never panics the decoder, and a graph that
        /// still decodes searches without panicking.
        #[test]
        fn mutated_files_never_panic(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
        ) {
            let mut b = encoded(40);
            for (at, byte, kind) in edits {
                if b.len() <= HEADER_BYTES {
                    break;
                }
                let i = HEADER_BYTES + at.index(b.len() - HEADER_BYTES);
                match kind {
                    0 => b[i] = byte,
                    1 => b.insert(i, byte),
                    _ => b.truncate(i),
                }
            }
            fix_crc(&mut b);
            if let Ok(file) = decode(&b) {
                for (_, g) in &file.graphs {
                    let q = vec![0.5f32; g.view.dim];
                    let _ = g.view.search(&q, 10);
                }
            }
        }
    }
}
