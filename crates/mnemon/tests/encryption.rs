//! Encryption at rest and crypto-shredding: no canary text in any file of
//! an encrypted store, its backup or its export; a store without its key
//! (or with another) is refused with a typed error and nothing is written;
//! a shred makes the namespace unreadable in a backup and an export taken
//! before it, while every other namespace restores whole; replay equals
//! live.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemon::crypt::{Kek, KeyDirectory, StaticKey, KEYRING_FILE};
use mnemon::{Engine, Error, ForgetRequest, ListOptions, Namespace, NewMemory, NewObservation, Role};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn ns(s: &str) -> Namespace {
    Namespace::new(s).expect("namespace")
}

fn open(path: &Path, kek: &Kek) -> mnemon::Result<Engine> {
    Engine::builder(path).key_provider(Arc::new(StaticKey(kek.clone()))).open()
}

/// A new encrypted store at `dir/live` under a fresh key, with the
/// canaries in namespace `alice` and a memory and an observation in `bob`:
/// the key, the store's path, the engine and the two namespaces.
fn two_namespaces(dir: &Path) -> Result<(Kek, PathBuf, Engine, Namespace, Namespace), Box<dyn std::error::Error>> {
    let kek = Kek::generate();
    let live = dir.join("live");
    let e = open(&live, &kek)?;
    let (a, b) = (ns("alice"), ns("bob"));
    write_canaries(&e, &a)?;
    e.remember(&b, NewMemory::new("bob likes green tea"))?;
    e.observe(&b, NewObservation::new("s9", Role::User, "bob said hello"))?;
    Ok((kek, live, e, a, b))
}

const CANARIES: [&str; 5] = [
    "CANARY-ALPHA saw the heron by the mill pond",
    "CANARY-BRAVO keeps the spare key under the blue pot",
    "CANARY-CHARLIE-entity",
    "CANARY-DELTA forget reason",
    "CANARY-ECHO observation of a long walk to the harbour",
];

/// Writes every kind of payload, each holding a canary.
fn write_canaries(e: &Engine, n: &Namespace) -> mnemon::Result<()> {
    e.observe(n, NewObservation::new("s1", Role::User, CANARIES[4]))?;
    let a = e.remember(n, NewMemory::new(CANARIES[0]).entities([CANARIES[2]]).key("user.bird"))?;
    e.remember(n, NewMemory::new(CANARIES[1]))?;
    e.remember(n, NewMemory::new("a plain memory about tea").key("user.drink"))?;
    e.recall(n, "heron", &Default::default())?;
    e.forget(n, ForgetRequest::Memory(a.id), CANARIES[3])?;
    e.remember(n, NewMemory::new(format!("{} again", CANARIES[0])))?;
    Ok(())
}

fn all_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths.iter().flat_map(|p| if p.is_dir() { common::files_under(p) } else { vec![p.clone()] }).collect()
}

fn found(paths: &[PathBuf], needle: &[u8]) -> Vec<PathBuf> {
    all_files(paths)
        .into_iter()
        .filter(|p| std::fs::read(p).map(|b| b.windows(needle.len()).any(|w| w == needle)).unwrap_or(false))
        .collect()
}

fn contents(e: &Engine, n: &Namespace) -> Vec<String> {
    let mut v: Vec<String> = e.list(n, &ListOptions::default()).into_iter().map(|m| m.content).collect();
    v.sort();
    v
}

#[test]
fn no_canary_in_the_data_directory_a_backup_or_an_export() -> TestResult {
    let dir = tempfile::tempdir()?;
    let kek = Kek::generate();
    let live = dir.path().join("live");
    let e = open(&live, &kek)?;
    assert!(e.is_encrypted());
    let u = ns("u1");
    write_canaries(&e, &u)?;
    let before = contents(&e, &u);
    assert!(before.iter().any(|c| c.contains("CANARY-BRAVO")), "{before:?}");
    e.backup(dir.path().join("backup"))?;
    e.export(dir.path().join("store.jsonl"))?;
    assert!(e.check()?.consistent, "replay equals live");
    let digest = e.digest();
    e.close()?;

    let places = [live.clone(), dir.path().join("backup"), dir.path().join("store.jsonl")];
    for c in CANARIES {
        for needle in [c.as_bytes(), &c.as_bytes()[..12]] {
            let hits = found(&places, needle);
            assert!(hits.is_empty(), "{c:?} found in {hits:?}");
        }
    }
    // The same writes without encryption do leave the text: the scan works.
    let plain = Engine::open(dir.path().join("plain"))?;
    write_canaries(&plain, &u)?;
    plain.close()?;
    assert!(!found(&[dir.path().join("plain")], CANARIES[1].as_bytes()).is_empty());

    // Reopened with the key, everything reads and replays to the same digest.
    let e = open(&live, &kek)?;
    assert_eq!(contents(&e, &u), before);
    assert_eq!(e.digest(), digest);
    let hits = e.recall(&u, "spare key blue pot", &Default::default())?;
    assert!(hits.iter().any(|h| h.memory.content.contains("CANARY-BRAVO")));
    assert_eq!(e.open_report().vectors_embedded, 0, "sealed vectors were read back from the cache");
    Ok(())
}

/// Every file under `dir` with its bytes' SHA-256-free fingerprint: length and content.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> =
        common::files_under(dir).into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap_or_default())).collect();
    v.sort();
    v
}

#[test]
fn missing_or_wrong_key_is_a_typed_error_and_writes_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let kek = Kek::generate();
    let live = dir.path().join("live");
    let e = open(&live, &kek)?;
    e.remember(&ns("u1"), NewMemory::new("sealed away"))?;
    e.close()?;
    let before = snapshot(&live);

    match Engine::open(&live) {
        Err(Error::KeyRequired(m)) => assert!(m.contains("encrypted"), "{m}"),
        other => panic!("expected KeyRequired, got {:?}", other.map(|_| ())),
    }
    match open(&live, &Kek::generate()) {
        Err(Error::WrongKey(_)) => {}
        other => panic!("expected WrongKey, got {:?}", other.map(|_| ())),
    }
    let env = mnemon::crypt::KeyEnv("MNEMON_TEST_KEY_THAT_IS_NOT_SET".into());
    match Engine::builder(&live).key_provider(Arc::new(env)).open() {
        Err(Error::KeyRequired(m)) => assert!(m.contains("MNEMON_TEST_KEY_THAT_IS_NOT_SET"), "{m}"),
        other => panic!("expected KeyRequired, got {:?}", other.map(|_| ())),
    }
    let after: Vec<(PathBuf, Vec<u8>)> = snapshot(&live).into_iter().filter(|(p, _)| !p.ends_with("LOCK")).collect();
    let before: Vec<(PathBuf, Vec<u8>)> = before.into_iter().filter(|(p, _)| !p.ends_with("LOCK")).collect();
    assert!(before == after, "a refused open changed the store's files");

    // A key given to a plain store is refused too: encryption is chosen at creation.
    let plain = dir.path().join("plain");
    Engine::open(&plain)?.remember(&ns("u1"), NewMemory::new("plain text"))?;
    match open(&plain, &kek) {
        Err(Error::InvalidInput { field: "key", .. }) => {}
        other => panic!("expected InvalidInput(key), got {:?}", other.map(|_| ())),
    }
    // A key file works like any provider.
    let key_file = dir.path().join("store.key");
    mnemon::crypt::write_new_key_file(&key_file)?;
    let kf = Arc::new(mnemon::crypt::KeyFile(key_file.clone()));
    let e = Engine::builder(dir.path().join("by-file")).key_provider(kf.clone()).open()?;
    e.remember(&ns("u1"), NewMemory::new("kept under a key file"))?;
    e.close()?;
    let e = Engine::builder(dir.path().join("by-file")).key_provider(kf).open()?;
    assert_eq!(contents(&e, &ns("u1")), vec!["kept under a key file".to_string()]);
    Ok(())
}

#[test]
fn a_shred_reaches_backups_and_exports_taken_before_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (kek, live, e, a, b) = two_namespaces(dir.path())?;
    let bob_before = contents(&e, &b);
    e.backup(dir.path().join("before"))?;
    e.export(dir.path().join("before.jsonl"))?;
    let stats = e.stats();
    assert!(stats.encrypted && stats.shredded_namespaces == 0, "{stats:?}");

    let out = e.forget(&a, ForgetRequest::All, "account closed")?;
    assert!(out.key_shredded, "{out:?}");
    assert_eq!(e.stats().shredded_namespaces, 1);
    assert!(out.memories > 0);
    // New writes to the namespace take a key of their own.
    e.remember(&a, NewMemory::new("alice came back"))?;
    let report = e.verify_shred(&a, &[dir.path().join("before")], &[dir.path().join("before.jsonl")])?;
    assert!(report.verified, "{report:?}");
    assert!(report.checks.iter().all(|c| c.sealed > 0 && c.opened == 0), "{report:?}");
    assert_eq!(report.checks[0].later, 1, "{report:?}");
    assert!(e.check()?.consistent);
    e.close()?;

    // The live store reopens: alice holds only what came after.
    let e = open(&live, &kek)?;
    assert_eq!(e.stats().shredded_namespaces, 1, "a shred is counted after a reopen");
    assert_eq!(contents(&e, &a), vec!["alice came back".to_string()]);
    assert_eq!(contents(&e, &b), bob_before);
    assert!(e.check()?.consistent, "replay equals live after a shred");
    e.close()?;

    // The backup from before: alice unreadable (and said so), bob whole.
    let ring = live.join(KEYRING_FILE);
    match open(&dir.path().join("before"), &kek) {
        Err(Error::KeyRequired(m)) => assert!(m.contains("keyring"), "{m}"),
        other => panic!("expected KeyRequired, got {:?}", other.map(|_| ())),
    }
    let copy = Engine::builder(dir.path().join("before"))
        .key_provider(Arc::new(StaticKey(kek.clone())))
        .keyring(&ring)
        .open()?;
    assert_eq!(copy.open_report().shredded, vec!["alice".to_string()]);
    assert!(contents(&copy, &a).is_empty());
    assert!(copy.observations(&a, None).is_empty());
    assert_eq!(contents(&copy, &b), bob_before);
    assert!(copy.check()?.consistent);
    copy.close()?;

    // The export from before, restored: the same.
    let restored = dir.path().join("restored");
    let mut rep = mnemon::portability::restore(&dir.path().join("before.jsonl"), &restored)?;
    let r = Engine::builder(&restored).key_provider(Arc::new(StaticKey(kek.clone()))).keyring(&ring).open()?;
    assert_eq!(r.open_report().shredded, vec!["alice".to_string()]);
    // The digest differs because of the shred alone: reported, not marked.
    assert!(!rep.verify(&r));
    assert_eq!(rep.shredded, vec!["alice".to_string()]);
    assert!(!restored.join(mnemon::portability::RESTORE_MISMATCH).exists());
    assert!(contents(&r, &a).is_empty());
    assert_eq!(contents(&r, &b), bob_before);
    assert_eq!(r.observations(&b, None).len(), 1);
    r.close()?;

    // Compaction still removes the bytes, and keeps the sealed records sealed.
    let e = open(&live, &kek)?;
    e.compact()?;
    assert_eq!(contents(&e, &a), vec!["alice came back".to_string()]);
    assert_eq!(contents(&e, &b), bob_before);
    assert!(e.check()?.consistent);
    Ok(())
}

/// A backup opened once before the shred keeps a keyring of its own, which
/// the shred does not reach: the proof tries its keys, finds the records
/// they open and fails, until that keyring is deleted. A copy's keyring
/// from before a rotation cannot be tried at all, and fails the proof too.
#[test]
fn a_backups_own_keyring_fails_the_proof_of_a_shred() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (kek, live, e, a, _b) = two_namespaces(dir.path())?;
    let (opened_copy, untouched) = (dir.path().join("opened"), dir.path().join("untouched"));
    e.backup(&opened_copy)?;
    e.backup(&untouched)?;
    e.close()?;
    let ring = live.join(KEYRING_FILE);
    let copy = Engine::builder(&opened_copy).key_provider(Arc::new(StaticKey(kek.clone()))).keyring(&ring).open()?;
    assert!(!contents(&copy, &a).is_empty());
    copy.close()?;
    assert!(opened_copy.join(KEYRING_FILE).exists(), "the first open of a copy keeps its keyring");

    let e = open(&live, &kek)?;
    assert!(e.forget(&a, ForgetRequest::All, "account closed")?.key_shredded);
    let report = e.verify_shred(&a, &[opened_copy.clone(), untouched.clone()], &[])?;
    assert!(!report.verified, "{report:?}");
    let (own, plain_copy) = (&report.checks[1], &report.checks[2]);
    assert!(own.own_keyring && !own.own_keyring_unread && own.opened == own.sealed && own.sealed > 0, "{own:?}");
    assert!(!plain_copy.own_keyring && plain_copy.opened == 0 && plain_copy.sealed > 0, "{plain_copy:?}");

    // After a rotation the copy's keyring no longer opens with the store's
    // key: it cannot be tried, and the proof still fails.
    let new = Kek::generate();
    e.rotate_key(&StaticKey(new.clone()))?;
    let report = e.verify_shred(&a, &[opened_copy.clone()], &[])?;
    assert!(!report.verified && report.checks[1].own_keyring_unread, "{report:?}");

    // Deleting the copy's keyring erases it.
    std::fs::remove_file(opened_copy.join(KEYRING_FILE))?;
    let report = e.verify_shred(&a, &[opened_copy, untouched], &[])?;
    assert!(report.verified, "{report:?}");
    Ok(())
}

#[test]
fn an_unfinished_shred_is_finished_at_open() -> TestResult {
    // A forget of the whole namespace durable in the log whose key the
    // keyring still holds (the process stopped before the rewrite) is
    // completed by the next open: the keyring from before the forget is
    // put back to stand for that moment.
    let dir = tempfile::tempdir()?;
    let kek = Kek::generate();
    let live = dir.path().join("live");
    let e = open(&live, &kek)?;
    let a = ns("alice");
    e.remember(&a, NewMemory::new("to be shredded"))?;
    e.close()?;
    let ring = live.join(KEYRING_FILE);
    let saved = std::fs::read(&ring)?;
    let e = open(&live, &kek)?;
    e.forget(&a, ForgetRequest::All, "gone")?;
    e.close()?;
    std::fs::write(&ring, &saved)?;
    let e = open(&live, &kek)?;
    assert!(contents(&e, &a).is_empty());
    let report = e.verify_shred(&a, &[], &[])?;
    assert!(report.verified, "{report:?}");
    Ok(())
}

#[test]
fn a_rotation_rewraps_the_keyring_and_only_the_new_key_opens_the_store() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (old, new) = (Kek::generate(), Kek::generate());
    let live = dir.path().join("live");
    let e = open(&live, &old)?;
    let (a, b) = (ns("alice"), ns("bob"));
    write_canaries(&e, &a)?;
    e.remember(&b, NewMemory::new("bob likes green tea"))?;
    let (alice, bob, digest) = (contents(&e, &a), contents(&e, &b), e.digest());
    e.backup(dir.path().join("before"))?;
    e.export(dir.path().join("before.jsonl"))?;

    // Refused, writing nothing: the key already in use, and no key at all.
    let ring = live.join(KEYRING_FILE);
    let ring_before = std::fs::read(&ring)?;
    match e.rotate_key(&StaticKey(old.clone())) {
        Err(Error::InvalidInput { field: "key", .. }) => {}
        other => panic!("expected InvalidInput(key), got {other:?}"),
    }
    let missing = mnemon::crypt::KeyFile(dir.path().join("no-such.key"));
    assert!(matches!(e.rotate_key(&missing), Err(Error::KeyRequired(_))));
    assert_eq!(std::fs::read(&ring)?, ring_before);

    e.rotate_key(&StaticKey(new.clone()))?;
    assert_ne!(std::fs::read(&ring)?, ring_before);
    assert!(!live.join(format!("{KEYRING_FILE}.tmp")).exists());
    // The running engine keeps writing and shredding with the new key.
    e.remember(&b, NewMemory::new("bob moved to Lyon"))?;
    let bob_after = contents(&e, &b);
    e.close()?;

    match open(&live, &old) {
        Err(Error::WrongKey(_)) => {}
        other => panic!("expected WrongKey with the old key, got {:?}", other.map(|_| ())),
    }
    let e = open(&live, &new)?;
    assert_eq!(contents(&e, &a), alice);
    assert_eq!(contents(&e, &b), bob_after);
    assert!(e.check()?.consistent);
    let hits = e.recall(&a, "spare key blue pot", &Default::default())?;
    assert!(hits.iter().any(|h| h.memory.content.contains("CANARY-BRAVO")));
    assert_eq!(e.open_report().vectors_embedded, 0, "cached vectors still open: the data keys are the same");
    e.close()?;

    // A backup and an export from before the rotation read with the
    // store's keyring, so with the new key only.
    let before = dir.path().join("before");
    match Engine::builder(&before).key_provider(Arc::new(StaticKey(old.clone()))).keyring(&ring).open() {
        Err(Error::WrongKey(_)) => {}
        other => panic!("expected WrongKey for the backup with the old key, got {:?}", other.map(|_| ())),
    }
    let copy = Engine::builder(&before).key_provider(Arc::new(StaticKey(new.clone()))).keyring(&ring).open()?;
    assert_eq!(contents(&copy, &a), alice);
    assert_eq!(contents(&copy, &b), bob);
    assert_eq!(copy.digest(), digest);
    copy.close()?;
    let restored = dir.path().join("restored");
    mnemon::portability::restore(&dir.path().join("before.jsonl"), &restored)?;
    let r = Engine::builder(&restored).key_provider(Arc::new(StaticKey(new.clone()))).keyring(&ring).open()?;
    assert_eq!(contents(&r, &a), alice);
    r.close()?;

    // A shred after the rotation still reaches the copy taken before it.
    let e = open(&live, &new)?;
    assert!(e.forget(&a, ForgetRequest::All, "closed")?.key_shredded);
    let report = e.verify_shred(&a, &[], &[dir.path().join("before.jsonl")])?;
    assert!(report.verified, "{report:?}");
    e.close()?;

    // A plain store has no key to rotate.
    let plain = Engine::open(dir.path().join("plain"))?;
    match plain.rotate_key(&StaticKey(new)) {
        Err(Error::InvalidInput { field: "key", .. }) => {}
        other => panic!("expected InvalidInput(key), got {other:?}"),
    }
    Ok(())
}

#[test]
fn compaction_reseals_the_live_generation_under_fresh_data_keys() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (kek, live, e, a, b) = two_namespaces(dir.path())?;
    let (alice, bob) = (contents(&e, &a), contents(&e, &b));
    let ring = live.join(KEYRING_FILE);
    let ring_before = dir.path().join("KEYRING.before");
    std::fs::copy(&ring, &ring_before)?;
    e.backup(dir.path().join("before"))?;
    e.export(dir.path().join("before.jsonl"))?;

    assert!(e.compact()?.verified);
    assert_eq!(contents(&e, &a), alice);
    assert_eq!(contents(&e, &b), bob);
    e.remember(&b, NewMemory::new("bob moved to Lyon"))?;
    let bob_after = contents(&e, &b);
    e.backup(dir.path().join("after"))?;
    let digest = e.digest();
    e.close()?;

    // The compacted generation is sealed under keys the keyring from
    // before the compaction does not hold.
    match Engine::builder(dir.path().join("after"))
        .key_provider(Arc::new(StaticKey(kek.clone())))
        .keyring(&ring_before)
        .open()
    {
        Err(Error::WrongKey(m)) => assert!(m.contains("generation 2"), "{m}"),
        other => panic!("expected WrongKey with the keyring from before, got {:?}", other.map(|_| ())),
    }
    let e = open(&live, &kek)?;
    assert_eq!(e.digest(), digest);
    assert_eq!(contents(&e, &a), alice);
    assert_eq!(contents(&e, &b), bob_after);
    assert!(e.check()?.consistent, "replay equals live after re-sealing");
    assert_eq!(e.open_report().vectors_embedded, 0, "re-sealed vectors read back from the cache");
    let hits = e.recall(&a, "spare key blue pot", &Default::default())?;
    assert!(hits.iter().any(|h| h.memory.content.contains("CANARY-BRAVO")));
    e.close()?;
    for c in CANARIES {
        let hits = found(&[live.clone()], c.as_bytes());
        assert!(hits.is_empty(), "{c:?} found in {hits:?}");
    }

    // The backup from before the compaction still reads with the store's
    // keyring: the old data keys stay until the namespace is shredded.
    let copy = Engine::builder(dir.path().join("before"))
        .key_provider(Arc::new(StaticKey(kek.clone())))
        .keyring(&ring)
        .open()?;
    assert_eq!(contents(&copy, &a), alice);
    assert_eq!(contents(&copy, &b), bob);
    copy.close()?;
    // That open kept a keyring in the copy, out of a shred's reach (see
    // `a_backups_own_keyring_fails_the_proof_of_a_shred`): removed, so the
    // copy reads with the store's keyring again.
    std::fs::remove_file(dir.path().join("before").join(KEYRING_FILE))?;

    // A shred destroys every key of the namespace, the old ones too: the
    // backup and export from before the compaction no longer open it.
    let e = open(&live, &kek)?;
    assert!(e.forget(&a, ForgetRequest::All, "closed")?.key_shredded);
    let report = e.verify_shred(&a, &[dir.path().join("before")], &[dir.path().join("before.jsonl")])?;
    assert!(report.verified, "{report:?}");
    assert_eq!(report.shredded_keys, vec![1, 2], "{report:?}");
    assert!(report.checks.iter().all(|c| c.sealed > 0 && c.opened == 0 && c.later == 0), "{report:?}");
    // A second compaction re-seals what is left; the shredded namespace's
    // records stay as they were and read as erased.
    assert!(e.compact()?.verified);
    assert!(contents(&e, &a).is_empty());
    assert_eq!(contents(&e, &b), bob_after);
    assert!(e.check()?.consistent);
    e.close()?;
    let e = open(&live, &kek)?;
    assert!(contents(&e, &a).is_empty());
    assert_eq!(contents(&e, &b), bob_after);
    Ok(())
}

/// An encrypted store saves no graph file (graph codes derive from the
/// sealed vectors), and so rebuilds its graph at every open.
#[test]
fn an_encrypted_store_saves_no_graph_file() -> TestResult {
    let dir = tempfile::tempdir()?;
    let kek = Kek::generate();
    let params = mnemon::index::HnswParams { exact_threshold: 20, parallel_build: false, ..Default::default() };
    let open_small =
        || Engine::builder(dir.path()).key_provider(Arc::new(StaticKey(kek.clone()))).hnsw(params.clone()).open();
    let e = open_small()?;
    let n = ns("enc");
    for i in 0..40 {
        e.remember(&n, NewMemory::new(format!("encrypted memory {i} about the river {}", i * 13)))?;
    }
    e.wait_for_graphs();
    assert_eq!(e.stats().hnsw_namespaces, 1);
    e.close()?;
    assert!(!dir.path().join("graphs.bin").exists());
    let e = open_small()?;
    assert_eq!(e.open_report().graphs_loaded, 0);
    e.wait_for_graphs();
    assert_eq!(e.stats().hnsw_namespaces, 1);
    Ok(())
}

/// A key directory in memory, as a cluster's key bucket would hold keys.
#[derive(Debug, Default)]
struct MemoryKeys {
    id: std::sync::Mutex<Option<[u8; 16]>>,
    keys: std::sync::Mutex<Vec<mnemon::crypt::SharedKey>>,
}

impl mnemon::crypt::KeyDirectory for MemoryKeys {
    fn keyring_id(&self, proposed: [u8; 16]) -> mnemon::Result<[u8; 16]> {
        Ok(*self.id.lock().unwrap().get_or_insert(proposed))
    }

    fn load(&self) -> mnemon::Result<Vec<mnemon::crypt::SharedKey>> {
        Ok(self.keys.lock().unwrap().clone())
    }

    fn store(&self, keys: &[mnemon::crypt::SharedKey]) -> mnemon::Result<()> {
        let mut stored = self.keys.lock().unwrap();
        if let Some(merged) = mnemon::crypt::merge_keys(&stored, keys) {
            *stored = merged;
        }
        Ok(())
    }
}

/// A replicated log that confirms groups until it is told to refuse them.
#[derive(Default)]
struct Sink {
    refuse: std::sync::atomic::AtomicBool,
    sealed: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl mnemon::replication::GroupSink for Sink {
    fn publish(&self, group: &mnemon::replication::Group<'_>) -> mnemon::Result<Vec<(String, Vec<u8>)>> {
        if self.refuse.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::Unavailable("the log did not confirm the group".into()));
        }
        assert!(group.sealed_vectors.is_some(), "an encrypted store's group carries sealed vectors");
        self.sealed.lock().unwrap().extend(group.records.iter().map(|(_, r)| r.clone()));
        Ok(Vec::new())
    }
}

/// With a replicated log, a group leaves sealed, under keys the key
/// directory holds first; a forget of the whole namespace whose group the
/// log refuses was never acknowledged, and its key survives: the store
/// reopens with every memory readable.
#[test]
fn a_refused_forget_of_a_namespace_destroys_no_key() -> TestResult {
    let dir = tempfile::tempdir()?;
    let kek = Kek::generate();
    let keys = Arc::new(MemoryKeys::default());
    let sink = Arc::new(Sink::default());
    let path = dir.path().join("copy");
    let e = Engine::builder(&path)
        .key_provider(Arc::new(StaticKey(kek.clone())))
        .key_directory(keys.clone())
        .group_sink(sink.clone())
        .open()?;
    let a = ns("alice");
    e.remember(&a, NewMemory::new(CANARIES[0]))?;
    let sent = sink.sealed.lock().unwrap().clone();
    assert!(!sent.is_empty() && !sent.iter().any(|r| r.windows(12).any(|w| w == &CANARIES[0].as_bytes()[..12])));
    assert!(keys.load()?.iter().any(|k| k.namespace == "alice" && k.wrapped.is_some()), "the key was shared first");
    sink.refuse.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(matches!(e.forget(&a, ForgetRequest::All, "refused"), Err(Error::Unavailable(_))));
    let _ = e.close();
    assert!(keys.load()?.iter().all(|k| k.wrapped.is_some()), "a key was shredded in the directory");
    let e = open(&path, &kek)?;
    assert!(e.open_report().shredded.is_empty(), "{:?}", e.open_report().shredded);
    assert_eq!(contents(&e, &a), vec![CANARIES[0].to_string()]);
    e.close()?;
    Ok(())
}

#[test]
fn a_text_scan_of_an_encrypted_store_searches_its_records_opened() -> TestResult {
    let dir = tempfile::tempdir()?;
    let kek = Kek::generate();
    let e = open(&dir.path().join("live"), &kek)?;
    let n = ns("carol");
    let secret = "ZEBRAPLUMTWIST the locker code is 4471";
    let m = e.remember(&n, NewMemory::new(secret))?;
    e.remember(&n, NewMemory::new("carol walks the dog at seven"))?;
    // Still stored: the file scan alone sees only sealed bytes, the opened
    // records hold it.
    let r = e.verify_erasure_text(&[secret])?;
    assert!(!r.verified, "a stored text must not pass: {:?}", r.scan.matches);
    assert!(r.scan.opened > 0);
    assert!(r.scan.matches.iter().all(|m| m.path.starts_with("opened:")), "{:?}", r.scan.matches);
    assert!(found(&[dir.path().to_path_buf()], secret.as_bytes()).is_empty());
    // Forgotten and compacted: gone from the opened records as well.
    e.forget(&n, ForgetRequest::Memory(m.id), "asked to")?;
    let receipt = e.compact()?;
    assert!(receipt.verified, "{:?}", receipt.scan.matches);
    assert!(receipt.scan.opened > 0, "compaction searched the opened records");
    let r = e.verify_erasure_text(&[secret])?;
    assert!(r.verified, "{:?}", r.scan.matches);
    Ok(())
}

#[test]
fn a_keyring_that_is_not_one_is_a_wrong_argument_not_a_damaged_store() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (kek, _live, e, a, _b) = two_namespaces(dir.path())?;
    let copy = dir.path().join("copy");
    e.backup(&copy)?;
    e.close()?;
    let key_file = dir.path().join("store.key");
    std::fs::write(&key_file, kek.to_hex())?;
    let before = snapshot(&copy);
    for wrong in [key_file, dir.path().join("no-such-keyring"), dir.path().to_path_buf()] {
        let opened = Engine::builder(&copy).key_provider(Arc::new(StaticKey(kek.clone()))).keyring(&wrong).open();
        match opened {
            Err(Error::InvalidInput { field, reason }) => {
                assert_eq!(field, "keyring");
                assert!(reason.contains(&wrong.display().to_string()), "{reason}");
            }
            other => panic!("{}: {:?}", wrong.display(), other.map(|_| ())),
        }
    }
    assert_eq!(snapshot(&copy), before, "a refused open writes nothing");
    let _ = a;
    Ok(())
}
