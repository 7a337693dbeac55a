//! Load and soak, in two parts.
//!
//! 1. **Engine**: writer threads, recall threads and periodic compaction
//!    together for a fixed number of operations. Afterwards every
//!    acknowledged write is read back, and resident memory (VmRSS) before
//!    and after is printed with ops/s and p50/p99 latencies.
//!    `MNEMON_SOAK_OPS` (default 2000 writes) scales it. Every recall
//!    appends an access event, so the log grows with the recall rate and
//!    each compaction (a full rewrite plus the erasure scan) takes longer as
//!    the run goes on.
//! 2. **Daemon**: a `mnemon serve` child under mixed load over MCP HTTP
//!    (the official Rust SDK's client) for `MNEMON_SOAK_SECS` seconds
//!    (default 3600): remember, recall, context, list and forget across 20
//!    namespaces from 4 clients, each of which starts a new session now
//!    and then and leaves the old one open, as short-lived agents do. The
//!    daemon's RSS is printed every `MNEMON_SOAK_SAMPLE_SECS` (default 60)
//!    with the store's size; at the end the daemon is stopped and a fresh
//!    one is started on the same store, and the ratio of the soaked
//!    daemon's RSS to the fresh one's (the baseline, measured in the same
//!    run) is printed: what the daemon holds beyond what the store needs.
//!
//! `cargo bench --bench soak` (an hour; not part of the test suite).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemon::{DedupMode, Engine, ForgetRequest, MemoryId, Namespace, NewMemory, RecallOptions};

const WRITERS: usize = 4;
const READERS: usize = 2;

#[path = "../../mnemon/benches/common/rss.rs"]
mod rss;
#[path = "../tests/common/serve.rs"]
mod serve;
use rss::rss_kib;

fn pct(v: &mut [Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn word(i: u64) -> String {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..10)
        .map(|_| {
            x ^= x >> 13;
            x = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    engine_soak();
    daemon::soak();
}

fn engine_soak() {
    let ops: u64 = std::env::var("MNEMON_SOAK_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let dir = tempfile::tempdir().unwrap();
    let rss_before = rss_kib();
    let e = Engine::open(dir.path()).unwrap();
    let acked: Arc<Mutex<Vec<(usize, MemoryId, String)>>> = Arc::default();
    let forgotten: Arc<Mutex<Vec<MemoryId>>> = Arc::default();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let start = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (e, acked, forgotten) = (e.clone(), acked.clone(), forgotten.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                for i in 0..ops / WRITERS as u64 {
                    let n = Namespace::new(format!("u{}", t % 2)).unwrap();
                    let text = format!("soak memory {} {} about {}", word(i * 31 + t as u64), word(i), word(i % 97));
                    let t0 = Instant::now();
                    let id = e.remember(&n, NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
                    lat.push(t0.elapsed());
                    if i % 50 == 49 {
                        e.forget(&n, ForgetRequest::Memory(id), "soak").unwrap();
                        forgotten.lock().unwrap().push(id);
                    } else {
                        acked.lock().unwrap().push((t % 2, id, text));
                    }
                }
                lat
            })
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|t| {
            let (e, done) = (e.clone(), done.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut i = 0u64;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let n = Namespace::new(format!("u{}", t % 2)).unwrap();
                    let t0 = Instant::now();
                    let _ = e.recall(&n, &format!("about {}", word(i % 97)), &RecallOptions::default()).unwrap();
                    lat.push(t0.elapsed());
                    i += 1;
                }
                lat
            })
        })
        .collect();
    let compactor = {
        let (e, done) = (e.clone(), done.clone());
        std::thread::spawn(move || {
            let mut lat = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(2));
                let t0 = Instant::now();
                assert!(e.compact().unwrap().verified);
                lat.push(t0.elapsed());
            }
            lat
        })
    };
    let mut wlat: Vec<Duration> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let write_secs = start.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut rlat: Vec<Duration> = readers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let mut clat = compactor.join().unwrap();
    let acked = acked.lock().unwrap().clone();
    let forgotten = forgotten.lock().unwrap().clone();
    for (n, id, text) in &acked {
        let m = e.get(&Namespace::new(format!("u{n}")).unwrap(), *id).unwrap();
        assert_eq!(&m.content, text);
    }
    let check = e.check().unwrap();
    assert!(check.consistent);
    let rss_open = rss_kib();
    e.close().unwrap();
    let rss_after = rss_kib();
    println!(
        "soak: {} writes ({} forgotten) by {WRITERS} threads in {write_secs:.1}s = {:.0} writes/s; p50 {:?} p99 {:?}",
        wlat.len(),
        forgotten.len(),
        wlat.len() as f64 / write_secs,
        pct(&mut wlat, 0.5),
        pct(&mut wlat, 0.99)
    );
    println!(
        "soak: {} recalls by {READERS} threads = {:.0} recalls/s; p50 {:?} p99 {:?}",
        rlat.len(),
        rlat.len() as f64 / write_secs,
        pct(&mut rlat, 0.5),
        pct(&mut rlat, 0.99)
    );
    println!("soak: {} compactions, p50 {:?} max {:?}", clat.len(), pct(&mut clat, 0.5), pct(&mut clat, 1.0));
    println!(
        "soak: all {} acknowledged writes read back; check consistent over {} records; VmRSS {} KiB before, {} KiB open at end, {} KiB after close",
        acked.len(),
        check.records,
        rss_before,
        rss_open,
        rss_after
    );
}

mod daemon {
    //! The daemon soak (see the crate doc).

    use std::io::{BufRead, BufReader};
    use std::path::Path;
    use std::process::{Child, Command, Stdio};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use rmcp::model::CallToolRequestParams;
    use rmcp::service::{RoleClient, RunningService};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::ServiceExt;
    use serde_json::{json, Value};

    const BIN: &str = env!("CARGO_BIN_EXE_mnemon");
    const CLIENTS: usize = 4;
    const WORDS: [&str; 24] = [
        "heron", "river", "tea", "oolong", "Paris", "Berlin", "meeting", "project", "deadline", "budget", "dog", "cat",
        "bike", "train", "coffee", "kitchen", "garden", "piano", "chess", "novel", "python", "rust", "memory", "agent",
    ];

    type Client = RunningService<RoleClient, ()>;

    fn env_u64(name: &str, default: u64) -> u64 {
        std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
    }

    /// A `mnemon serve` child on `data`, and its address.
    fn start(data: &Path) -> (Child, String) {
        let mut child = Command::new(BIN)
            .arg("--data")
            .arg(data)
            .args(["--embedder", "hashing", "serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = super::serve::announced(&mut lines, "mnemon: serving MCP on ").trim().to_string();
        std::thread::spawn(move || for _ in lines {});
        (child, url)
    }

    fn stop(mut child: Child) {
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        child.wait().unwrap();
    }

    fn rss_mib(pid: u32) -> f64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            })
            .map_or(0.0, |kib| kib / 1024.0)
    }

    async fn connect(url: &str) -> Client {
        ().serve(StreamableHttpClientTransport::from_uri(url.to_string())).await.unwrap()
    }

    async fn call(c: &Client, tool: &str, args: Value) -> Option<Value> {
        let Value::Object(args) = args else { return None };
        let r = c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)).await.ok()?;
        let text = r.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone())?;
        serde_json::from_str(&text).ok()
    }

    /// One client's loop until `until`; counts calls into `calls`.
    async fn client(url: String, seed: u64, until: Instant, calls: Arc<AtomicU64>) {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut c = connect(&url).await;
        let mut ids: Vec<(String, u64)> = Vec::new();
        let http = reqwest::Client::new();
        while Instant::now() < until {
            let ns = format!("user{}", next(20));
            let n_words = 5 + next(35);
            let text: Vec<&str> = (0..n_words).map(|_| WORDS[usize::try_from(next(24)).unwrap()]).collect();
            let text = format!("{} {}", text.join(" "), next(1_000_000_000));
            let query: String = text.chars().take(60).collect();
            match next(100) {
                0..35 => {
                    if let Some(v) = call(&c, "memory_remember", json!({"namespace": ns, "content": text})).await {
                        if let Some(id) = v["id"].as_u64() {
                            ids.push((ns, id));
                        }
                    }
                }
                35..60 => drop(call(&c, "memory_recall", json!({"namespace": ns, "query": query})).await),
                60..80 => drop(call(&c, "memory_context", json!({"namespace": ns, "query": query})).await),
                80..90 => drop(call(&c, "memory_list", json!({"namespace": ns})).await),
                90..95 => {
                    if !ids.is_empty() {
                        let (ns, id) = ids.swap_remove(usize::try_from(next(ids.len() as u64)).unwrap());
                        drop(call(&c, "memory_forget", json!({"namespace": ns, "id": id})).await);
                    }
                }
                95..98 => {
                    // A short-lived agent: initialises a session, then is
                    // gone without closing it.
                    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                        "protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "soak", "version": "1"}}});
                    let _ = http
                        .post(&url)
                        .header("Content-Type", "application/json")
                        .header("Accept", "application/json, text/event-stream")
                        .body(init.to_string())
                        .send()
                        .await;
                }
                _ => {
                    // A client that closes its session and starts anew.
                    let old = std::mem::replace(&mut c, connect(&url).await);
                    let _ = old.cancel().await;
                }
            }
            calls.fetch_add(1, Ordering::Relaxed);
        }
        let _ = c.cancel().await;
    }

    pub fn soak() {
        let secs = env_u64("MNEMON_SOAK_SECS", 3600);
        let sample = Duration::from_secs(env_u64("MNEMON_SOAK_SAMPLE_SECS", 60).max(1));
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("store");
        let (child, url) = start(&data);
        let pid = child.id();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let began = Instant::now();
        let until = began + Duration::from_secs(secs);
        let calls = Arc::new(AtomicU64::new(0));
        println!("daemon soak: {secs} s of mixed MCP HTTP load, {CLIENTS} clients");
        println!("{:>8} {:>10} {:>10} {:>12}", "seconds", "calls", "RSS MiB", "store MiB");
        let rss_start = rss_mib(pid);
        let mut peak = rss_start;
        rt.block_on(async {
            let tasks: Vec<_> =
                (0..CLIENTS).map(|i| tokio::spawn(client(url.clone(), i as u64 + 1, until, calls.clone()))).collect();
            while Instant::now() < until {
                tokio::time::sleep(sample.min(until.saturating_duration_since(Instant::now()))).await;
                let rss = rss_mib(pid);
                peak = peak.max(rss);
                let store = tree_mib(&data);
                println!(
                    "{:>8} {:>10} {:>10.1} {:>12.1}",
                    began.elapsed().as_secs(),
                    calls.load(Ordering::Relaxed),
                    rss,
                    store
                );
            }
            for t in tasks {
                let _ = t.await;
            }
        });
        let rss_end = rss_mib(pid);
        stop(child);
        let (fresh, fresh_url) = start(&data);
        // The fresh daemon has replayed the store once it answers.
        let rss_fresh = rt.block_on(async {
            let c = connect(&fresh_url).await;
            call(&c, "memory_list", json!({"namespace": "user0"})).await;
            rss_mib(fresh.id())
        });
        stop(fresh);
        println!(
            "daemon soak: RSS {rss_start:.1} MiB at start, peak {peak:.1}, {rss_end:.1} at end; a fresh daemon on the same store: {rss_fresh:.1} MiB; soaked / fresh = {:.2}x",
            rss_end / rss_fresh.max(1.0)
        );
    }

    fn tree_mib(p: &Path) -> f64 {
        fn walk(p: &Path) -> u64 {
            std::fs::read_dir(p)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| match e.file_type() {
                            Ok(t) if t.is_dir() => walk(&e.path()),
                            _ => e.metadata().map_or(0, |m| m.len()),
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        walk(p) as f64 / (1024.0 * 1024.0)
    }
}
