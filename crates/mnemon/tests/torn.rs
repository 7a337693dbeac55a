//! Torn and corrupt data: a closed store is copied, its sled files are cut
//! at many offsets and bytes are flipped (mostly in the recently written
//! tail, some anywhere), and each copy is opened. Opening must either
//! succeed with a prefix of what was written (every memory read back equals
//! what was written, and if memory `s` is there every earlier one is) or
//! fail with a typed error. A panic or wrong content fails the test.
//!
//! `MNEMON_TORN_VARIANTS` sets the number of byte-flip variants (default
//! 150); `MNEMON_TORN_SEED` replays a run.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use mnemon::{DedupMode, Engine, Error, MemoryId, Namespace, NewMemory};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn ns() -> Namespace {
    Namespace::new("u1").unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_dir(&e.path(), &dest);
        } else if t.is_file() {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            files_under(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}

#[derive(Clone, Debug)]
enum Damage {
    Truncate { file: PathBuf, len: u64 },
    Flip { file: PathBuf, offset: u64, mask: u8 },
}

#[derive(Default, Debug)]
struct Tally {
    variants: usize,
    recovered_full: usize,
    recovered_prefix: usize,
    errors: BTreeMap<String, usize>,
    panics: usize,
    wrong: Vec<String>,
    /// One message per distinct error text prefix, to show what was reported.
    samples: BTreeMap<String, String>,
}

fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::Corrupted { .. } => "Corrupted",
        Error::Io(_) => "Io",
        Error::Storage(_) => "Storage",
        Error::IncompatibleFormat(_) => "IncompatibleFormat",
        Error::Locked { .. } => "Locked",
        _ => "other",
    }
}

/// Opens a damaged copy and classifies the outcome.
fn try_variant(dir: &Path, written: &BTreeMap<u64, String>, damage: &Damage, tally: &mut Tally) {
    tally.variants += 1;
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<usize, Error> {
        let e = Engine::open(dir)?;
        let mut present = 0;
        let mut gap = None;
        for (id, text) in written {
            match e.get(&ns(), MemoryId(*id)) {
                Ok(m) => {
                    if &m.content != text {
                        return Ok(usize::MAX - 1);
                    }
                    if gap.is_some() {
                        return Ok(usize::MAX);
                    }
                    present += 1;
                }
                Err(_) => gap = gap.or(Some(*id)),
            }
        }
        let r = e.check()?;
        if !r.consistent {
            return Ok(usize::MAX - 2);
        }
        e.close()?;
        Ok(present)
    }));
    match outcome {
        Err(_) => tally.panics += 1,
        Ok(Err(e)) => {
            *tally.errors.entry(error_kind(&e).to_string()).or_default() += 1;
            let text = e.to_string();
            let key: String = text.chars().take(40).collect();
            tally.samples.entry(key).or_insert(text);
            if error_kind(&e) == "other" || error_kind(&e) == "Locked" {
                tally.wrong.push(format!("{damage:?}: untyped error {e}"));
            }
        }
        Ok(Ok(n)) if n == usize::MAX - 1 => tally.wrong.push(format!("{damage:?}: wrong content read back")),
        Ok(Ok(n)) if n == usize::MAX => tally.wrong.push(format!("{damage:?}: a memory after a missing one")),
        Ok(Ok(n)) if n == usize::MAX - 2 => tally.wrong.push(format!("{damage:?}: projections differ from replay")),
        Ok(Ok(n)) if n == written.len() => tally.recovered_full += 1,
        Ok(Ok(_)) => tally.recovered_prefix += 1,
    }
}

fn apply(damage: &Damage) {
    match damage {
        Damage::Truncate { file, len } => {
            let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
            f.set_len(*len).unwrap();
        }
        Damage::Flip { file, offset, mask } => {
            let mut bytes = std::fs::read(file).unwrap();
            let i = usize::try_from(*offset).unwrap();
            bytes[i] ^= mask;
            std::fs::write(file, bytes).unwrap();
        }
    }
}

#[test]
fn torn_and_corrupt_copies_open_to_a_prefix_or_a_typed_error() {
    let seed: u64 =
        std::env::var("MNEMON_TORN_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| rand::thread_rng().gen());
    let flips: usize = std::env::var("MNEMON_TORN_VARIANTS").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    println!("torn: seed {seed} (MNEMON_TORN_SEED={seed} to replay)");
    let mut rng = SmallRng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let mut written = BTreeMap::new();
    {
        let e = Engine::open(&base).unwrap();
        for i in 0..120 {
            // Letters only: digit runs could be taken for personal data and redacted.
            let word: String = (0..12).map(|_| char::from(b'a' + rng.gen_range(0..26u8))).collect();
            let text = format!("torn test memory {word} {}", char::from(b'a' + (i % 26) as u8));
            let id = e.remember(&ns(), NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
            written.insert(id.0, text);
        }
        e.close().unwrap();
    }
    let mut files = Vec::new();
    files_under(&base, &mut files);
    files.retain(|f| !f.ends_with("LOCK"));
    let mut damages = Vec::new();
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len();
        let rel = f.strip_prefix(&base).unwrap().to_path_buf();
        // Cuts near the end (the last writes), and spread over the file.
        let mut cuts: Vec<u64> = (1..=24u64).map(|k| len.saturating_sub(k * k * 7)).collect();
        cuts.extend((0..8).map(|k| len * k / 8));
        cuts.sort_unstable();
        cuts.dedup();
        for c in cuts {
            if c < len {
                damages.push(Damage::Truncate { file: rel.clone(), len: c });
            }
        }
    }
    let sizes: Vec<u64> = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).collect();
    let total: u64 = sizes.iter().sum();
    for _ in 0..flips {
        // Weighted by size, so the database file gets most of them.
        let mut at = rng.gen_range(0..total);
        let mut k = 0;
        while at >= sizes[k] {
            at -= sizes[k];
            k += 1;
        }
        let len = sizes[k];
        let offset = if rng.gen_bool(0.7) { len - 1 - rng.gen_range(0..len.min(64 * 1024)) } else { at };
        let rel = files[k].strip_prefix(&base).unwrap().to_path_buf();
        damages.push(Damage::Flip { file: rel, offset, mask: 1 << rng.gen_range(0..8) });
    }
    let mut tally = Tally::default();
    let start = std::time::Instant::now();
    for (i, d) in damages.iter().enumerate() {
        let dir = tmp.path().join(format!("v{i}"));
        copy_dir(&base, &dir);
        let abs = match d {
            Damage::Truncate { file, len } => Damage::Truncate { file: dir.join(file), len: *len },
            Damage::Flip { file, offset, mask } => Damage::Flip { file: dir.join(file), offset: *offset, mask: *mask },
        };
        apply(&abs);
        try_variant(&dir, &written, d, &mut tally);
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "torn: {} variants in {:.1}s over {} files: {} opened with everything, {} opened with a prefix, errors {:?}, {} panics, {} wrong",
        tally.variants,
        start.elapsed().as_secs_f64(),
        files.len(),
        tally.recovered_full,
        tally.recovered_prefix,
        tally.errors,
        tally.panics,
        tally.wrong.len()
    );
    for s in tally.samples.values() {
        println!("torn: error seen: {s}");
    }
    for w in &tally.wrong {
        println!("torn: {w}");
    }
    assert_eq!(tally.panics, 0, "opening a damaged store panicked");
    assert!(tally.wrong.is_empty(), "damaged stores read back wrong data");
}
