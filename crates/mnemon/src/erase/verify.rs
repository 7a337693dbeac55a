//! The independent erasure scanner: reads every file under a directory as
//! raw bytes and searches them for patterns of erased content.
//!
//! It shares no code with compaction: no sled, no record decoding, no
//! knowledge of the layout beyond "a tree of files". Its only inputs are the
//! directory and an [`ErasurePatterns`] set.

use std::collections::HashMap;
use std::fs::{self, File};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Window length, in bytes, of partial-copy patterns.
pub(crate) const WINDOW_BYTES: usize = 32;
/// Distance, in bytes, between the starts of consecutive text windows.
pub(crate) const TEXT_WINDOW_STRIDE: usize = 16;
/// Texts shorter than this many bytes are not searched: a short string is
/// no evidence (it occurs by chance in binary files and in unrelated text).
pub(crate) const MIN_TEXT_BYTES: usize = 8;
/// At most this many windows per vector (spread evenly over the vector).
pub(crate) const MAX_VECTOR_WINDOWS: usize = 24;
/// A window with fewer distinct byte values than this is dropped as low
/// information (runs of zeros or spaces occur everywhere).
const MIN_DISTINCT_BYTES: usize = 8;
/// A whole text with fewer distinct byte values than this is dropped.
const MIN_DISTINCT_TEXT_BYTES: usize = 4;
/// Read size of the scanner.
const CHUNK_BYTES: usize = 1 << 20;
/// Matches listed in a report (all are counted).
const MAX_LISTED_MATCHES: usize = 1000;

/// What a pattern was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    /// A whole text, as UTF-8.
    Text,
    /// A 32-byte window of a text (finds partial copies).
    TextWindow,
    /// A 32-byte window of a vector's f32 or f16 little-endian bytes.
    VectorWindow,
}

/// A set of byte patterns to search for, built from erased texts and vectors.
///
/// A text of at least 8 bytes gives its whole UTF-8 bytes plus,
/// when longer than 32 bytes, windows of 32 bytes every 16 bytes (and
/// one ending at its last byte), so any copy of 47 bytes or more of it is
/// found. A vector gives up to 24 32-byte windows of its
/// f32 little-endian bytes and up to 24 of its f16 ones (the vector
/// cache's layout). Windows with fewer than 8 distinct byte values
/// are dropped, and so are whole texts with fewer than 4. Identical
/// patterns are kept once.
#[derive(Clone, Debug, Default)]
pub struct ErasurePatterns {
    patterns: Vec<(Vec<u8>, PatternKind)>,
    index: HashMap<Vec<u8>, usize>,
    excluded_shared: usize,
    low_information: usize,
    too_short: usize,
}

impl ErasurePatterns {
    /// An empty set.
    pub fn new() -> ErasurePatterns {
        ErasurePatterns::default()
    }

    fn push(&mut self, bytes: &[u8], kind: PatternKind) {
        if !self.index.contains_key(bytes) {
            self.index.insert(bytes.to_vec(), self.patterns.len());
            self.patterns.push((bytes.to_vec(), kind));
        }
    }

    /// Adds a text: its whole bytes and its windows. Texts shorter than
    /// 8 bytes are counted in [`ErasurePatterns::too_short`], texts of
    /// fewer than 4 distinct byte values in
    /// [`ErasurePatterns::low_information`]; neither is searched. Returns
    /// whether the text is searched.
    pub fn add_text(&mut self, text: &str) -> bool {
        let b = text.as_bytes();
        if b.len() < MIN_TEXT_BYTES {
            self.too_short += 1;
            return false;
        }
        if distinct(b) < MIN_DISTINCT_TEXT_BYTES {
            self.low_information += 1;
            return false;
        }
        self.push(b, PatternKind::Text);
        if b.len() <= WINDOW_BYTES {
            return true;
        }
        let last = b.len() - WINDOW_BYTES;
        let mut starts: Vec<usize> = (0..=last).step_by(TEXT_WINDOW_STRIDE).collect();
        if starts.last() != Some(&last) {
            starts.push(last);
        }
        for s in starts {
            let w = &b[s..s + WINDOW_BYTES];
            if informative(w) {
                self.push(w, PatternKind::TextWindow);
            } else {
                self.low_information += 1;
            }
        }
        true
    }

    /// Adds a vector: windows of its f16 little-endian bytes (each
    /// component rounded to the nearest binary16: the vector cache's
    /// layout) and of its f32 little-endian bytes (the layout stores
    /// written before it hold), every 16 bytes, informative ones only, at
    /// most 24 of each, spread evenly. What is counted is the f16 layout,
    /// the one a vector is written in: a vector whose f16 bytes are shorter
    /// than one window (under 16 components) is counted in
    /// [`ErasurePatterns::too_short`], one whose f16 windows are all
    /// uninformative in [`ErasurePatterns::low_information`], and neither
    /// counts as searched whatever its f32 windows give.
    pub fn add_vector(&mut self, v: &[f32]) {
        let [narrow, wide] = vector_layouts(v);
        if narrow.len() < WINDOW_BYTES {
            self.too_short += 1;
        } else if self.add_vector_windows(&narrow) == 0 {
            self.low_information += 1;
        }
        if wide.len() >= WINDOW_BYTES {
            self.add_vector_windows(&wide);
        }
    }

    /// Pushes up to [`MAX_VECTOR_WINDOWS`] informative windows of `bytes`
    /// (at least [`WINDOW_BYTES`] long), spread evenly; returns how many.
    fn add_vector_windows(&mut self, bytes: &[u8]) -> usize {
        let candidates: Vec<usize> = (0..=bytes.len() - WINDOW_BYTES)
            .step_by(TEXT_WINDOW_STRIDE)
            .filter(|&s| informative(&bytes[s..s + WINDOW_BYTES]))
            .collect();
        let n = candidates.len().min(MAX_VECTOR_WINDOWS);
        for i in 0..n {
            let s = candidates[i * candidates.len() / n];
            self.push(&bytes[s..s + WINDOW_BYTES], PatternKind::VectorWindow);
        }
        n
    }

    /// Drops every pattern that occurs in one of the `corpus` items: content
    /// that legitimately stays on disk (surviving memories that share a
    /// phrase, or an identical memory in another namespace) would otherwise
    /// raise false alarms. Returns how many were dropped.
    pub fn exclude_found_in<I, B>(&mut self, corpus: I) -> usize
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        self.exclude(corpus, false)
    }

    /// As [`ErasurePatterns::exclude_found_in`], but whole texts are always
    /// kept: only windows are dropped. For an auditor's search, where a whole
    /// text found anywhere must be reported.
    pub fn exclude_windows_found_in<I, B>(&mut self, corpus: I) -> usize
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        self.exclude(corpus, true)
    }

    fn exclude<I, B>(&mut self, corpus: I, windows_only: bool) -> usize
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        if self.patterns.is_empty() {
            return 0;
        }
        let matcher = Matcher::new(&self.patterns);
        let mut found = vec![false; self.patterns.len()];
        for item in corpus {
            let item = item.as_ref();
            matcher.find(&self.patterns, item, item.len(), |i, _| found[i] = true);
        }
        let before = self.patterns.len();
        let old = std::mem::take(&mut self.patterns);
        self.index.clear();
        for (i, (bytes, kind)) in old.into_iter().enumerate() {
            if found[i] && !(windows_only && kind == PatternKind::Text) {
                continue;
            }
            self.index.insert(bytes.clone(), self.patterns.len());
            self.patterns.push((bytes, kind));
        }
        let dropped = before - self.patterns.len();
        self.excluded_shared += dropped;
        dropped
    }

    /// Number of patterns to search.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// True when there is nothing to search.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Patterns dropped because they occur in surviving content.
    pub fn excluded_shared(&self) -> usize {
        self.excluded_shared
    }

    /// Windows (or whole vectors) dropped as low information.
    pub fn low_information(&self) -> usize {
        self.low_information
    }

    /// Texts (or vectors) too short to search.
    pub fn too_short(&self) -> usize {
        self.too_short
    }
}

/// True when a window holds at least [`MIN_DISTINCT_BYTES`] distinct bytes.
fn informative(w: &[u8]) -> bool {
    distinct(w) >= MIN_DISTINCT_BYTES
}

fn distinct(bytes: &[u8]) -> usize {
    let mut seen = [false; 256];
    let mut n = 0;
    for &b in bytes {
        if !seen[usize::from(b)] {
            seen[usize::from(b)] = true;
            n += 1;
        }
    }
    n
}

/// Multi-pattern search by rolling hash (Rabin–Karp). Nearly every pattern
/// is a 32-byte window or a text longer than that, keyed by a rolling hash of
/// its first 32 bytes; the rest (whole texts of 8..32 bytes) are keyed by
/// their first 8 bytes. A bit filter in front of each map keeps the common
/// case — no pattern starts here — to a multiply, a shift and one load.
/// Candidates are confirmed by comparing bytes, so hash collisions cost time,
/// never correctness.
struct Matcher {
    long: HashMap<u64, Vec<usize>, BuildHasherDefault<MixHasher>>,
    short: HashMap<u64, Vec<usize>, BuildHasherDefault<MixHasher>>,
    long_bits: Vec<u64>,
    short_bits: Vec<u64>,
    /// `BASE^WINDOW_BYTES`, to roll the oldest byte out.
    base_pow: u64,
    max_len: usize,
}

/// Odd multiplier of the rolling hash (arithmetic mod 2^64).
const BASE: u64 = 0x0100_0000_01b3;
/// log2 of the bit-filter size (2^22 bits = 512 KiB).
const FILTER_BITS_LOG2: u32 = 22;

/// Hasher for keys that are already hashes: one multiply-xorshift round.
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = mix(self.0 ^ u64::from(*b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = mix(x);
    }
}

fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 29)
}

fn filter_slot(h: u64) -> (usize, u64) {
    let bit = mix(h) >> (64 - FILTER_BITS_LOG2);
    ((bit >> 6) as usize, 1u64 << (bit & 63))
}

fn first8(b: &[u8]) -> u64 {
    let mut k = [0u8; 8];
    k.copy_from_slice(&b[..8]);
    u64::from_le_bytes(k)
}

impl Matcher {
    fn new(patterns: &[(Vec<u8>, PatternKind)]) -> Matcher {
        let words = 1usize << (FILTER_BITS_LOG2 - 6);
        let mut m = Matcher {
            long: HashMap::default(),
            short: HashMap::default(),
            long_bits: vec![0; words],
            short_bits: vec![0; words],
            base_pow: (0..WINDOW_BYTES).fold(1u64, |p, _| p.wrapping_mul(BASE)),
            max_len: patterns.iter().map(|(b, _)| b.len()).max().unwrap_or(1),
        };
        for (i, (b, _)) in patterns.iter().enumerate() {
            let (map, bits, key) = if b.len() >= WINDOW_BYTES {
                (&mut m.long, &mut m.long_bits, window_hash(&b[..WINDOW_BYTES]))
            } else {
                (&mut m.short, &mut m.short_bits, first8(b))
            };
            map.entry(key).or_default().push(i);
            let (w, bit) = filter_slot(key);
            bits[w] |= bit;
        }
        m
    }

    /// Calls `f(pattern, start)` for every occurrence of a pattern that
    /// starts before `upto` and lies wholly inside `hay`.
    fn find(&self, patterns: &[(Vec<u8>, PatternKind)], hay: &[u8], upto: usize, mut f: impl FnMut(usize, usize)) {
        let upto = upto.min(hay.len());
        let has_short = !self.short.is_empty();
        let has_long = !self.long.is_empty();
        let mut confirm = |cands: &Vec<usize>, at: usize| {
            for &i in cands {
                let p = &patterns[i].0;
                if hay.len() - at >= p.len() && hay[at..at + p.len()] == p[..] {
                    f(i, at);
                }
            }
        };
        let mut h = if has_long && hay.len() >= WINDOW_BYTES { window_hash(&hay[..WINDOW_BYTES]) } else { 0 };
        for at in 0..upto {
            if has_long && at + WINDOW_BYTES <= hay.len() {
                if at > 0 {
                    h = h
                        .wrapping_mul(BASE)
                        .wrapping_add(u64::from(hay[at + WINDOW_BYTES - 1]))
                        .wrapping_sub(u64::from(hay[at - 1]).wrapping_mul(self.base_pow));
                }
                let (w, bit) = filter_slot(h);
                if self.long_bits[w] & bit != 0 {
                    if let Some(c) = self.long.get(&h) {
                        confirm(c, at);
                    }
                }
            }
            if has_short && at + 8 <= hay.len() {
                let k = first8(&hay[at..]);
                let (w, bit) = filter_slot(k);
                if self.short_bits[w] & bit != 0 {
                    if let Some(c) = self.short.get(&k) {
                        confirm(c, at);
                    }
                }
            }
        }
    }
}

/// Polynomial hash of one window: `Σ b[j]·BASE^(n-1-j)` mod 2^64.
fn window_hash(w: &[u8]) -> u64 {
    w.iter().fold(0u64, |h, &b| h.wrapping_mul(BASE).wrapping_add(u64::from(b)))
}

/// One file the scanner read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScannedFile {
    /// Path relative to the scanned directory, `/`-separated.
    pub path: String,
    /// Bytes read.
    pub len: u64,
    /// SHA-256 of the bytes read, lower-case hex.
    pub sha256: String,
}

/// One occurrence of a pattern in a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PatternMatch {
    /// Path relative to the scanned directory.
    pub path: String,
    /// Byte offset of the match in the file.
    pub offset: u64,
    /// What the matched pattern was made from.
    pub kind: PatternKind,
}

/// What [`verify_erasure`] read and found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScanReport {
    /// The directory scanned.
    pub root: PathBuf,
    /// Every regular file read, in path order.
    pub files: Vec<ScannedFile>,
    /// Entries not read, with the reason (a symbolic link, a file that
    /// vanished while the scan ran, a FIFO or device). Unix sockets (a
    /// running server's `mnemon.sock`) hold no bytes and are not listed.
    pub skipped: Vec<String>,
    /// Total bytes read.
    pub bytes_scanned: u64,
    /// Number of patterns searched.
    pub patterns: usize,
    /// Total matches (overlapping matches of different patterns all count).
    pub matches_total: u64,
    /// The first 1000 matches.
    pub matches: Vec<PatternMatch>,
    /// Records and cached vectors of an encrypted store opened with its
    /// keys and searched in plain as well (their bytes on disk are sealed,
    /// so the file scan alone cannot find a text in them); a match there
    /// has the path `opened:log/SEQ` (offset in the opened record) or
    /// `opened:vectors/ID`. 0 for a plain store, and for a scan of a
    /// directory alone ([`verify_erasure`]).
    #[serde(default)]
    pub opened: u64,
}

impl ScanReport {
    /// True when no pattern was found in any file.
    pub fn is_clean(&self) -> bool {
        self.matches_total == 0
    }
}

/// Reads every file under `dir` (recursively; symbolic links are listed as
/// skipped, not followed; Unix sockets, which hold no bytes, are passed
/// over) and searches it for `patterns`, recording each
/// file's length and SHA-256. Works on a closed store as well as an open one
/// (files are only read).
///
/// # Errors
/// [`Error::Io`] when the directory or a file cannot be read (a file that
/// disappears during the scan is listed in `skipped` instead).
///
/// ```
/// # fn main() -> mnemon::Result<()> {
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a.bin"), b"xx my secret canary text xx")?;
/// let mut p = mnemon::erase::ErasurePatterns::new();
/// p.add_text("my secret canary text");
/// let report = mnemon::verify_erasure(dir.path(), &p)?;
/// assert_eq!(report.matches_total, 1);
/// assert_eq!(report.matches[0].offset, 3);
/// # Ok(()) }
/// ```
pub fn verify_erasure(dir: &Path, patterns: &ErasurePatterns) -> Result<ScanReport> {
    let matcher = if patterns.is_empty() { None } else { Some(Matcher::new(&patterns.patterns)) };
    let mut paths = Vec::new();
    let mut skipped = Vec::new();
    walk(dir, dir, &mut paths, &mut skipped)?;
    paths.sort();
    let mut report = ScanReport {
        root: dir.to_path_buf(),
        files: Vec::with_capacity(paths.len()),
        skipped,
        bytes_scanned: 0,
        patterns: patterns.len(),
        matches_total: 0,
        matches: Vec::new(),
        opened: 0,
    };
    for (rel, path) in paths {
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                report.skipped.push(format!("{rel}: removed during the scan"));
                continue;
            }
            Err(e) => return Err(Error::Io(e)),
        };
        let (len, sha256) = scan_file(file, &rel, matcher.as_ref(), patterns, &mut report, CHUNK_BYTES)?;
        report.bytes_scanned += len;
        report.files.push(ScannedFile { path: rel, len, sha256 });
    }
    Ok(report)
}

/// Searches `patterns` in every record and cached vector of `store`
/// opened with its keys, when the store is encrypted (a record sealed under
/// a destroyed key opens to the placeholder of a shredded record, and is
/// searched as that); adds what it finds to `report` (see
/// [`ScanReport::opened`]). Nothing for a plain store, whose files the
/// directory scan reads in plain.
///
/// # Errors
/// Errors reading or opening a record ([`Error::Corrupted`] for a damaged
/// one).
pub(crate) fn scan_opened(
    store: &dyn crate::log::LogStore,
    patterns: &ErasurePatterns,
    report: &mut ScanReport,
) -> Result<()> {
    if store.sealed().is_none() || patterns.is_empty() {
        return Ok(());
    }
    let m = Matcher::new(&patterns.patterns);
    let search = |path: &dyn Fn() -> String, bytes: &[u8], report: &mut ScanReport| {
        let mut found = Vec::new();
        m.find(&patterns.patterns, bytes, bytes.len(), |i, at| found.push((i, at)));
        for (i, at) in found {
            report.matches_total += 1;
            if report.matches.len() < MAX_LISTED_MATCHES {
                report.matches.push(PatternMatch { path: path(), offset: at as u64, kind: patterns.patterns[i].1 });
            }
        }
    };
    for r in store.scan(0, u64::MAX) {
        let (seq, bytes) = r?;
        search(&|| format!("opened:log/{seq}"), &bytes, report);
        report.opened += 1;
    }
    for e in store.vector_entries() {
        let e = e?;
        for bytes in vector_layouts(&e.cached.vector) {
            search(&|| format!("opened:vectors/{}", e.id.0), &bytes, report);
        }
        report.opened += 1;
    }
    Ok(())
}

/// The two byte layouts a vector is found in: IEEE 754 binary16 LE (the
/// vector cache's, [`crate::log::vector_f16_bytes`]) and f32 LE (the
/// cache's earlier layout, and the embedder's output).
pub(crate) fn vector_layouts(v: &[f32]) -> [Vec<u8>; 2] {
    [crate::log::vector_f16_bytes(v), v.iter().flat_map(|x| x.to_le_bytes()).collect()]
}

/// Streams one file: hashes it and finds every occurrence of every
/// pattern. Each start position is examined once, when the buffer holds
/// the longest pattern's length past it (or the file has ended); the bytes
/// from the first unexamined position on are carried to the next buffer.
fn scan_file(
    mut file: File,
    rel: &str,
    matcher: Option<&Matcher>,
    patterns: &ErasurePatterns,
    report: &mut ScanReport,
    chunk_bytes: usize,
) -> Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let max_len = matcher.map_or(1, |m| m.max_len);
    let mut buf: Vec<u8> = Vec::with_capacity(chunk_bytes + max_len);
    let mut chunk = vec![0u8; chunk_bytes];
    let mut total: u64 = 0;
    // File offset of buf[0].
    let mut base: u64 = 0;
    loop {
        let n = match file.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::Io(e)),
        };
        let eof = n == 0;
        hasher.update(&chunk[..n]);
        buf.extend_from_slice(&chunk[..n]);
        total += n as u64;
        let upto = if eof { buf.len() } else { buf.len().saturating_sub(max_len - 1) };
        if let Some(m) = matcher {
            m.find(&patterns.patterns, &buf, upto, |i, at| {
                report.matches_total += 1;
                if report.matches.len() < MAX_LISTED_MATCHES {
                    report.matches.push(PatternMatch {
                        path: rel.to_string(),
                        offset: base + at as u64,
                        kind: patterns.patterns[i].1,
                    });
                }
            });
        }
        if eof {
            break;
        }
        buf.drain(..upto);
        base += upto as u64;
    }
    Ok((total, hex::encode(hasher.finalize())))
}

/// Whether `ft` is a Unix domain socket (never, off Unix).
#[cfg(unix)]
fn is_socket(ft: &fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    ft.is_socket()
}

#[cfg(not(unix))]
fn is_socket(_: &fs::FileType) -> bool {
    false
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>, skipped: &mut Vec<String>) -> Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::Io(e)),
        };
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let ft = match entry.file_type() {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::Io(e)),
        };
        if is_socket(&ft) {
            // A Unix socket (the server's `mnemon.sock`) is a name for a
            // kernel endpoint: it holds no bytes on disk, so there is
            // nothing to read and nothing left unread.
            continue;
        } else if ft.is_symlink() {
            skipped.push(format!("{rel}: symbolic link, not followed"));
        } else if ft.is_dir() {
            match walk(root, &path, out, skipped) {
                Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                    skipped.push(format!("{rel}/: removed during the scan"));
                }
                r => r?,
            }
        } else if ft.is_file() {
            out.push((rel, path));
        } else {
            skipped.push(format!("{rel}: not a regular file"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_matches_across_chunk_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "a secret that straddles the chunk boundary, 0123456789";
        let mut data = vec![b'.'; CHUNK_BYTES - 20];
        data.extend_from_slice(secret.as_bytes());
        data.extend_from_slice(&[b'.'; 100]);
        std::fs::write(dir.path().join("f"), &data).unwrap();
        let mut p = ErasurePatterns::new();
        p.add_text(secret);
        let r = verify_erasure(dir.path(), &p).unwrap();
        let whole: Vec<_> = r.matches.iter().filter(|m| m.kind == PatternKind::Text).collect();
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].offset, (CHUNK_BYTES - 20) as u64);
        // Whole text plus each of its windows, each found exactly once.
        assert_eq!(r.matches_total as usize, p.len());
        assert_eq!(r.files[0].len, data.len() as u64);
        assert_eq!(r.files[0].sha256, hex::encode(Sha256::digest(&data)));
    }

    /// A running server's socket holds no bytes: it is neither read nor
    /// listed as skipped, while a symbolic link still is.
    #[cfg(unix)]
    #[test]
    fn sockets_are_passed_over_and_links_listed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data"), b"kept text").unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("mnemon.sock")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("data"), dir.path().join("link")).unwrap();
        let mut p = ErasurePatterns::new();
        p.add_text("kept text");
        let r = verify_erasure(dir.path(), &p).unwrap();
        assert_eq!(r.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["data"]);
        assert_eq!(r.skipped, ["link: symbolic link, not followed"]);
        assert_eq!(r.matches_total as usize, p.len());
    }

    /// Every (pattern, offset) the naive search finds, and nothing else.
    #[test]
    fn matches_equal_a_naive_search() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
        for round in 0..40 {
            // A small alphabet, so patterns recur and overlap.
            let hay: Vec<u8> = (0..3000).map(|_| rng.gen_range(b'a'..b'd')).collect();
            let mut p = ErasurePatterns::new();
            for _ in 0..rng.gen_range(1..30) {
                let len = if rng.gen_bool(0.5) { WINDOW_BYTES } else { rng.gen_range(8..80) };
                let at = rng.gen_range(0..hay.len() - len);
                let kind = if len == WINDOW_BYTES { PatternKind::TextWindow } else { PatternKind::Text };
                p.push(&hay[at..at + len], kind);
            }
            p.push(b"zzzzzzzzzzzz", PatternKind::Text);
            let mut want: Vec<(u64, usize)> = Vec::new();
            for (i, (pat, _)) in p.patterns.iter().enumerate() {
                for at in 0..=hay.len() - pat.len() {
                    if hay[at..at + pat.len()] == pat[..] {
                        want.push((at as u64, i));
                    }
                }
            }
            want.sort_unstable();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            std::fs::write(&path, &hay).unwrap();
            let m = Matcher::new(&p.patterns);
            for chunk in [1, 7, 100, 4096] {
                let mut r = ScanReport {
                    root: dir.path().to_path_buf(),
                    files: vec![],
                    skipped: vec![],
                    bytes_scanned: 0,
                    patterns: p.len(),
                    matches_total: 0,
                    matches: vec![],
                    opened: 0,
                };
                scan_file(File::open(&path).unwrap(), "f", Some(&m), &p, &mut r, chunk).unwrap();
                let mut got: Vec<(u64, usize)> = Vec::new();
                // Recover pattern indexes by comparing bytes at each offset.
                for mt in &r.matches {
                    let at = usize::try_from(mt.offset).unwrap();
                    for (i, (pat, k)) in p.patterns.iter().enumerate() {
                        if *k == mt.kind && hay.len() - at >= pat.len() && hay[at..at + pat.len()] == pat[..] {
                            got.push((mt.offset, i));
                        }
                    }
                }
                got.sort_unstable();
                got.dedup();
                assert_eq!(r.matches_total as usize, want.len(), "round {round}, chunk {chunk}");
                if want.len() <= MAX_LISTED_MATCHES {
                    assert_eq!(got, want, "round {round}, chunk {chunk}");
                }
            }
        }
    }

    #[test]
    fn partial_copy_is_found_and_shared_windows_are_excluded() {
        let text = "The quick brown fox jumps over the lazy dog near the river bank at dawn";
        let mut p = ErasurePatterns::new();
        p.add_text(text);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), &text.as_bytes()[10..60]).unwrap();
        let r = verify_erasure(dir.path(), &p).unwrap();
        assert!(r.matches.iter().any(|m| m.kind == PatternKind::TextWindow));
        assert!(!r.matches.iter().any(|m| m.kind == PatternKind::Text));
        let n = p.len();
        let dropped = p.exclude_windows_found_in([&text.as_bytes()[..40]]);
        assert!(dropped >= 1);
        assert_eq!(p.len(), n - dropped);
        let dropped_all = p.exclude_found_in([text]);
        assert_eq!(p.len(), 0, "{dropped_all}");
    }

    #[test]
    fn low_information_and_short_inputs() {
        let mut p = ErasurePatterns::new();
        p.add_text("short");
        p.add_vector(&[0.0; 64]);
        p.add_text(&" ".repeat(100));
        assert_eq!(p.too_short(), 1);
        assert_eq!(p.len(), 0);
        assert_eq!(p.low_information(), 2);
        // 12 components: 48 f32 bytes, but 24 f16 bytes, under one window of
        // the layout on disk: too short, whatever its f32 windows.
        let twelve: Vec<f32> = (0..12).map(|i| (i as f32 * 0.71).sin()).collect();
        p.add_vector(&twelve);
        assert_eq!((p.too_short(), p.low_information()), (2, 2));
        let mut p = ErasurePatterns::new();
        let v: Vec<f32> = (0..384).map(|i| (i as f32 * 0.37).sin()).collect();
        p.add_vector(&v);
        assert_eq!(p.len(), 2 * MAX_VECTOR_WINDOWS, "f32 and f16 windows");
        assert_eq!((p.too_short(), p.low_information()), (0, 0));
    }
}
