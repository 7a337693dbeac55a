//! A store whose disk fills up: it still opens, reads, checks and exports,
//! refuses writes with a clear error and writes nothing, and takes writes
//! again once there is room. A snapshot that sled began and never finished
//! (cut by the full disk, or by a kill) never makes the store unopenable.
//!
//! The full disk is a small tmpfs mounted over a temporary directory, which
//! needs root (CI runs as root); elsewhere the tests that need it say so
//! and return, unless `CI` is set, where they fail.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use mnemon::embed::HashingEmbedder;
use mnemon::{Engine, Error, Namespace, NewMemory, RecallOptions};

const BIN: &str = env!("CARGO_BIN_EXE_mnemon");

/// One test at a time: a child process started by one (`mount`, the CLI)
/// holds copies of the other's open files until it execs, the store's
/// `LOCK` among them, so a reopen at that moment would find it locked.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A tmpfs of `mib` MiB mounted at a fresh directory, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(mib: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(SmallDisk { dir });
        }
        assert!(std::env::var_os("CI").is_none(), "mounting a tmpfs failed: CI runs these tests as root");
        eprintln!("skipped: mounting a tmpfs needs root");
        None
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the disk refuses; returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("ballast");
        let mut f = fs::File::create(&path).unwrap();
        for chunk in [1 << 20, 4096, 1] {
            let buf = vec![7u8; chunk];
            while f.write_all(&buf).is_ok() {}
        }
        let _ = f.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn engine(path: &Path) -> mnemon::Result<Engine> {
    Engine::builder(path).embedder(Arc::new(HashingEmbedder::new(384).unwrap())).open()
}

fn ns() -> Namespace {
    Namespace::new("u1").unwrap()
}

fn write_some(path: &Path, tag: &str, n: usize) -> Vec<u64> {
    let e = engine(path).unwrap();
    let ids = (0..n)
        .map(|i| {
            e.remember(&ns(), NewMemory::new(format!("Fact {tag}{i}: the heron nests by the river"))).unwrap().id.0
        })
        .collect();
    e.close().unwrap();
    ids
}

fn cli(data: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).arg("--data").arg(data).args(["--embedder", "hashing"]).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn is_disk_full(e: &Error) -> bool {
    matches!(e, Error::Io(io) if io.kind() == std::io::ErrorKind::StorageFull)
}

#[test]
fn a_full_disk_opens_read_only_and_writes_again_once_there_is_room() {
    let _serial = SERIAL.lock();
    let Some(disk) = SmallDisk::mount(32) else { return };
    let data = disk.path().join("store");
    let ids = write_some(&data, "a", 40);
    assert_eq!(fs::metadata(data.join("RESERVE")).unwrap().len(), mnemon::DEFAULT_RESERVE_BYTES);
    // The process that filled the disk wrote after the last snapshot, so
    // the next open has to write one.
    write_some(&data, "b", 1);
    let ballast = disk.fill();

    // Every read through the CLI works.
    for args in [&["log", "--ns", "u1"][..], &["check"], &["list", "--ns", "u1"], &["recall", "--ns", "u1", "heron"]] {
        let (ok, out, err) = cli(&data, args);
        assert!(ok, "{args:?} on a full disk: {err}");
        assert!(!out.is_empty(), "{args:?}");
    }
    let (ok, _, err) = cli(&data, &["--json", "remember", "--ns", "u1", "written on a full disk"]);
    assert!(!ok);
    assert!(err.contains("\"code\":\"io\"") && err.contains("full") && err.contains("no writes"), "{err}");

    // And in process: reads, check, export; writes refused, nothing written.
    let e = engine(&data).unwrap();
    let stats = e.stats();
    assert!(stats.read_only.as_deref().is_some_and(|r| r.contains("full")), "{stats:?}");
    assert_eq!(stats.active_memories, 41);
    let hits = e.recall(&ns(), "heron river", &RecallOptions::default()).unwrap();
    assert!(!hits.is_empty());
    assert!(e.get(&ns(), mnemon::MemoryId(ids[3])).unwrap().content.contains("Fact a3"));
    assert!(e.check().unwrap().consistent);
    let before = e.stats().last_seq;
    let err = e.remember(&ns(), NewMemory::new("written on a full disk")).unwrap_err();
    assert!(is_disk_full(&err), "{err}");
    let err = e.forget(&ns(), mnemon::ForgetRequest::Memory(mnemon::MemoryId(ids[0])), "asked to").unwrap_err();
    assert!(is_disk_full(&err), "{err}");
    assert!(is_disk_full(&e.compact().unwrap_err()));
    assert_eq!(e.stats().last_seq, before, "nothing was written");
    e.close().unwrap();

    // Room again: the reserve comes back and so do writes.
    fs::remove_file(ballast).unwrap();
    let e = engine(&data).unwrap();
    let stats = e.stats();
    assert_eq!(stats.read_only, None);
    assert_eq!(stats.reserve_bytes, mnemon::DEFAULT_RESERVE_BYTES);
    e.remember(&ns(), NewMemory::new("written once there was room")).unwrap();
    assert_eq!(e.stats().active_memories, 42);
    assert!(e.check().unwrap().consistent);
    e.close().unwrap();
}

/// Without a reserve a full disk fails the open with a typed error, and the
/// store is intact once there is room: the snapshot sled could not finish
/// is not taken for damage.
#[test]
fn a_full_disk_without_a_reserve_fails_the_open_and_damages_nothing() {
    let _serial = SERIAL.lock();
    let Some(disk) = SmallDisk::mount(16) else { return };
    let data = disk.path().join("store");
    let open = || Engine::builder(&data).embedder(Arc::new(HashingEmbedder::new(384).unwrap())).reserve_bytes(0).open();
    let e = open().unwrap();
    for i in 0..30 {
        e.remember(&ns(), NewMemory::new(format!("Fact {i}: the heron nests by the river"))).unwrap();
    }
    e.close().unwrap();
    assert!(!data.join("RESERVE").exists());
    let ballast = disk.fill();
    for _ in 0..3 {
        match open() {
            Err(e) => assert!(is_disk_full(&e), "{e}"),
            Ok(_) => panic!("a full disk without a reserve cannot open"),
        }
    }
    fs::remove_file(ballast).unwrap();
    let e = open().unwrap();
    assert_eq!(e.stats().active_memories, 30);
    assert!(e.check().unwrap().consistent);
}

/// A snapshot file sled began and never renamed (a kill, a full disk) is
/// left out: the store opens with every event, at every later open.
#[test]
fn an_unfinished_snapshot_does_not_make_the_store_unopenable() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let _serial = SERIAL.lock();
    write_some(&data, "a", 25);
    let generation = data.join("gen-000001");
    for (name, bytes) in [
        ("snap.7FFFFFFFFFFFFFFF.generating", &b""[..]),
        ("snap.7FFFFFFFFFFFFFFE.generating", &b"\x01\x02\x03 cut short by a kill"[..]),
    ] {
        fs::write(generation.join(name), bytes).unwrap();
        let e = engine(&data).unwrap();
        assert_eq!(e.stats().active_memories, 25, "with {name} left behind");
        assert!(e.check().unwrap().consistent);
        e.close().unwrap();
        let left: Vec<String> = fs::read_dir(&generation)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".generating"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
