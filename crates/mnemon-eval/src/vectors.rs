//! Vectors of evaluation runs, kept by text so that each text is embedded
//! once per model — across the modes of one run and, with `mnemon eval
//! --vector-cache DIR`, across runs.
//!
//! On disk: one append-only file per model, `DIR/<model id>.vectors`, of
//! records `kind (1 byte: 0 passage, 1 query) · SHA-256 of the text (first
//! 16 bytes) · dim (u32 LE) · dim × f32 LE`. The file holds no text, only
//! digests, and is a cache: deleting it loses nothing.
//!
//! Runs may share the file. Every read of the file and every append happens
//! under an exclusive advisory lock on `DIR/<model id>.vectors.lock` (std's
//! `File::lock`), and new records are appended in whole batches under it,
//! so records of two runs never interleave. A torn last record (a run
//! killed mid-write) is skipped on load (counted in
//! [`VectorCache::torn_tail_bytes`]) and cut off, under the lock, before the
//! next append; records other runs appended since are read in then too.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use mnemon::embed::EmbedKind;
use mnemon::Result;

/// A record's key: kind (0 passage, 1 query) and the first 16 bytes of the
/// text's SHA-256.
pub type VectorKey = (u8, [u8; 16]);
type Key = VectorKey;

/// Largest dimension a record may claim (guards against corrupt files).
const MAX_DIM: usize = 8192;

/// Pending bytes past which [`VectorCache::put`] appends to the file.
const FLUSH_AT: usize = 4 << 20;

/// The cache: vectors by (kind, text digest), plus the file new ones go to.
#[derive(Default, Debug)]
pub struct VectorCache {
    map: HashMap<Key, Vec<f32>>,
    disk: Option<Disk>,
    /// Vectors read from the file at open.
    pub loaded: usize,
    /// Bytes of a torn or malformed tail skipped (and cut off) at open.
    pub torn_tail_bytes: u64,
}

/// The file side of a cache.
#[derive(Debug)]
struct Disk {
    path: PathBuf,
    file: File,
    lock: File,
    /// Length of the well-formed prefix as this cache last saw it.
    seen_len: u64,
    /// Encoded records not yet appended.
    pending: Vec<u8>,
}

/// Holds the exclusive lock on the lock file until dropped.
struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    fn take(f: &'a File) -> std::io::Result<Self> {
        f.lock()?;
        Ok(Locked(f))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

fn key(kind: EmbedKind, text: &str) -> Key {
    let d = Sha256::digest(text.as_bytes());
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    (u8::from(kind == EmbedKind::Query), k)
}

impl VectorCache {
    /// A cache kept in memory only.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Opens (creating `dir` if needed) the file for `model_id` and loads its
    /// vectors, under the lock. A torn or malformed tail is skipped, cut off
    /// and counted in [`VectorCache::torn_tail_bytes`].
    ///
    /// # Errors
    /// [`mnemon::Error::Io`] when the directory or a file cannot be created,
    /// locked or read.
    pub fn open(dir: &Path, model_id: &str) -> Result<Self> {
        std::fs::create_dir_all(dir)?;
        let name: String =
            model_id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.@".contains(c) { c } else { '_' }).collect();
        let path = dir.join(format!("{name}.vectors"));
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(format!("{name}.vectors.lock")))?;
        let file = OpenOptions::new().read(true).append(true).create(true).open(&path)?;
        let mut disk = Disk { path, file, lock, seen_len: 0, pending: Vec::new() };
        let mut map = HashMap::new();
        let torn = {
            let _held = Locked::take(&disk.lock)?;
            catch_up(&mut disk.file, &mut disk.seen_len, &mut map)?
        };
        let loaded = map.len();
        Ok(VectorCache { map, disk: Some(disk), loaded, torn_tail_bytes: torn })
    }

    /// Where the vectors are kept on disk, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.disk.as_ref().map(|d| d.path.as_path())
    }

    /// The vector of `text`, if cached.
    pub fn get(&self, kind: EmbedKind, text: &str) -> Option<&Vec<f32>> {
        self.map.get(&key(kind, text))
    }

    /// Caches `v` for `text` (and queues it for the file, if any; the queue
    /// is appended when it grows past a few MiB, on [`VectorCache::flush`]
    /// and on drop).
    ///
    /// # Errors
    /// [`mnemon::Error::Io`] when the file cannot be locked or written.
    pub fn put(&mut self, kind: EmbedKind, text: &str, v: Vec<f32>) -> Result<()> {
        let k = key(kind, text);
        let mut full = false;
        if let Some(d) = self.disk.as_mut() {
            d.pending.extend_from_slice(&encode_record(&k, &v));
            full = d.pending.len() >= FLUSH_AT;
        }
        self.map.insert(k, v);
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// Appends the queued records to the file, under the lock, in one
    /// write; first reads in what other runs appended since this cache
    /// last looked and cuts off a torn tail.
    ///
    /// # Errors
    /// [`mnemon::Error::Io`] when the file cannot be locked, read or written.
    pub fn flush(&mut self) -> Result<()> {
        let Some(d) = self.disk.as_mut() else {
            return Ok(());
        };
        if d.pending.is_empty() {
            return Ok(());
        }
        let _held = Locked::take(&d.lock)?;
        // Records of other runs: kept, but this run's own vectors win.
        let mut theirs = HashMap::new();
        catch_up(&mut d.file, &mut d.seen_len, &mut theirs)?;
        for (k, v) in theirs {
            self.map.entry(k).or_insert(v);
        }
        d.file.write_all(&d.pending)?;
        d.file.flush()?;
        d.seen_len += d.pending.len() as u64;
        d.pending.clear();
        Ok(())
    }
}

/// With the lock held: reads the records appended to `file` since
/// `seen_len` into `map`, cuts off a torn tail, moves `seen_len` to the end
/// and returns how many bytes it cut.
fn catch_up(file: &mut File, seen_len: &mut u64, map: &mut HashMap<Key, Vec<f32>>) -> Result<u64> {
    let len = file.metadata()?.len();
    if len < *seen_len {
        // Replaced or cut by hand: read it again from the start.
        *seen_len = 0;
    }
    if len == *seen_len {
        return Ok(0);
    }
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(*seen_len))?;
    (&*file).take(len - *seen_len).read_to_end(&mut bytes)?;
    let (records, at) = parse_records(&bytes);
    map.extend(records);
    let good = *seen_len + at as u64;
    if good < len {
        file.set_len(good)?;
    }
    *seen_len = good;
    Ok(len - good)
}

/// One record's bytes (the file format in the module docs).
pub fn encode_record(key: &VectorKey, v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(21 + 4 * v.len());
    out.push(key.0);
    out.extend_from_slice(&key.1);
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Decodes a cache file's bytes: the records of its longest well-formed
/// prefix, in order, and that prefix's length in bytes. A record is
/// malformed when its kind byte is above 1, its dimension is 0 or above
/// 8192, it is cut short, or a component is NaN or infinite; decoding stops
/// there. Never panics.
pub fn parse_records(bytes: &[u8]) -> (Vec<(VectorKey, Vec<f32>)>, usize) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some((k, v, next)) = parse(bytes, at) {
        out.push((k, v));
        at = next;
    }
    (out, at)
}

/// One record at `at`: key, vector, offset of the next record; `None` at the
/// end or on a torn or malformed record.
fn parse(bytes: &[u8], at: usize) -> Option<(Key, Vec<f32>, usize)> {
    let head = bytes.get(at..at.checked_add(21)?)?;
    if head[0] > 1 {
        return None;
    }
    let mut digest = [0u8; 16];
    digest.copy_from_slice(&head[1..17]);
    let dim = u32::from_le_bytes(head[17..21].try_into().ok()?) as usize;
    if dim == 0 || dim > MAX_DIM {
        return None;
    }
    let body = bytes.get(at + 21..(at + 21).checked_add(dim * 4)?)?;
    let v: Vec<f32> = body.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    Some(((head[0], digest), v, at + 21 + dim * 4))
}

impl Drop for VectorCache {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut c = VectorCache::open(dir.path(), "m@1").unwrap();
            c.put(EmbedKind::Passage, "我喜欢偏酸的咖啡", vec![0.5, -0.25]).unwrap();
            c.put(EmbedKind::Query, "我喜欢偏酸的咖啡", vec![1.0, 0.0]).unwrap();
        }
        let path = dir.path().join("m@1.vectors");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&[0, 1, 2]); // torn record
        std::fs::write(&path, &bytes).unwrap();
        let mut c = VectorCache::open(dir.path(), "m@1").unwrap();
        assert_eq!((c.loaded, c.torn_tail_bytes), (2, 3));
        assert_eq!(c.get(EmbedKind::Passage, "我喜欢偏酸的咖啡"), Some(&vec![0.5, -0.25]));
        assert_eq!(c.get(EmbedKind::Query, "我喜欢偏酸的咖啡"), Some(&vec![1.0, 0.0]));
        assert_eq!(c.get(EmbedKind::Passage, "other"), None);
        c.put(EmbedKind::Passage, "other", vec![3.0]).unwrap();
        drop(c);
        let c = VectorCache::open(dir.path(), "m@1").unwrap();
        assert_eq!(c.loaded, 3);
        assert_eq!(c.get(EmbedKind::Passage, "other"), Some(&vec![3.0]));
    }
}
