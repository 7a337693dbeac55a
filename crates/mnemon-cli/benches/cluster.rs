//! Cluster figures on a local 3-node NATS JetStream cluster (loopback
//! ports, temporary stores), each as a ratio to a same-run baseline:
//!
//! * write throughput: 3 daemons (in-process `ClusterNode`s, 12 namespaces
//!   spread over them) vs one standalone engine holding the same 12
//!   namespaces, 12 client threads each writing its own namespace;
//! * replay rate: a fresh daemon catching a namespace of 5,000 memories
//!   (`MNEMON_BENCH_REPLAY`) up from its stream vs a standalone engine
//!   replaying a store of the same memories from its local log;
//! * failover time, with the default lease TTL and timeouts: an owner
//!   process killed (SIGKILL), and one paused (SIGSTOP) → the namespace
//!   served (and written) again by another daemon, against the lease TTL
//!   ([`mnemon_cluster::DEFAULT_LEASE_TTL`]);
//! * loss of a NATS node: one client per namespace (12,
//!   `MNEMON_BENCH_NATS_NS`) writes without pause through the daemons while
//!   one of the three NATS nodes is killed (SIGKILL); the longest time any
//!   namespace then goes without an acknowledged write, against the lease
//!   TTL.
//!
//! Run: `cargo bench --bench cluster` (`MNEMON_BENCH_WRITES`: writes per
//! client thread, default 150). Needs `nats-server` (see tests/nats).

#[path = "../tests/nats/mod.rs"]
mod nats;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemon::{Engine, Namespace, NewMemory};
use mnemon_cluster::{ClusterNode, Route};

const CHILD: &str = "MNEMON_BENCH_CLUSTER_DAEMON";
const TTL: Duration = mnemon_cluster::DEFAULT_LEASE_TTL;
const CLIENTS: usize = 12;

fn writes() -> usize {
    std::env::var("MNEMON_BENCH_WRITES").ok().and_then(|s| s.parse().ok()).unwrap_or(150)
}

/// Memories of the replay figure (`MNEMON_BENCH_REPLAY`, default 5,000).
fn replays() -> usize {
    std::env::var("MNEMON_BENCH_REPLAY").ok().and_then(|s| s.parse().ok()).unwrap_or(5000)
}

fn text(c: usize, i: usize) -> String {
    format!("client {c} memory {i}: mentioned topic {} while planning project {}", i * 7919 % 1000, i % 37)
}

fn node(dir: &Path, id: &str, urls: &[String]) -> ClusterNode {
    ClusterNode::builder(dir, id, urls).prefix("bench").start().expect("node")
}

/// Writes/s of `CLIENTS` threads, each `writes()` remembers into its own
/// namespace through `engine_of`.
fn load(engine_of: impl Fn(usize) -> (Engine, Namespace)) -> f64 {
    let n = writes();
    let targets: Vec<(Engine, Namespace)> = (0..CLIENTS).map(engine_of).collect();
    let start = Instant::now();
    let threads: Vec<_> = targets
        .into_iter()
        .enumerate()
        .map(|(c, (e, ns))| {
            std::thread::spawn(move || {
                for i in 0..n {
                    e.remember(&ns, NewMemory::new(text(c, i))).expect("remember");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client");
    }
    (CLIENTS * n) as f64 / start.elapsed().as_secs_f64()
}

fn ns(c: usize) -> Namespace {
    Namespace::new(format!("bench-{c:02}")).expect("namespace")
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        // A daemon owning one namespace, killed or paused by the parent:
        // DIR|URLS|NAMESPACE.
        let mut parts = spec.splitn(3, '|');
        let (dir, urls, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let urls: Vec<String> = urls.split(',').map(str::to_string).collect();
        let n = node(Path::new(dir), &format!("victim-{name}"), &urls);
        let fo = Namespace::new(name).expect("namespace");
        let Ok(Route::Local(e)) = n.route(&fo) else { panic!("victim did not take the namespace") };
        e.remember(&fo, NewMemory::new("written by the victim before it dies")).expect("remember");
        println!("ready");
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    let mut cluster = nats::NatsCluster::start(3);
    let urls = cluster.urls();
    let root = tempfile::tempdir().expect("tempdir");

    // Standalone baseline: one engine, 12 namespaces.
    let solo = Engine::open(root.path().join("solo")).expect("engine");
    let solo_rate = load(|c| (solo.clone(), ns(c)));

    // Cluster: 3 daemons, each taking 4 of the 12 namespaces.
    let nodes: Vec<ClusterNode> =
        (0..3).map(|i| node(&root.path().join(format!("d{i}")), &format!("d{i}"), &urls)).collect();
    let cluster_rate = load(|c| match nodes[c % 3].route(&ns(c)).expect("route") {
        Route::Local(e) => (e, ns(c)),
        Route::Remote(o) => panic!("bench-{c:02} held by {o}"),
    });
    println!(
        "write throughput: standalone {solo_rate:.0} writes/s, 3 daemons {cluster_rate:.0} writes/s, ratio {:.2}",
        cluster_rate / solo_rate
    );

    // Replay: `replays()` memories written to one namespace in batches of
    // 100 (one group each) through d1; a fresh daemon catches the namespace
    // up from its stream, against a standalone engine reopening a store of
    // the same memories (its replay).
    let replay_ns = Namespace::new("replay").expect("namespace");
    let batches: Vec<Vec<NewMemory>> = (0..replays())
        .collect::<Vec<_>>()
        .chunks(100)
        .map(|c| c.iter().map(|&i| NewMemory::new(text(99, i))).collect())
        .collect();
    let Route::Local(e1) = nodes[1].route(&replay_ns).expect("route") else { panic!("d1 did not take it") };
    let replay_dir = root.path().join("replay-solo");
    let replay_solo = Engine::open(&replay_dir).expect("engine");
    for b in &batches {
        e1.remember_batch(&replay_ns, b.clone()).expect("batch");
        replay_solo.remember_batch(&replay_ns, b.clone()).expect("batch");
    }
    drop(e1);
    drop(replay_solo);
    nodes[1].shutdown().expect("shutdown");
    let fresh = node(&root.path().join("fresh"), "fresh", &urls);
    let Route::Local(_) = fresh.route(&replay_ns).expect("route") else { panic!("fresh did not take it") };
    let c = fresh.catch_ups().pop().expect("catch-up").1;
    let stream_rate = c.records as f64 / (c.millis.max(1) as f64 / 1000.0);
    let t = Instant::now();
    let reopened = Engine::open(&replay_dir).expect("reopen");
    let replayed = reopened.open_report().events_replayed;
    let local_rate = replayed as f64 / t.elapsed().as_secs_f64();
    drop(reopened);
    println!(
        "replay: {} records ({} stream messages) from the stream at {stream_rate:.0} records/s; local log replay of {replayed} at {local_rate:.0} records/s; ratio {:.2}",
        c.records,
        c.messages,
        stream_rate / local_rate
    );
    drop(solo);

    // Failover: the owner process is killed, or paused; time until
    // another daemon serves (and writes) the namespace.
    fresh.serve(write_handler());
    for (name, signal) in [("killed", "-KILL"), ("paused", "-STOP")] {
        let mut child = Command::new(std::env::current_exe().expect("exe"))
            .env(CHILD, format!("{}|{}|{name}", root.path().join(name).display(), urls.join(",")))
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("ready");
        assert_eq!(line.trim(), "ready");
        let fo = Namespace::new(name).expect("namespace");
        let sent = Command::new("kill").arg(signal).arg(child.id().to_string()).status().expect("kill");
        assert!(sent.success());
        let stopped = Instant::now();
        // A paused owner's lease moves while the first call is forwarded
        // to it: that call fails (its outcome unknown) and the client
        // writes again.
        let mut tries = 0;
        loop {
            tries += 1;
            match fresh.call(&fo, b"") {
                Ok(b) if b == b"ok" => break,
                Err(mnemon::Error::Unavailable(why)) if tries < 3 => println!("  {name}: {why}"),
                other => panic!("not served again: {other:?}"),
            }
        }
        let failover = stopped.elapsed();
        println!(
            "failover: owner {name} ({signal}) -> served again in {:.2} s; lease TTL {:.1} s; ratio {:.2}",
            failover.as_secs_f64(),
            TTL.as_secs_f64(),
            failover.as_secs_f64() / TTL.as_secs_f64()
        );
        let _ = child.kill();
        let _ = child.wait();
    }
    nats_node_loss(&mut cluster, [&nodes[0], &nodes[2], &fresh]);
    for n in [&nodes[0], &nodes[2]] {
        n.shutdown().expect("shutdown");
    }
    fresh.shutdown().expect("shutdown");
    cluster.kill(0);
}

/// A handler that remembers the request's body (or a fixed text for an
/// empty one) and answers `ok`, or nothing when the write failed.
fn write_handler() -> mnemon_cluster::Handler {
    Arc::new(|s: &mnemon_cluster::Served<'_>, body: &[u8]| {
        let text =
            if body.is_empty() { "written after failover".to_string() } else { String::from_utf8_lossy(body).into() };
        match s.engine().remember(s.namespace(), NewMemory::new(text)) {
            Ok(_) => b"ok".to_vec(),
            Err(_) => Vec::new(),
        }
    })
}

/// Namespaces written while a NATS node is killed (`MNEMON_BENCH_NATS_NS`,
/// default 12).
fn loss_namespaces() -> usize {
    std::env::var("MNEMON_BENCH_NATS_NS").ok().and_then(|s| s.parse().ok()).unwrap_or(12)
}

/// Loss of a NATS node under load: one client per namespace writes through
/// the three daemons in turn, without pause, while NATS node 2 of 3 is
/// killed; for each namespace, the longest time between two acknowledged
/// writes from the kill on (the time it had no writer), against the lease
/// TTL.
fn nats_node_loss(cluster: &mut nats::NatsCluster, daemons: [&ClusterNode; 3]) {
    for d in &daemons[..2] {
        d.serve(write_handler());
    }
    let count = loss_namespaces();
    let names: Vec<Namespace> =
        (0..count).map(|i| Namespace::new(format!("nats-loss-{i:02}")).expect("namespace")).collect();
    for (i, n) in names.iter().enumerate() {
        daemons[i % 3].call(n, b"first write").expect("first write");
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let start = Instant::now();
    let acks: Vec<_> = std::thread::scope(|s| {
        let clients: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let (stop, d) = (stop.clone(), daemons[i % 3]);
                s.spawn(move || {
                    let mut at = Vec::new();
                    let mut k = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        k += 1;
                        match d.call(n, format!("write {k} to {n}").as_bytes()) {
                            Ok(b) if b == b"ok" => at.push(start.elapsed()),
                            _ => std::thread::sleep(Duration::from_millis(20)),
                        }
                    }
                    at
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(3));
        let killed = start.elapsed();
        cluster.kill(1);
        std::thread::sleep(Duration::from_secs(15));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        clients.into_iter().map(|c| (killed, c.join().expect("client"))).collect()
    });
    let mut gaps: Vec<f64> = acks
        .iter()
        .map(|(killed, at)| {
            let before = at.iter().rev().find(|t| *t <= killed).copied().unwrap_or(*killed);
            let after: Vec<Duration> = at.iter().copied().filter(|t| t > killed).collect();
            let mut longest = after.first().map_or(Duration::from_secs(15), |f| *f - before);
            for w in after.windows(2) {
                longest = longest.max(w[1] - w[0]);
            }
            longest.as_secs_f64()
        })
        .collect();
    gaps.sort_by(f64::total_cmp);
    let writes: usize = acks.iter().map(|(_, a)| a.len()).sum();
    // Namespaces not written again in the 15 s after the kill (their gap
    // counts as 15 s).
    let silent = acks.iter().filter(|(killed, at)| !at.iter().any(|t| t > killed)).count();
    println!(
        "NATS node loss: {count} namespaces, {writes} writes acknowledged, {silent} not written again within 15 s; longest time without a write after the kill: median {:.2} s, worst {:.2} s; lease TTL {:.1} s; worst / TTL {:.2}",
        gaps[gaps.len() / 2],
        gaps[gaps.len() - 1],
        TTL.as_secs_f64(),
        gaps[gaps.len() - 1] / TTL.as_secs_f64()
    );
    cluster.restart(1);
}
