//! Kill loop: this binary re-runs itself as a child (`MNEMON_KILL_CHILD`
//! set) that writes with durable acknowledgement and appends one fsynced
//! line per acknowledged operation to a side file. The parent SIGKILLs the
//! child at a random moment, reopens the store and checks:
//!
//! * every acknowledged memory is there with the content written (and every
//!   acknowledged forget took effect);
//! * `Seq` is gap-free: the events of all namespaces cover `1..=last_seq`;
//! * the projections equal a fresh replay: the digest of this open equals
//!   the digest after a second reopen.
//!
//! Scenarios: `plain` (one thread), `group` (eight threads, group commit),
//! `supersede` (version chains), `forget` (forget and compaction), and
//! `mcp` (feature `mcp`): the child drives a `mnemon mcp` server over stdio
//! with four concurrent `remember` calls through the official Rust SDK's
//! client, logging each acknowledged call; the parent SIGKILLs the server
//! itself. A store is reused for several kills in a row (crash, recover,
//! crash again) and then replaced by a fresh one.
//!
//! `MNEMON_CRASH_ITERS` sets the kills per scenario (default 200; `mcp`
//! runs a quarter of them);
//! `MNEMON_CRASH_SEED` replays a run; `MNEMON_CRASH_SCENARIOS` picks
//! scenarios (comma-separated). Long run:
//! `MNEMON_CRASH_ITERS=5000 cargo test --release --no-default-features --test crash`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemon::{DedupMode, Engine, Error, ForgetRequest, MemoryId, Namespace, NewMemory};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const CHILD: &str = "MNEMON_KILL_CHILD";
const SCENARIOS: &[&str] = &["plain", "group", "supersede", "forget", "mcp"];
/// Kills on one store before it is replaced by a fresh one.
const KILLS_PER_STORE: usize = 10;

fn ns(i: usize) -> Namespace {
    Namespace::new(format!("n{i}")).unwrap()
}

/// The side file of acknowledgements: one line per acknowledged operation,
/// written and fsynced after the engine acknowledged it.
#[derive(Clone)]
struct Acks(Arc<Mutex<File>>);

impl Acks {
    fn line(&self, s: String) {
        let mut f = self.0.lock().unwrap();
        // One write per line, so a kill cannot leave the line without its
        // end for the next child's first line to run into.
        f.write_all(format!("{s}\n").as_bytes()).unwrap();
        f.sync_data().unwrap();
    }
}

/// Where the `mcp` scenario's child writes the server's process id.
fn server_pid_path(acks: &Path) -> std::path::PathBuf {
    acks.with_extension("server-pid")
}

/// The `mcp` scenario's child: starts `mnemon mcp` on `dir` and keeps four
/// `remember` calls in flight through one MCP session until the parent
/// kills the server (then every call fails and the child idles until it is
/// killed too).
fn mcp_child(dir: &str, acks: &Acks, acks_path: &Path, seed: u64) {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    use rmcp::ServiceExt;

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemon")).configure(|c| {
                c.args(["--data", dir, "--embedder", "hashing", "mcp"]).stderr(Stdio::null());
            }))
            .unwrap();
        std::fs::write(server_pid_path(acks_path), transport.id().unwrap().to_string()).unwrap();
        let Ok(client) = ().serve(transport).await else { return };
        let tasks: Vec<_> = (0..4u64)
            .map(|t| {
                let (peer, acks) = (client.peer().clone(), acks.clone());
                let mut rng = SmallRng::seed_from_u64(seed ^ (t + 1));
                tokio::spawn(async move {
                    loop {
                        let n = rng.gen_range(0..3usize);
                        let word: String = (0..12).map(|_| char::from(b'a' + rng.gen_range(0..26u8))).collect();
                        let text = format!("mcp memory {word}");
                        let args = serde_json::json!({"namespace": format!("n{n}"), "content": text, "dedup": "off"});
                        let serde_json::Value::Object(args) = args else { return };
                        let Ok(r) =
                            peer.call_tool(CallToolRequestParams::new("memory_remember").with_arguments(args)).await
                        else {
                            return;
                        };
                        if r.is_error == Some(true) {
                            return;
                        }
                        let Some(body) = r.content.first().and_then(|c| c.as_text()) else { return };
                        let Ok(v) = serde_json::from_str::<serde_json::Value>(&body.text) else { return };
                        let Some(id) = v["id"].as_u64() else { return };
                        acks.line(format!("M\t{n}\t{id}\t{text}"));
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        drop(client);
        std::future::pending::<()>().await;
    });
}

/// SIGKILLs the `mcp` scenario's server (if it started) and waits until it
/// is gone, so that the store is free for checking.
fn kill_server(acks: &Path) {
    let Ok(pid) = std::fs::read_to_string(server_pid_path(acks)) else { return };
    let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    let start = Instant::now();
    while Path::new(&format!("/proc/{}", pid.trim())).exists() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = std::fs::remove_file(server_pid_path(acks));
}

fn child(dir: &str, acks_path: &str, scenario: &str, seed: u64) {
    let mut file = OpenOptions::new().create(true).append(true).open(acks_path).unwrap();
    // A line torn by the previous kill ends here.
    if std::fs::read(acks_path).unwrap().last().is_some_and(|b| *b != b'\n') {
        file.write_all(b"\n").unwrap();
    }
    let acks = Acks(Arc::new(Mutex::new(file)));
    if scenario == "mcp" {
        mcp_child(dir, &acks, Path::new(acks_path), seed);
        return;
    }
    let e = Engine::open(dir).unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    // Letters only: digit runs could be taken for personal data and redacted.
    let mem = |rng: &mut SmallRng, tag: &str| {
        let word: String = (0..12).map(|_| char::from(b'a' + rng.gen_range(0..26u8))).collect();
        format!("{tag} memory {word}")
    };
    match scenario {
        "plain" => loop {
            let n = rng.gen_range(0..3);
            let text = mem(&mut rng, "plain");
            let id = e.remember(&ns(n), NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
            acks.line(format!("M\t{n}\t{}\t{text}", id.0));
        },
        "group" => {
            let threads: Vec<_> = (0..8)
                .map(|t| {
                    let (e, acks) = (e.clone(), acks.clone());
                    let mut rng = SmallRng::seed_from_u64(seed ^ (t as u64 + 1));
                    std::thread::spawn(move || loop {
                        let n = t % 3;
                        let text = mem(&mut rng, "group");
                        let id = e.remember(&ns(n), NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
                        acks.line(format!("M\t{n}\t{}\t{text}", id.0));
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
        "supersede" => {
            let mut heads: Vec<Option<MemoryId>> = vec![None; 4];
            loop {
                let k = rng.gen_range(0..heads.len());
                let n = k % 2;
                let text = mem(&mut rng, "version");
                let id = match heads[k] {
                    Some(old) if rng.gen_bool(0.8) => {
                        e.supersede(&ns(n), old, NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id
                    }
                    _ => e.remember(&ns(n), NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id,
                };
                heads[k] = Some(id);
                acks.line(format!("M\t{n}\t{}\t{text}", id.0));
            }
        }
        "forget" => {
            let mut live: Vec<(usize, MemoryId)> = Vec::new();
            loop {
                let r: f64 = rng.gen();
                if r < 0.2 && !live.is_empty() {
                    let (n, id) = live.swap_remove(rng.gen_range(0..live.len()));
                    // Announced before, confirmed after: a forget that was
                    // in flight at the kill may or may not have landed.
                    acks.line(format!("P\t{n}\t{}", id.0));
                    e.forget(&ns(n), ForgetRequest::Memory(id), "kill test").unwrap();
                    acks.line(format!("F\t{n}\t{}", id.0));
                } else if r < 0.24 {
                    assert!(e.compact().unwrap().verified);
                } else {
                    let n = rng.gen_range(0..2);
                    let text = mem(&mut rng, "forgettable");
                    let id = e.remember(&ns(n), NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
                    acks.line(format!("M\t{n}\t{}\t{text}", id.0));
                    live.push((n, id));
                }
            }
        }
        other => panic!("unknown scenario {other}"),
    }
}

/// What the side file says must hold.
#[derive(Default)]
struct Expected {
    memories: BTreeMap<u64, (usize, String)>,
    maybe_forgotten: BTreeSet<u64>,
    forgotten: BTreeMap<u64, usize>,
}

fn read_acks(path: &Path) -> Expected {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut x = Expected::default();
    for line in text.lines() {
        // A torn last line (killed mid-write) was never acknowledged as a whole.
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["M", n, id, text] => {
                x.memories.insert(id.parse().unwrap(), (n.parse().unwrap(), text.to_string()));
            }
            ["P", _, id] => {
                x.maybe_forgotten.insert(id.parse().unwrap());
            }
            ["F", n, id] => {
                x.forgotten.insert(id.parse().unwrap(), n.parse().unwrap());
            }
            _ => {}
        }
    }
    x
}

/// Reopens the store after a kill and checks it. Returns the number of
/// acknowledged memories checked.
fn verify(dir: &Path, acks: &Path) -> Result<usize, String> {
    let x = read_acks(acks);
    // A server whose client was killed first shuts down on its own (its
    // stdin closed); give it the time to release the lock.
    let start = Instant::now();
    let e = loop {
        match Engine::open(dir) {
            Err(Error::Locked { .. }) if start.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            r => break r.map_err(|e| format!("reopen failed: {e}"))?,
        }
    };
    let mut checked = 0;
    for (id, (n, text)) in &x.memories {
        if x.forgotten.contains_key(id) || x.maybe_forgotten.contains(id) {
            continue;
        }
        let m = e.get(&ns(*n), MemoryId(*id)).map_err(|err| format!("acknowledged memory {id} missing: {err}"))?;
        if &m.content != text {
            return Err(format!("memory {id}: content {:?}, acknowledged {:?}", m.content, text));
        }
        checked += 1;
    }
    for (id, n) in &x.forgotten {
        match e.get(&ns(*n), MemoryId(*id)) {
            Err(Error::NotFound { .. }) => {}
            other => return Err(format!("acknowledged forget of {id} not in effect: {other:?}")),
        }
    }
    let last = e.stats().last_seq;
    let mut seqs = BTreeSet::new();
    for n in 0..3 {
        for ev in e.events(&ns(n), 1, u64::MAX).map_err(|e| format!("events: {e}"))? {
            if !seqs.insert(ev.seq) {
                return Err(format!("seq {} appears twice", ev.seq));
            }
        }
    }
    if seqs.len() as u64 != last || seqs.iter().next_back().copied().unwrap_or(0) != last {
        return Err(format!("seq not gap-free: {} events, last_seq {last}", seqs.len()));
    }
    let d1 = e.digest();
    e.close().map_err(|e| format!("close: {e}"))?;
    let e = Engine::open(dir).map_err(|e| format!("second reopen failed: {e}"))?;
    let d2 = e.digest();
    e.close().map_err(|e| format!("close: {e}"))?;
    if d1 != d2 {
        return Err(format!("digest after reopen {d2} differs from {d1}"));
    }
    Ok(checked)
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        let mut p = spec.splitn(4, '\u{1f}');
        let (dir, acks, scenario, seed) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
        child(dir, acks, scenario, seed.parse().unwrap());
        return;
    }
    // `cargo test` passes harness flags (`--list` when listing tests): nothing to list.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let iters: usize = std::env::var("MNEMON_CRASH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
    let seed: u64 = std::env::var("MNEMON_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    let scenarios: Vec<String> = std::env::var("MNEMON_CRASH_SCENARIOS")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_else(|_| SCENARIOS.iter().map(|s| s.to_string()).collect());
    println!("crash: seed {seed} (MNEMON_CRASH_SEED={seed} to replay), {iters} kills per scenario");
    let mut rng = SmallRng::seed_from_u64(seed);
    let exe = std::env::current_exe().unwrap();
    let (mut passed, mut failed) = (0usize, 0usize);
    for scenario in &scenarios {
        let start = Instant::now();
        let (mut acked, mut kills_before_write) = (0usize, 0usize);
        let mut tmp = tempfile::tempdir().unwrap();
        // A server process takes a second or so per kill (start, handshake,
        // writes): a quarter of the kills keeps the run short.
        let iters = if scenario == "mcp" { iters.div_ceil(4) } else { iters };
        for i in 0..iters {
            if i % KILLS_PER_STORE == 0 {
                tmp = tempfile::tempdir().unwrap();
            }
            let dir = tmp.path().join("data");
            let acks = tmp.path().join("acks.tsv");
            let child_seed: u64 = rng.gen();
            let spec = format!("{}\u{1f}{}\u{1f}{scenario}\u{1f}{child_seed}", dir.display(), acks.display());
            let mut c =
                Command::new(&exe).env(CHILD, spec).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
            // A server process starts slower than an in-process engine.
            let window = if scenario == "mcp" { 50_000..800_000 } else { 5_000..150_000 };
            std::thread::sleep(Duration::from_micros(rng.gen_range(window)));
            let still_running = c.try_wait().unwrap().is_none();
            kill_server(&acks);
            c.kill().unwrap(); // SIGKILL
            let out = c.wait_with_output().unwrap();
            if !still_running {
                failed += 1;
                println!(
                    "crash: {scenario} #{i}: child exited on its own ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                continue;
            }
            match verify(&dir, &acks) {
                Ok(n) => {
                    passed += 1;
                    acked = n;
                    kills_before_write += usize::from(n == 0);
                }
                Err(msg) => {
                    failed += 1;
                    println!("crash: {scenario} #{i} FAILED (seed {seed}, child seed {child_seed}): {msg}");
                    // Keep the store for inspection.
                    let kept = tmp.keep();
                    println!("crash: store kept at {}", kept.display());
                    tmp = tempfile::tempdir().unwrap();
                }
            }
        }
        println!(
            "crash: {scenario}: {iters} kills in {:.1}s (last store held {acked} acknowledged memories; {kills_before_write} kills before the first ack)",
            start.elapsed().as_secs_f64()
        );
    }
    println!("crash: {passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
