//! A damaged log refuses to open, naming the first bad record, and opens
//! again unchanged once the damage is undone.
//!
//! The damage is done through sled directly, on the generation that
//! `DATA/CURRENT` names: tree `events`, keys are the big-endian `Seq`.

use std::error::Error as StdError;
use std::path::{Path, PathBuf};

use mnemon::{Engine, Error, ForgetRequest, Namespace, NewMemory, NewObservation, Role};

type TestResult = Result<(), Box<dyn StdError>>;

fn ns(name: &str) -> Namespace {
    Namespace::new(name).expect("valid namespace")
}

/// A closed store with a few events of every kind; returns its digest.
fn build_store(dir: &Path) -> Result<String, Box<dyn StdError>> {
    let engine = Engine::open(dir)?;
    let (u1, u2) = (ns("u1"), ns("u2"));
    engine.observe(&u1, NewObservation::new("s1", Role::User, "I just moved to Berlin"))?; // 1
    let city = engine.remember(&u1, NewMemory::new("The user lives in Berlin").key("user.city"))?; // 2
    engine.remember(&u2, NewMemory::new("用户喜欢喝乌龙茶"))?; // 3
    engine.remember(&u1, NewMemory::new("The user lives in Hamburg now").key("user.city"))?; // 4, 5
    let gone = engine.remember(&u2, NewMemory::new("用户的生日是三月五日"))?; // 6
    engine.forget(&u2, ForgetRequest::Memory(gone.id), "user asked")?; // 7
    engine.remember(&u1, NewMemory::new("The user works night shifts"))?; // 8
    assert_eq!(engine.stats().last_seq, 8);
    assert_eq!(city.id.0, 2);
    let digest = engine.digest();
    engine.close()?;
    Ok(digest)
}

fn generation_path(dir: &Path) -> Result<PathBuf, Box<dyn StdError>> {
    let current = std::fs::read_to_string(dir.join("CURRENT"))?;
    assert_eq!(current.trim(), "gen-000001");
    Ok(dir.join(current.trim()))
}

/// Opens the store's sled database, runs `f` on its `events` tree, flushes.
fn with_events<T>(dir: &Path, f: impl FnOnce(&sled::Tree) -> T) -> Result<T, Box<dyn StdError>> {
    let path = generation_path(dir)?;
    // sled's own threads may hold its file lock for a moment after a close.
    let mut tries = 0;
    let db = loop {
        match sled::Config::new().path(&path).open() {
            Ok(db) => break db,
            Err(sled::Error::Io(e)) if tries < 100 && e.to_string().contains("could not acquire lock") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    };
    let events = db.open_tree("events")?;
    let out = f(&events);
    db.flush()?;
    Ok(out)
}

fn read(dir: &Path, seq: u64) -> Result<Vec<u8>, Box<dyn StdError>> {
    let v = with_events(dir, |t| t.get(seq.to_be_bytes()))??;
    Ok(v.ok_or("record missing")?.to_vec())
}

fn write(dir: &Path, seq: u64, bytes: &[u8]) -> TestResult {
    with_events(dir, |t| t.insert(seq.to_be_bytes(), bytes))??;
    Ok(())
}

fn expect_corrupted(dir: &Path, want: u64, what: &str) {
    match Engine::open(dir) {
        Err(Error::Corrupted { seq, reason }) => {
            assert_eq!(seq, want, "{what}: {reason}");
            let msg = Error::Corrupted { seq, reason }.to_string();
            assert!(msg.contains(&format!("seq {want}")), "{what}: {msg}");
        }
        Err(other) => panic!("{what}: expected Corrupted {{ seq: {want} }}, got {other:?}"),
        Ok(_) => panic!("{what}: a damaged store opened"),
    }
}

/// Opens the repaired store and checks that nothing changed.
fn expect_intact(dir: &Path, digest: &str) -> TestResult {
    let engine = Engine::open(dir)?;
    assert_eq!(engine.digest(), digest);
    assert_eq!(engine.stats().last_seq, 8);
    engine.close()?;
    Ok(())
}

#[test]
fn mangled_record_names_its_seq() -> TestResult {
    let dir = tempfile::tempdir()?;
    let digest = build_store(dir.path())?;
    for seq in [1u64, 3, 5, 8] {
        let good = read(dir.path(), seq)?;
        // One flipped bit in the payload.
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0x10;
        write(dir.path(), seq, &bad)?;
        expect_corrupted(dir.path(), seq, &format!("flipped bit at {seq}"));
        // A flipped checksum, a truncated record, an empty value.
        let mut bad = good.clone();
        bad[2] ^= 0xff;
        write(dir.path(), seq, &bad)?;
        expect_corrupted(dir.path(), seq, &format!("checksum at {seq}"));
        write(dir.path(), seq, &good[..good.len() / 2])?;
        expect_corrupted(dir.path(), seq, &format!("truncated at {seq}"));
        write(dir.path(), seq, &[])?;
        expect_corrupted(dir.path(), seq, &format!("empty at {seq}"));
        write(dir.path(), seq, &good)?;
        expect_intact(dir.path(), &digest)?;
    }
    Ok(())
}

#[test]
fn record_under_the_wrong_key_names_the_key() -> TestResult {
    let dir = tempfile::tempdir()?;
    let digest = build_store(dir.path())?;
    let four = read(dir.path(), 4)?;
    let two = read(dir.path(), 2)?;
    // A valid record of seq 2 stored under key 4.
    write(dir.path(), 4, &two)?;
    expect_corrupted(dir.path(), 4, "seq 2's record under key 4");
    write(dir.path(), 4, &four)?;
    expect_intact(dir.path(), &digest)?;
    Ok(())
}

#[test]
fn missing_record_names_the_gap() -> TestResult {
    let dir = tempfile::tempdir()?;
    let digest = build_store(dir.path())?;
    let three = read(dir.path(), 3)?;
    with_events(dir.path(), |t| t.remove(3u64.to_be_bytes()))??;
    expect_corrupted(dir.path(), 3, "seq 3 removed");
    write(dir.path(), 3, &three)?;
    expect_intact(dir.path(), &digest)?;

    // A record past a gap at the end of the log.
    write(dir.path(), 10, &three)?;
    expect_corrupted(dir.path(), 9, "record 10 after 8");
    with_events(dir.path(), |t| t.remove(10u64.to_be_bytes()))??;
    expect_intact(dir.path(), &digest)?;
    Ok(())
}

#[test]
fn stray_key_is_corruption() -> TestResult {
    let dir = tempfile::tempdir()?;
    let digest = build_store(dir.path())?;
    let one = read(dir.path(), 1)?;
    // A key that is not 8 bytes, sorting after every record.
    with_events(dir.path(), |t| t.insert([0xffu8; 9], one.as_slice()))??;
    match Engine::open(dir.path()) {
        Err(Error::Corrupted { seq, reason }) => assert_eq!(seq, 9, "{reason}"),
        other => panic!("expected Corrupted, got {other:?}"),
    }
    with_events(dir.path(), |t| t.remove([0xffu8; 9]))??;
    expect_intact(dir.path(), &digest)?;
    Ok(())
}

#[test]
fn newer_format_record_is_incompatible() -> TestResult {
    let dir = tempfile::tempdir()?;
    let digest = build_store(dir.path())?;
    let five = read(dir.path(), 5)?;
    let mut newer = five.clone();
    // A sealed record of an encrypted store needs a key.
    newer[0] = mnemon::event::SEALED_VERSION;
    write(dir.path(), 5, &newer)?;
    match Engine::open(dir.path()) {
        Err(Error::KeyRequired(msg)) => assert!(msg.contains("seq 5"), "{msg}"),
        other => panic!("expected KeyRequired, got {other:?}"),
    }
    newer[0] = mnemon::event::SEALED_VERSION + 1;
    write(dir.path(), 5, &newer)?;
    match Engine::open(dir.path()) {
        Err(Error::IncompatibleFormat(msg)) => assert!(msg.contains("seq 5"), "{msg}"),
        other => panic!("expected IncompatibleFormat, got {other:?}"),
    }
    write(dir.path(), 5, &five)?;
    expect_intact(dir.path(), &digest)?;
    Ok(())
}
