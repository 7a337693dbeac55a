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
//!   ([`mnemon_cluster::DEFAULT_LEASE_TTL`]).
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
    fresh.serve(Arc::new(|s: &mnemon_cluster::Served<'_>, _: &[u8]| {
        let written = s.engine().remember(s.namespace(), NewMemory::new("written after failover"));
        if written.is_ok() {
            b"ok".to_vec()
        } else {
            Vec::new()
        }
    }));
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
    for n in [&nodes[0], &nodes[2]] {
        n.shutdown().expect("shutdown");
    }
    fresh.shutdown().expect("shutdown");
    cluster.kill(0);
}
