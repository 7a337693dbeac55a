//! The cluster on a real 3-node NATS JetStream cluster (loopback ports,
//! temporary store directories): daemons are child processes of this
//! binary (`MNEMON_CLUSTER_DAEMON` set), driven through the NATS door by
//! several client threads.
//!
//! * `unreachable_at_start`: no NATS server → a clear `Unavailable` error.
//! * `fencing_check`: a takeover marker appended by another writer makes the
//!   owner's next append fail the expected-sequence check (`Fenced`, not
//!   acknowledged); the namespace is taken again and goes on.
//! * `mixed_load`: 3 daemons, 50 namespaces, 4 clients; one daemon is
//!   killed (SIGKILL) mid-load, then one NATS node; afterwards every
//!   acknowledged write is present exactly once with its id, every
//!   namespace passes `check`, and a fresh daemon rebuilt from the streams
//!   alone has the same digest for every namespace.
//! * `sigstop`: an owner paused (SIGSTOP) until its lease moves, then
//!   resumed: the new owner's history is the only one (the old owner's copy
//!   is a prefix of it), every acknowledged write is there once.
//! * `erasure`: a canary forgotten and compacted is absent from every file
//!   of every daemon and every NATS node (and was present before).
//! * `encrypted`: with a key, no file of a daemon or NATS node holds a
//!   memory in plain; a takeover reads it (keys from the key bucket); a
//!   forget of the whole namespace shreds its key across the cluster, and
//!   the proof covers the namespace's stream.
//! * `serve_encrypted`: the same through `mnemon serve --cluster
//!   --key-file`; a daemon with another key is refused the namespace.
//! * `log_unavailable`: NATS stops mid-run → writes fail with
//!   `Unavailable`, nothing acknowledged is lost, writes resume after.
//!
//! `MNEMON_CLUSTER_TESTS` picks scenarios (comma-separated).

mod nats;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemon::{erase::ErasurePatterns, Error, ForgetRequest, ListOptions, MemoryId, Namespace, NewMemory};
use mnemon_cluster::{CallReply, CallRequest, ClusterNode, Handler, Route, Served};
use nats::NatsCluster;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const CHILD: &str = "MNEMON_CLUSTER_DAEMON";
/// Lease TTL of the test daemons (failover takes about this long).
const TTL: Duration = Duration::from_secs(2);
/// NATS request timeout of the test daemons.
const TIMEOUT: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------- handler

/// The daemons' call format in these tests: JSON `{"op": …}` on one
/// namespace; answers JSON, errors as `{"error": kind, "message": …}`.
fn handler() -> Handler {
    Arc::new(|s: &Served<'_>, body: &[u8]| {
        let out = match serde_json::from_slice::<Value>(body) {
            Ok(req) => run(s, &req).unwrap_or_else(|e| error_json(&e)),
            Err(e) => json!({"error": "invalid", "message": e.to_string()}),
        };
        serde_json::to_vec(&out).unwrap()
    })
}

/// Which test calls may run again: reads, and calls refused as `fenced`
/// or `locked`.
struct TestRetry;

impl mnemon_cluster::Retry for TestRetry {
    fn read_only(&self, body: &[u8]) -> bool {
        let op = serde_json::from_slice::<Value>(body).ok().and_then(|v| v["op"].as_str().map(str::to_owned));
        matches!(op.as_deref(), Some("get" | "check" | "all" | "recall"))
    }

    fn refused(&self, reply: &[u8]) -> bool {
        let v: Value = serde_json::from_slice(reply).unwrap_or_default();
        matches!(v["error"].as_str(), Some("fenced" | "locked"))
    }
}

fn error_json(e: &Error) -> Value {
    let kind = match e {
        Error::Fenced { .. } => "fenced",
        Error::Unavailable(_) => "unavailable",
        Error::Poisoned(_) => "poisoned",
        Error::NotFound { .. } => "not_found",
        _ => "other",
    };
    json!({"error": kind, "message": e.to_string()})
}

fn run(s: &Served<'_>, req: &Value) -> mnemon::Result<Value> {
    let (e, ns) = (s.engine(), s.namespace());
    Ok(match req["op"].as_str().unwrap_or("") {
        "remember" => {
            let r = e.remember(ns, NewMemory::new(req["content"].as_str().unwrap_or("")))?;
            json!({"id": r.id.0})
        }
        "get" => {
            let m = e.get(ns, MemoryId(req["id"].as_u64().unwrap_or(0)))?;
            json!({"id": m.id.0, "content": m.content})
        }
        "all" => {
            let opts = ListOptions { include_superseded: true, include_archived: true, ..ListOptions::default() };
            let all: Vec<Value> = e.list(ns, &opts).into_iter().map(|m| json!([m.id.0, m.content])).collect();
            json!({"memories": all})
        }
        "forget" => {
            let f = e.forget(ns, ForgetRequest::Memory(MemoryId(req["id"].as_u64().unwrap_or(0))), "test")?;
            json!({"memories": f.memories})
        }
        "compact" => {
            let r = s.compact()?;
            json!({
                "verified": r.local.verified,
                "generation": r.generation,
                "previous_deleted": r.previous_stream_deleted,
                "daemons": r.daemons.iter().map(|d| json!([d.daemon, d.had_copy, d.removed])).collect::<Vec<_>>(),
                "silent": r.daemons_silent,
            })
        }
        "check" => {
            let c = e.check()?;
            json!({"consistent": c.consistent, "digest": c.digest, "last_seq": c.last_seq})
        }
        "digest" => json!({"digest": e.digest()}),
        "forget_all" => {
            let f = e.forget(ns, ForgetRequest::All, "erase the user")?;
            json!({"memories": f.memories, "key_shredded": f.key_shredded})
        }
        "recall" => {
            let hits = e.recall(ns, req["query"].as_str().unwrap_or(""), &mnemon::RecallOptions::default())?;
            json!({"ids": hits.iter().map(|h| h.memory.id.0).collect::<Vec<_>>()})
        }
        "verify_shred" => serde_json::to_value(s.verify_shred(&[], &[])?).unwrap(),
        other => json!({"error": "invalid", "message": format!("unknown op {other:?}")}),
    })
}

// ---------------------------------------------------------------- daemon

/// The child: one daemon until stdin closes (then a graceful shutdown).
fn daemon(spec: &str) {
    let v: Value = serde_json::from_str(spec).unwrap();
    let urls: Vec<String> = v["urls"].as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()).collect();
    // As a supervisor would: a start while the NATS cluster is still
    // electing leaders after a node was killed is refused as unavailable
    // and tried again.
    let mut tries = 0;
    let node = loop {
        let mut builder = ClusterNode::builder(v["data"].as_str().unwrap(), v["id"].as_str().unwrap(), &urls)
            .prefix(v["prefix"].as_str().unwrap())
            .lease_ttl(TTL)
            .timeout(TIMEOUT);
        if let Some(key) = v["key"].as_str() {
            let key: Arc<dyn mnemon::crypt::KeyProvider> = Arc::new(mnemon::crypt::KeyFile(key.into()));
            builder = builder.engine(Arc::new(move |p: &Path| {
                mnemon::Engine::builder(p).cache_bytes(16 << 20).key_provider(key.clone())
            }));
        }
        let started = builder.start();
        match started {
            Err(mnemon::Error::Unavailable(why)) if tries < 10 => {
                tries += 1;
                eprintln!("  daemon start, try {tries}: {why}");
                std::thread::sleep(Duration::from_millis(500));
            }
            other => break other.unwrap(),
        }
    };
    node.serve(handler());
    node.serve_retry(Arc::new(TestRetry));
    println!("ready");
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
        line.clear();
    }
    node.shutdown().unwrap();
}

struct Daemon {
    id: String,
    data: PathBuf,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    spec: String,
}

impl Daemon {
    fn start(id: &str, data: &Path, urls: &[String], prefix: &str) -> Daemon {
        Daemon::start_with(id, data, json!({"id": id, "data": data, "urls": urls, "prefix": prefix}))
    }

    /// A daemon whose namespaces are encrypted with the key in `key`.
    fn start_encrypted(id: &str, data: &Path, urls: &[String], prefix: &str, key: &Path) -> Daemon {
        Daemon::start_with(id, data, json!({"id": id, "data": data, "urls": urls, "prefix": prefix, "key": key}))
    }

    fn start_with(id: &str, data: &Path, spec: Value) -> Daemon {
        let mut d = Daemon { id: id.into(), data: data.into(), child: None, stdin: None, spec: spec.to_string() };
        d.spawn();
        d
    }

    fn spawn(&mut self) {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(CHILD, &self.spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "daemon {} did not start", self.id);
        self.stdin = child.stdin.take();
        self.child = Some(child);
    }

    fn pid(&self) -> String {
        self.child.as_ref().unwrap().id().to_string()
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        self.stdin = None;
    }

    fn signal(&self, sig: &str) {
        assert!(Command::new("kill").arg(sig).arg(self.pid()).status().unwrap().success());
    }

    fn shutdown(&mut self) {
        self.stdin = None;
        if let Some(mut c) = self.child.take() {
            let status = c.wait().unwrap();
            assert!(status.success(), "daemon {} exited with {status}", self.id);
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

// ---------------------------------------------------------------- client

/// A NATS client calling the daemons' door.
#[derive(Clone)]
struct Client {
    rt: Arc<tokio::runtime::Runtime>,
    nc: async_nats::Client,
    prefix: String,
}

impl Client {
    fn connect(urls: &[String], prefix: &str) -> Client {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let addrs: Vec<async_nats::ServerAddr> = urls.iter().map(|u| u.parse().unwrap()).collect();
        let nc = rt.block_on(async_nats::connect(addrs)).unwrap();
        Client { rt: Arc::new(rt), nc, prefix: prefix.into() }
    }

    /// Calls `ns` through any daemon (`via` = None) or one daemon. `Err`
    /// is a call that was not answered with a result (error kind, text).
    fn call(&self, via: Option<&str>, ns: &str, body: Value) -> Result<Value, (String, String)> {
        match self.raw(via, ns, &body)? {
            CallReply::Done(b) => {
                let v: Value = serde_json::from_slice(&b).unwrap();
                match v.get("error") {
                    Some(kind) => Err((kind.as_str().unwrap().into(), v["message"].to_string())),
                    None => Ok(v),
                }
            }
            CallReply::Failed(m) => Err(("failed".into(), m)),
            CallReply::NotOwner(m) => Err(("not_owner".into(), m)),
        }
    }

    /// Calls a `mnemon serve --cluster` daemon with a command-surface
    /// request: the response, or the surface's error object.
    fn surface(&self, via: Option<&str>, ns: &str, req: Value) -> Result<Value, Value> {
        match self.raw(via, ns, &req) {
            Ok(CallReply::Done(b)) => match mnemon_cluster::surface_reply(&b) {
                Ok(v) => Ok(v),
                Err(e) => Err(serde_json::to_value(e).unwrap()),
            },
            other => Err(json!({"code": "transport", "message": format!("{other:?}")})),
        }
    }

    fn raw(&self, via: Option<&str>, ns: &str, body: &Value) -> Result<CallReply, (String, String)> {
        let subject = match via {
            Some(d) => format!("{}.call.{d}", self.prefix),
            None => format!("{}.call", self.prefix),
        };
        let req = CallRequest { ns: ns.into(), body: serde_json::to_vec(body).unwrap() }.encode().unwrap();
        // A daemon that has just started is subscribed on its own NATS node;
        // the others learn of it a moment later. A request nobody received
        // ("no responders") is sent again for a few seconds.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let request = async_nats::Request::new().payload(req.clone().into()).timeout(Some(Duration::from_secs(20)));
            match self.rt.block_on(self.nc.send_request(subject.clone(), request)) {
                Ok(msg) => return Ok(CallReply::decode(&msg.payload).unwrap()),
                Err(e) if e.kind() == async_nats::RequestErrorKind::NoResponders && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(("transport".to_string(), e.to_string())),
            }
        }
    }
}

/// Acknowledged writes: (namespace, id) → content.
type Acks = Arc<Mutex<BTreeMap<(String, u64), String>>>;

/// Checks every acknowledged write is present with its id, its content
/// appears exactly once in the namespace, and every namespace passes check.
fn verify(client: &Client, acks: &BTreeMap<(String, u64), String>, namespaces: &[String]) -> HashMap<String, String> {
    let mut digests = HashMap::new();
    for ns in namespaces {
        let all = settled(client, ns, json!({"op": "all"}));
        let mut by_content: HashMap<String, Vec<u64>> = HashMap::new();
        let mut by_id: HashMap<u64, String> = HashMap::new();
        for m in all["memories"].as_array().unwrap() {
            let (id, content) = (m[0].as_u64().unwrap(), m[1].as_str().unwrap().to_string());
            by_content.entry(content.clone()).or_default().push(id);
            by_id.insert(id, content);
        }
        for ((n, id), content) in acks.range((ns.clone(), 0)..=(ns.clone(), u64::MAX)) {
            assert_eq!(n, ns);
            assert_eq!(by_id.get(id), Some(content), "{ns}: acknowledged memory {id} lost or changed");
            assert_eq!(by_content[content].len(), 1, "{ns}: {content:?} present {:?}", by_content[content]);
        }
        let check = settled(client, ns, json!({"op": "check"}));
        assert_eq!(check["consistent"], json!(true), "{ns}: {check}");
        digests.insert(ns.clone(), check["digest"].as_str().unwrap().to_string());
    }
    digests
}

/// A call from `verify`: retried while no daemon listens yet (a daemon
/// that has just started: its subscriptions reach the other NATS nodes a
/// moment after it is ready), up to 30 s.
fn settled(client: &Client, ns: &str, body: Value) -> Value {
    let start = Instant::now();
    loop {
        match client.call(None, ns, body.clone()) {
            Ok(v) => return v,
            Err((kind, m))
                if kind == "transport" && m.contains("no responders") && start.elapsed() < Duration::from_secs(30) =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{ns}: {e:?}"),
        }
    }
}

/// A client thread writing (and reading back) until `stop`.
fn load(
    client: Client,
    seed: u64,
    via: Option<String>,
    namespaces: Vec<String>,
    acks: Acks,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(u64, u64, u64)> {
    std::thread::spawn(move || {
        let mut rng = SmallRng::seed_from_u64(seed);
        let (mut ok, mut failed, mut reads) = (0u64, 0u64, 0u64);
        let mut mine: Vec<(String, u64, String)> = Vec::new();
        let mut k = 0u64;
        let mut slow = 0;
        while !stop.load(Ordering::SeqCst) {
            let ns = namespaces[rng.gen_range(0..namespaces.len())].clone();
            if !mine.is_empty() && rng.gen_bool(0.2) {
                let (ns, id, content) = mine[rng.gen_range(0..mine.len())].clone();
                if let Ok(v) = client.call(via.as_deref(), &ns, json!({"op": "get", "id": id})) {
                    assert_eq!(v["content"].as_str(), Some(content.as_str()), "{ns}/{id} read back changed");
                    reads += 1;
                }
                continue;
            }
            k += 1;
            // The tag starts with a letter: a tag of hex digits only could
            // read as a phone number and be redacted.
            let content = format!("Client {seed} entry {k} remembers tag t{:016x}", rng.gen::<u64>());
            let t = Instant::now();
            let r = client.call(via.as_deref(), &ns, json!({"op": "remember", "content": content}));
            if t.elapsed() > Duration::from_secs(2) && slow < 5 {
                slow += 1;
                println!("  slow write ({:?}) to {ns}: {:?}", t.elapsed(), r.as_ref().map(|_| ()));
            }
            match r {
                Ok(v) => {
                    let id = v["id"].as_u64().unwrap();
                    let prev = acks.lock().unwrap().insert((ns.clone(), id), content.clone());
                    assert!(prev.is_none(), "{ns}: id {id} acknowledged twice ({prev:?} and {content:?})");
                    mine.push((ns, id, content));
                    ok += 1;
                }
                Err(_) => failed += 1,
            }
        }
        (ok, failed, reads)
    })
}

// ---------------------------------------------------------------- scenarios

fn unreachable_at_start(_: &mut NatsCluster) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("nats://127.0.0.1:{}", nats::free_port());
    let started = Instant::now();
    let err = ClusterNode::builder(dir.path(), "lonely", std::slice::from_ref(&url))
        .timeout(Duration::from_millis(500))
        .start()
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    assert!(err.to_string().contains(&url), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let bad = ClusterNode::builder(dir.path(), "bad.id", std::slice::from_ref(&url)).start().unwrap_err();
    assert!(matches!(bad, Error::InvalidInput { field: "daemon_id", .. }), "{bad:?}");
    println!("  unreachable: {err}");
}

/// The documented takeover marker (docs/FORMAT.md, "Cluster log
/// messages"), as another writer would append it.
fn foreign_marker() -> Vec<u8> {
    let mut payload = vec![1u8]; // variant 1: Takeover
    payload.push(7);
    payload.extend_from_slice(b"foreign");
    payload.extend_from_slice(&[42, 9]); // instance 42, epoch 9 (varints)
    let mut out = b"MNL\x01".to_vec();
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

fn fencing_check(nats: &mut NatsCluster) {
    let dir = tempfile::tempdir().unwrap();
    let node = ClusterNode::builder(dir.path(), "f1", &nats.urls())
        .prefix("fence")
        .lease_ttl(TTL)
        .timeout(TIMEOUT)
        .start()
        .unwrap();
    let ns = Namespace::new("fenced.ns").unwrap();
    let Route::Local(engine) = node.route(&ns).unwrap() else { panic!("not local") };
    let a = engine.remember(&ns, NewMemory::new("Before the other writer: alpha 1")).unwrap();
    let client = Client::connect(&nats.urls(), "fence");
    // Another writer appends to the namespace's stream (subject per
    // docs/ARCHITECTURE.md, "Cluster").
    client.rt.block_on(async {
        let js = async_nats::jetstream::new(client.nc.clone());
        js.publish("fence.log.fenced_2Ens.g1", foreign_marker().into()).await.unwrap().await.unwrap();
    });
    let err = engine.remember(&ns, NewMemory::new("After the other writer: beta 2")).unwrap_err();
    assert!(matches!(err, Error::Fenced { .. }), "{err:?}");
    assert!(node.local(&ns).is_none(), "a fenced namespace must stop being served");
    drop(engine);
    // Taken again: caught up past the foreign marker, the refused write absent.
    let Route::Local(engine) = node.route(&ns).unwrap() else { panic!("not local") };
    let all: Vec<String> = engine.list(&ns, &ListOptions::default()).into_iter().map(|m| m.content).collect();
    assert_eq!(all, vec!["Before the other writer: alpha 1".to_string()]);
    assert_eq!(engine.get(&ns, a.id).unwrap().content, "Before the other writer: alpha 1");
    engine.remember(&ns, NewMemory::new("After taking it again: gamma 3")).unwrap();
    assert!(engine.check().unwrap().consistent);
    drop(engine);
    node.shutdown().unwrap();
    println!("  fenced: {err}");
}

fn mixed_load(nats: &mut NatsCluster) {
    let root = tempfile::tempdir().unwrap();
    let urls = nats.urls();
    let prefix = "load";
    let mut daemons: Vec<Daemon> =
        (1..=3).map(|i| Daemon::start(&format!("d{i}"), &root.path().join(format!("d{i}")), &urls, prefix)).collect();
    let namespaces: Vec<String> = (0..50).map(|i| format!("user-{i:02}")).collect();
    let client = Client::connect(&urls, prefix);
    let acks: Acks = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    // Every namespace taken once (each first take creates its stream).
    let warm = Instant::now();
    for ns in &namespaces {
        client.call(None, ns, json!({"op": "digest"})).unwrap();
    }
    println!("  50 namespaces taken in {:?}", warm.elapsed());
    let threads: Vec<_> = (0..4)
        .map(|c| {
            let via = if c == 0 { Some("d3".to_string()) } else { None };
            load(Client::connect(&urls, prefix), c, via, namespaces.clone(), acks.clone(), stop.clone())
        })
        .collect();
    let phase = |what: &str, secs: u64| {
        std::thread::sleep(Duration::from_secs(secs));
        println!("  {what}: {} acknowledged", acks.lock().unwrap().len());
    };
    phase("load", 3);
    daemons[0].kill9();
    phase("after kill -9 of daemon d1", 5);
    nats.kill(1);
    phase("after kill -9 of NATS node n2", 4);
    nats.restart(1);
    nats.wait_ready(Duration::from_secs(30));
    daemons[0].spawn();
    phase("after restarting n2 and d1", 3);
    stop.store(true, Ordering::SeqCst);
    let mut totals = (0, 0, 0);
    for t in threads {
        let (ok, failed, reads) = t.join().unwrap();
        totals = (totals.0 + ok, totals.1 + failed, totals.2 + reads);
    }
    let acks = acks.lock().unwrap().clone();
    println!("  writes acknowledged {}, failed {}, reads checked {}", totals.0, totals.1, totals.2);
    assert!(totals.0 > 200, "too little load got through: {totals:?}");
    let digests = verify(&client, &acks, &namespaces);
    // Every daemon lets go; a fresh one rebuilds every namespace from the
    // streams alone, with the same digests.
    for d in &mut daemons {
        d.shutdown();
    }
    let fresh = Daemon::start("d9", &root.path().join("d9"), &urls, prefix);
    let started = Instant::now();
    let again = verify(&client, &acks, &namespaces);
    println!("  fresh daemon caught up and checked 50 namespaces in {:?}", started.elapsed());
    assert_eq!(digests, again);
    drop(fresh);
}

fn sigstop(nats: &mut NatsCluster) {
    let root = tempfile::tempdir().unwrap();
    let urls = nats.urls();
    let prefix = "pause";
    let mut s1 = Daemon::start("s1", &root.path().join("s1"), &urls, prefix);
    let mut s2 = Daemon::start("s2", &root.path().join("s2"), &urls, prefix);
    let ns = vec!["paused".to_string()];
    let client = Client::connect(&urls, prefix);
    let first = client.call(Some("s1"), "paused", json!({"op": "remember", "content": "First words 0"})).unwrap();
    let acks: Acks = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = [("s1", 11), ("s1", 12), ("s2", 13)]
        .into_iter()
        .map(|(via, seed)| {
            load(Client::connect(&urls, prefix), seed, Some(via.into()), ns.clone(), acks.clone(), stop.clone())
        })
        .collect();
    // Through s2 while s1 is paused: reads and writes forwarded to s1.
    // Once s1's lease moves, a read is forwarded again to the new owner
    // and answered; a write fails at once, its outcome unknown, instead
    // of waiting out the forwarded call's timeout.
    let first_id = first["id"].clone();
    let (probe_stop, probe_client) = (Arc::new(AtomicBool::new(false)), Client::connect(&urls, prefix));
    let probe = {
        let stop = probe_stop.clone();
        std::thread::spawn(move || {
            let (mut reads, mut failures) = (0u64, Vec::new());
            while !stop.load(Ordering::SeqCst) {
                match probe_client.call(Some("s2"), "paused", json!({"op": "get", "id": first_id})) {
                    Ok(v) => {
                        assert_eq!(v["content"], json!("First words 0"));
                        reads += 1;
                    }
                    Err(e) => failures.push(format!("read: {e:?}")),
                }
                let w = probe_client.call(Some("s2"), "paused", json!({"op": "remember", "content": "Probe write"}));
                if let Err(e) = w {
                    failures.push(format!("write: {e:?}"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            (reads, failures)
        })
    };
    std::thread::sleep(Duration::from_millis(800));
    s1.signal("-STOP");
    let paused = acks.lock().unwrap().len();
    // Until the lease moves: s2 takes the namespace and acknowledges writes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while acks.lock().unwrap().len() < paused + 20 {
        assert!(Instant::now() < deadline, "the lease never moved to s2");
        std::thread::sleep(Duration::from_millis(100));
    }
    s1.signal("-CONT");
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    probe_stop.store(true, Ordering::SeqCst);
    let (reads, failures) = probe.join().unwrap();
    println!("  through s2: {reads} reads answered; failed: {failures:?}");
    assert!(failures.iter().all(|f| f.starts_with("write") && f.contains("lost the lease")), "{failures:?}");
    for w in writers {
        let (ok, failed, _) = w.join().unwrap();
        println!("  writer: {ok} acknowledged, {failed} failed");
    }
    let mut acks = acks.lock().unwrap().clone();
    acks.insert(("paused".into(), first["id"].as_u64().unwrap()), "First words 0".into());
    verify(&client, &acks, &ns);
    // The old owner's copy must be a prefix of the new owner's history:
    // hand the namespace back to s1, whose catch-up compares every record.
    s2.shutdown();
    let v = client.call(Some("s1"), "paused", json!({"op": "check"})).unwrap();
    assert_eq!(v["consistent"], json!(true));
    verify(&client, &acks, &ns);
    s1.shutdown();
}

fn scan(dirs: &[PathBuf], canary: &str) -> u64 {
    let mut p = ErasurePatterns::new();
    p.add_text(canary);
    dirs.iter().filter(|d| d.exists()).map(|d| mnemon::verify_erasure(d, &p).unwrap().matches_total).sum()
}

fn erasure(nats: &mut NatsCluster) {
    let root = tempfile::tempdir().unwrap();
    let urls = nats.urls();
    let prefix = "erase";
    let mut e1 = Daemon::start("e1", &root.path().join("e1"), &urls, prefix);
    let e2 = Daemon::start("e2", &root.path().join("e2"), &urls, prefix);
    let client = Client::connect(&urls, prefix);
    let canary = "Canary zebra-quartz-mulberry: the vault phrase is violet kettle drum";
    let keep = client.call(Some("e1"), "victim", json!({"op": "remember", "content": "Keeps tea at five"})).unwrap();
    let c = client.call(Some("e1"), "victim", json!({"op": "remember", "content": canary})).unwrap();
    // e1 lets go (its copy stays on disk), e2 takes the namespace over.
    e1.shutdown();
    let got = client.call(Some("e2"), "victim", json!({"op": "get", "id": c["id"]})).unwrap();
    assert_eq!(got["content"], json!(canary));
    e1.spawn();
    let mut dirs: Vec<PathBuf> = vec![e1.data.clone(), e2.data.clone()];
    dirs.extend(nats.store_dirs());
    for d in &dirs {
        assert!(scan(std::slice::from_ref(d), canary) > 0, "the canary should be in {} before", d.display());
    }
    client.call(Some("e2"), "victim", json!({"op": "forget", "id": c["id"]})).unwrap();
    let r = client.call(Some("e2"), "victim", json!({"op": "compact"})).unwrap();
    println!("  receipt: {r}");
    assert_eq!(r["verified"], json!(true));
    assert_eq!(r["previous_deleted"], json!(true));
    assert_eq!(r["daemons"], json!([["e1", true, true]]));
    // Deleting a stream is applied by every NATS node; give followers a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = scan(&dirs, canary);
        if left == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "canary still on disk ({left} matches)");
        std::thread::sleep(Duration::from_millis(200));
    }
    let kept = client.call(None, "victim", json!({"op": "get", "id": keep["id"]})).unwrap();
    assert_eq!(kept["content"], json!("Keeps tea at five"));
    client.call(None, "victim", json!({"op": "remember", "content": "Written after compaction 7"})).unwrap();
    let check = client.call(None, "victim", json!({"op": "check"})).unwrap();
    assert_eq!(check["consistent"], json!(true));
    drop(e2);
}

/// An encrypted cluster: a canary written through one daemon is on no
/// disk in plain (neither daemon's copies nor any NATS node's files), the
/// other daemon reads it after a takeover (its data keys come from the
/// key bucket, its vectors sealed from the stream), and a forget of the
/// whole namespace shreds its key across the cluster: the stream's
/// records open with no key left, while another namespace stays readable.
fn encrypted(nats: &mut NatsCluster) {
    let root = tempfile::tempdir().unwrap();
    let key = root.path().join("cluster.key");
    mnemon::crypt::write_new_key_file(&key).unwrap();
    let urls = nats.urls();
    let prefix = "crypt";
    let mut c1 = Daemon::start_encrypted("c1", &root.path().join("c1"), &urls, prefix, &key);
    let mut c2 = Daemon::start_encrypted("c2", &root.path().join("c2"), &urls, prefix, &key);
    let client = Client::connect(&urls, prefix);
    let canary = "Canary amber-lynx-sextant: the safe code is 4417 behind the clock";
    let c = client.call(Some("c1"), "secret", json!({"op": "remember", "content": canary})).unwrap();
    client.call(Some("c1"), "secret", json!({"op": "remember", "content": "Prefers aisle seats"})).unwrap();
    let keep =
        client.call(Some("c1"), "other", json!({"op": "remember", "content": "Keeps bees on the roof"})).unwrap();
    // c1 lets go (its copies stay on disk), c2 takes both over.
    c1.shutdown();
    let got = client.call(Some("c2"), "secret", json!({"op": "get", "id": c["id"]})).unwrap();
    assert_eq!(got["content"], json!(canary));
    let found =
        client.call(Some("c2"), "secret", json!({"op": "recall", "query": "safe code behind the clock"})).unwrap();
    assert_eq!(found["ids"][0], c["id"], "the vector came over sealed: {found}");
    let got = client.call(Some("c2"), "other", json!({"op": "get", "id": keep["id"]})).unwrap();
    assert_eq!(got["content"], json!("Keeps bees on the roof"));
    let mut dirs: Vec<PathBuf> = vec![c1.data.clone(), c2.data.clone()];
    dirs.extend(nats.store_dirs());
    assert_eq!(scan(&dirs, canary), 0, "the canary is on disk in plain");
    assert_eq!(scan(&dirs, "Keeps bees on the roof"), 0, "a memory is on disk in plain");
    // c1 runs again, holding an idle copy of the namespace (with its key).
    c1.spawn();
    let idle = c1.data.join("ns").join("secret");
    let read_idle = || {
        let open = || mnemon::Engine::builder(&idle).key_provider(Arc::new(mnemon::crypt::KeyFile(key.clone()))).open();
        let started = Instant::now();
        let e = loop {
            match open() {
                Err(Error::Locked { .. }) if started.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                other => break other.unwrap(),
            }
        };
        let shredded = e.open_report().shredded.clone();
        let listed = e.list(&Namespace::new("secret").unwrap(), &ListOptions::default()).len();
        e.close().unwrap();
        (shredded, listed)
    };
    assert_eq!(read_idle(), (vec![], 2), "the idle copy reads before the shred");
    let idle_ring = idle.join(mnemon::crypt::KEYRING_FILE);
    let ring_before = std::fs::read(&idle_ring).unwrap();

    let f = client.call(Some("c2"), "secret", json!({"op": "forget_all"})).unwrap();
    assert_eq!(f["key_shredded"], json!(true), "{f}");
    let proof = client.call(Some("c2"), "secret", json!({"op": "verify_shred"})).unwrap();
    println!("  proof: {proof}");
    assert_eq!(proof["verified"], json!(true), "{proof}");
    let stream =
        proof["checks"].as_array().unwrap().iter().find(|c| c["source"].as_str().unwrap().starts_with("nats:"));
    let stream = stream.expect("the stream was checked");
    assert!(stream["sealed"].as_u64().unwrap() >= 2, "{stream}");
    assert_eq!((stream["opened"].clone(), stream["plain"].clone()), (json!(0), json!(0)));
    // The idle copy on c1 takes the shred from its notice (its keyring is
    // replaced; the copy is opened here only after, so as not to hold it
    // while the daemon writes).
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read(&idle_ring).unwrap() == ring_before {
        assert!(Instant::now() < deadline, "c1's idle copy did not take the shred");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(read_idle(), (vec!["secret".to_string()], 0), "the idle copy still reads");

    // c1 serves the namespace again: nothing of it opens there either.
    c2.shutdown();
    let all = client.call(Some("c1"), "secret", json!({"op": "all"})).unwrap();
    assert_eq!(all["memories"], json!([]), "{all}");
    let got = client.call(Some("c1"), "other", json!({"op": "get", "id": keep["id"]})).unwrap();
    assert_eq!(got["content"], json!("Keeps bees on the roof"));
    client.call(Some("c1"), "secret", json!({"op": "remember", "content": "Written after the shred"})).unwrap();
    // A cluster compaction re-seals the namespace under a fresh key (in the
    // bucket before the new stream is written) and rewrites the stream
    // sealed; a daemon taking it over afterwards reads it.
    let r = client.call(Some("c1"), "secret", json!({"op": "compact"})).unwrap();
    assert_eq!((r["verified"].clone(), r["generation"].clone()), (json!(true), json!(2)), "{r}");
    assert_eq!(scan(&dirs, "Written after the shred"), 0, "a memory is on disk in plain after compaction");
    c1.shutdown();
    c2.spawn();
    let all = client.call(Some("c2"), "secret", json!({"op": "all"})).unwrap();
    assert_eq!(all["memories"].as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(all["memories"][0][1], json!("Written after the shred"));
    let check = client.call(Some("c2"), "secret", json!({"op": "check"})).unwrap();
    assert_eq!(check["consistent"], json!(true), "{check}");
    drop(c2);
}

fn log_unavailable(nats: &mut NatsCluster) {
    let dir = tempfile::tempdir().unwrap();
    let node = ClusterNode::builder(dir.path(), "u1", &nats.urls())
        .prefix("down")
        .lease_ttl(TTL)
        .timeout(TIMEOUT)
        .start()
        .unwrap();
    let ns = Namespace::new("outage").unwrap();
    let Route::Local(engine) = node.route(&ns).unwrap() else { panic!("not local") };
    let mut acked = vec![engine.remember(&ns, NewMemory::new("Before the outage 1")).unwrap().id];
    for i in 0..nats.nodes.len() {
        nats.kill(i);
    }
    let started = Instant::now();
    let err = engine.remember(&ns, NewMemory::new("During the outage 2")).unwrap_err();
    println!("  during the outage ({:?}): {err}", started.elapsed());
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    drop(engine);
    let err = node.route(&ns).unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    for i in 0..nats.nodes.len() {
        nats.restart(i);
    }
    nats.wait_ready(Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(30);
    let engine = loop {
        match node.route(&ns) {
            Ok(Route::Local(e)) => break e,
            other => {
                assert!(Instant::now() < deadline, "never recovered: {other:?}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    acked.push(engine.remember(&ns, NewMemory::new("After the outage 3")).unwrap().id);
    for id in &acked {
        engine.get(&ns, *id).unwrap();
    }
    assert!(engine.check().unwrap().consistent);
    drop(engine);
    node.shutdown().unwrap();
}

/// `mnemon serve --cluster`: two daemons of the real binary. Surface
/// requests reach the namespace's owner through either daemon's door; bad
/// input is a typed error; after SIGTERM of the owner the other daemon
/// serves the namespace with every acknowledged write; the first daemon
/// comes back, and a cluster compaction through the surface erases a
/// forgotten canary from both daemons' directories and every NATS node.
/// Starts `mnemon serve --cluster` (hashing embedder, 2 s lease) for
/// daemon `id` with data directory `data`, encrypted with the key file
/// `key` if given; returns once it serves MCP and has joined the cluster.
fn serve_daemon(data: &Path, id: &str, urls: &str, prefix: &str, key: Option<&Path>) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemon"));
    cmd.arg("--data").arg(data);
    if let Some(k) = key {
        cmd.arg("--key-file").arg(k);
    }
    let mut child = cmd
        .args(["--embedder", "hashing", "serve", "--listen", "127.0.0.1:0", "--cluster", urls])
        .args(["--daemon-id", id, "--cluster-prefix", prefix, "--lease-ttl-secs", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "daemon {id} exited: {seen}");
        seen.push_str(&line);
        if line.contains("serving MCP on") {
            break;
        }
    }
    assert!(seen.contains(&format!("daemon {id} joined the cluster")), "{seen}");
    assert_eq!(seen.contains("every namespace is encrypted at rest"), key.is_some(), "{seen}");
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    child
}

/// `mnemon serve --cluster --key-file`: two daemons with the same key
/// keep a namespace sealed on every disk, the second reads it after the
/// first stops, a forget of the whole namespace through the surface says
/// its key was shredded, and a daemon started with another key is refused
/// the namespace (`wrong_key`).
fn serve_encrypted(nats: &mut NatsCluster) {
    let root = tempfile::tempdir().unwrap();
    let key = root.path().join("fleet.key");
    let other_key = root.path().join("other.key");
    mnemon::crypt::write_new_key_file(&key).unwrap();
    mnemon::crypt::write_new_key_file(&other_key).unwrap();
    let urls = nats.urls().join(",");
    let spawn = |id: &str, key: &Path| serve_daemon(&root.path().join(id), id, &urls, "srvk", Some(key));
    let stop = |mut c: Child| {
        assert!(Command::new("kill").arg("-TERM").arg(c.id().to_string()).status().unwrap().success());
        assert!(c.wait().unwrap().success());
    };
    let a = spawn("k1", &key);
    let client = Client::connect(&nats.urls(), "srvk");
    let canary = "Canary teal-sparrow-anvil: the gate code is 8086";
    let write = |via: &str, content: &str| {
        client.surface(Some(via), "bob", json!({"op": "remember", "namespace": "bob", "content": content})).unwrap()
    };
    let c = write("k1", canary);
    write("k1", "Bob walks the dog at seven");
    stop(a);
    let b = spawn("k2", &key);
    let m = client.surface(Some("k2"), "bob", json!({"op": "get", "namespace": "bob", "id": c["id"]})).unwrap();
    assert_eq!(m["content"], json!(canary));
    let mut dirs = vec![root.path().join("k1"), root.path().join("k2")];
    dirs.extend(nats.store_dirs());
    assert_eq!(scan(&dirs, canary), 0, "the canary is on disk in plain");
    let stats = client.surface(Some("k2"), "bob", json!({"op": "stats"})).unwrap();
    assert_eq!(stats["encrypted"], json!(true), "{stats}");
    // The owner's view: the namespace it owns, its lease and its stream.
    let view = &stats["cluster"];
    assert_eq!(view["daemon"], json!("k2"), "{stats}");
    let served = view["served"].as_array().unwrap();
    let bob = served.iter().find(|s| s["namespace"] == json!("bob")).expect("k2 owns bob");
    assert!(bob["lease_left_ms"].as_u64().unwrap() > 0, "{bob}");
    assert!(bob["stream_seq"].as_u64().unwrap() >= 3, "two writes and the takeover markers: {bob}");
    assert_eq!(bob["lag"], json!(0), "{bob}");
    stop(b);
    // Another key: the namespace's keys do not open with it.
    let wrong = spawn("k3", &other_key);
    let refused =
        client.surface(Some("k3"), "bob", json!({"op": "get", "namespace": "bob", "id": c["id"]})).unwrap_err();
    assert!(refused.to_string().contains("wrong_key") || refused.to_string().contains("does not open"), "{refused}");
    stop(wrong);
    let b = spawn("k2", &key);
    let f = client.surface(Some("k2"), "bob", json!({"op": "forget", "namespace": "bob", "all": true})).unwrap();
    assert_eq!(f["memories"], json!(2), "{f}");
    let stats = client.surface(Some("k2"), "bob", json!({"op": "stats"})).unwrap();
    assert_eq!(stats["shredded_namespaces"], json!(1), "{stats}");
    // The proof through the surface, as every door asks for it: the
    // owner's copy and every record of the namespace's stream.
    let proof = client.surface(Some("k2"), "bob", json!({"op": "verify_shred", "namespace": "bob"})).unwrap();
    assert_eq!(proof["verified"], json!(true), "{proof}");
    let checks = proof["checks"].as_array().unwrap();
    let stream = checks.iter().find(|c| c["source"].as_str().is_some_and(|s| s.starts_with("nats:"))).unwrap();
    assert!(stream["sealed"].as_u64().unwrap() >= 2 && stream["opened"] == json!(0), "{proof}");
    assert!(checks.iter().any(|c| c["source"] == json!("store")), "{proof}");
    stop(b);
}

fn serve_daemons(nats: &mut NatsCluster) {
    let root = tempfile::tempdir().unwrap();
    let urls = nats.urls().join(",");
    let spawn = |id: &str| serve_daemon(&root.path().join(id), id, &urls, "srv", None);
    let mut a = spawn("a1");
    let mut b = spawn("b1");
    let client = Client::connect(&nats.urls(), "srv");
    let canary = "Canary ochre-lantern-fig: the locker code is 4417 amber";
    let mut ids = Vec::new();
    for i in 0..12 {
        let content =
            if i == 5 { canary.to_string() } else { format!("Alice note {i}: prefers aisle seats on flight {i}") };
        let v = client
            .surface(Some("a1"), "alice", json!({"op": "remember", "namespace": "alice", "content": content}))
            .unwrap();
        ids.push((v["id"].as_u64().unwrap(), content));
    }
    // Through the other daemon: forwarded to the owner.
    for (id, content) in &ids {
        let m = client.surface(Some("b1"), "alice", json!({"op": "get", "namespace": "alice", "id": id})).unwrap();
        assert_eq!(m["content"].as_str(), Some(content.as_str()));
    }
    let bad = client
        .surface(Some("b1"), "alice", json!({"op": "remember", "namespace": "alice", "content": ""}))
        .unwrap_err();
    assert_eq!(bad["code"], json!("invalid_input"), "{bad}");
    let other = client.surface(Some("b1"), "alice", json!({"op": "get", "namespace": "bob", "id": 1})).unwrap_err();
    assert_eq!(other["code"], json!("invalid_input"), "{other}");
    // The owner stops (SIGTERM: drains, releases its leases); b1 takes over.
    assert!(Command::new("kill").arg("-TERM").arg(a.id().to_string()).status().unwrap().success());
    assert!(a.wait().unwrap().success());
    for (id, content) in &ids {
        let m = client.surface(None, "alice", json!({"op": "get", "namespace": "alice", "id": id})).unwrap();
        assert_eq!(m["content"].as_str(), Some(content.as_str()));
    }
    // a1 comes back (its copy of alice, canary included, is on disk) before
    // the compaction, so the erasure notice reaches it.
    a = spawn("a1");
    let canary_id = ids[5].0;
    client
        .surface(None, "alice", json!({"op": "forget", "namespace": "alice", "id": canary_id, "reason": "test"}))
        .unwrap();
    let receipt = client.surface(None, "alice", json!({"op": "compact"})).unwrap();
    assert_eq!(receipt["daemons"][0]["removed"], json!(true), "{receipt}");
    assert_eq!(receipt["local"]["verified"], json!(true), "{receipt}");
    assert_eq!(receipt["previous_stream_deleted"], json!(true), "{receipt}");
    let mut dirs = vec![root.path().to_path_buf()];
    dirs.extend(nats.store_dirs());
    let deadline = Instant::now() + Duration::from_secs(10);
    while scan(&dirs, canary) > 0 {
        assert!(Instant::now() < deadline, "canary still on disk after the cluster compaction");
        std::thread::sleep(Duration::from_millis(200));
    }
    let check = client.surface(Some("b1"), "alice", json!({"op": "check"})).unwrap();
    assert_eq!(check["consistent"], json!(true), "{check}");
    for d in [&mut a, &mut b] {
        assert!(Command::new("kill").arg("-TERM").arg(d.id().to_string()).status().unwrap().success());
        assert!(d.wait().unwrap().success());
    }
}

/// A named scenario run on the shared NATS cluster.
type Scenario = (&'static str, fn(&mut NatsCluster));

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        daemon(&spec);
        return;
    }
    let only = std::env::var("MNEMON_CLUSTER_TESTS").ok();
    let scenarios: [Scenario; 9] = [
        ("serve_daemons", serve_daemons),
        ("unreachable_at_start", unreachable_at_start),
        ("fencing_check", fencing_check),
        ("mixed_load", mixed_load),
        ("sigstop", sigstop),
        ("erasure", erasure),
        ("encrypted", encrypted),
        ("serve_encrypted", serve_encrypted),
        ("log_unavailable", log_unavailable),
    ];
    let started = Instant::now();
    let mut nats = NatsCluster::start(3);
    println!("NATS cluster of 3 ready in {:?}", started.elapsed());
    for (name, f) in scenarios {
        if only.as_deref().is_some_and(|o| !o.split(',').any(|x| x == name)) {
            continue;
        }
        let t = Instant::now();
        println!("cluster::{name} ...");
        f(&mut nats);
        println!("cluster::{name} ok ({:?})", t.elapsed());
    }
    println!("all cluster scenarios passed in {:?}", started.elapsed());
}
