//! Remote embedding and rerank providers over HTTP, against a loopback
//! server whose answers each test steers: the OpenAI and Ollama shapes, a
//! store built and reopened through a provider, 429 with `Retry-After`,
//! 5xx retries, a wrong dimension and a non-finite value refused with the
//! provider named, a provider that goes down in the middle of an import
//! (every write acknowledged at once, embedded once it is back), and the
//! rerank stage. `scripts/provider-server` runs the same kinds of checks
//! against a real embedding server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemon::embed::{
    load_embedder_for, EmbedKind, Embedder, EmbedderChoice, HashingEmbedder, HttpEmbedder, HttpReranker, ProviderSpec,
};
use mnemon::{Engine, Error, Namespace, NewMemory, RecallOptions};

/// Dimension the server's vectors have (the hashing embedder's, so recall
/// by meaning behaves as with a real model on shared words).
const DIM: usize = 256;

/// What the server answers next.
#[derive(Default)]
struct Script {
    /// Answer this many requests with 429 and `Retry-After: 1` first.
    too_many: usize,
    /// Answer this many requests with 503 first.
    unavailable: usize,
    /// Send vectors of this many components instead.
    wrong_dim: Option<usize>,
    /// Put a number beyond f32's range in the vectors.
    overflow: bool,
    /// Send all-zero vectors.
    zeros: bool,
    /// Answer a request holding a text longer than this many bytes with
    /// this status (a server's context limit).
    too_long: Option<(usize, &'static str)>,
}

struct Server {
    port: u16,
    script: Arc<Mutex<Script>>,
    /// While true, connections are closed without an answer (a provider
    /// that is down; the port stays bound so no other process takes it).
    down: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
    /// The `input` sizes of the embedding requests.
    batches: Arc<Mutex<Vec<usize>>>,
    /// The Authorization headers seen.
    auth: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let s = Server {
            port,
            script: Arc::default(),
            down: Arc::default(),
            requests: Arc::default(),
            batches: Arc::default(),
            auth: Arc::default(),
        };
        let (script, down, requests, batches, auth) =
            (s.script.clone(), s.down.clone(), s.requests.clone(), s.batches.clone(), s.auth.clone());
        std::thread::spawn(move || {
            let embedder = Arc::new(HashingEmbedder::new(DIM).unwrap());
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if down.load(Ordering::SeqCst) {
                    drop(stream);
                    continue;
                }
                let (script, requests, batches, auth, embedder) =
                    (script.clone(), requests.clone(), batches.clone(), auth.clone(), embedder.clone());
                let down = down.clone();
                std::thread::spawn(move || serve(stream, &down, &script, &requests, &batches, &auth, &embedder));
            }
        });
        s
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn serve(
    stream: TcpStream,
    down: &AtomicBool,
    script: &Mutex<Script>,
    requests: &AtomicUsize,
    batches: &Mutex<Vec<usize>>,
    auth: &Mutex<Vec<String>>,
    embedder: &HashingEmbedder,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap(),
                "authorization" => auth.lock().unwrap().push(v.trim().to_string()),
                _ => {}
            }
        }
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).unwrap();
        if down.load(Ordering::SeqCst) {
            // Down: kept-alive connections are dropped too.
            return;
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let (status, extra, answer) = answer(&path, &req, script, batches, embedder);
        let text = answer.to_string();
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n",
            text.len()
        );
        if out.write_all(head.as_bytes()).and_then(|()| out.write_all(text.as_bytes())).is_err() {
            return;
        }
    }
}

fn answer(
    path: &str,
    req: &serde_json::Value,
    script: &Mutex<Script>,
    batches: &Mutex<Vec<usize>>,
    embedder: &HashingEmbedder,
) -> (&'static str, &'static str, serde_json::Value) {
    let mut s = script.lock().unwrap();
    if s.too_many > 0 {
        s.too_many -= 1;
        return ("429 Too Many Requests", "Retry-After: 1\r\n", serde_json::json!({"error": "slow down"}));
    }
    if s.unavailable > 0 {
        s.unavailable -= 1;
        return ("503 Service Unavailable", "", serde_json::json!({"error": "loading"}));
    }
    if let Some((limit, status)) = s.too_long {
        let long = req["input"].as_array().is_some_and(|a| a.iter().any(|t| t.as_str().unwrap().len() > limit));
        if long {
            return (
                status,
                "",
                serde_json::json!({"error": {"message": "input is larger than the max context size"}}),
            );
        }
    }
    if path == "/rerank" {
        // Scores by document length, longest first: an order recall would
        // not give.
        let docs = req["documents"].as_array().unwrap();
        let results: Vec<_> = docs
            .iter()
            .enumerate()
            .map(|(i, d)| serde_json::json!({"index": i, "relevance_score": d.as_str().unwrap().len() as f64 / 1000.0}))
            .collect();
        return ("200 OK", "", serde_json::json!({ "results": results }));
    }
    let texts: Vec<&str> = req["input"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    batches.lock().unwrap().push(texts.len());
    let mut vectors = embedder.embed(&texts, EmbedKind::Passage).unwrap();
    if let Some(d) = s.wrong_dim {
        for v in &mut vectors {
            v.truncate(d);
        }
    }
    let mut vectors: Vec<serde_json::Value> = vectors.into_iter().map(|v| serde_json::json!(v)).collect();
    if s.overflow {
        vectors[0][3] = serde_json::json!(1e39);
    }
    if s.zeros {
        vectors[0] = serde_json::json!(vec![0.0; DIM]);
    }
    match path {
        "/v1/embeddings" => {
            // Out of order, as the protocol allows: `index` says which.
            let data: Vec<_> = vectors
                .into_iter()
                .enumerate()
                .rev()
                .map(|(i, v)| serde_json::json!({"object": "embedding", "index": i, "embedding": v}))
                .collect();
            ("200 OK", "", serde_json::json!({"object": "list", "data": data, "model": req["model"]}))
        }
        "/api/embed" => ("200 OK", "", serde_json::json!({"model": req["model"], "embeddings": vectors})),
        _ => ("404 Not Found", "", serde_json::json!({"error": "no such route"})),
    }
}

fn spec(s: &str) -> &'static ProviderSpec {
    ProviderSpec::parse(s).unwrap().intern()
}

fn facts() -> Vec<&'static str> {
    vec![
        "Alice is allergic to peanuts and carries an epinephrine pen",
        "The team standup moved to 9:30 on Tuesdays",
        "Bob prefers window seats on long flights",
        "The staging database lives on host pg-stage-2",
        "Carol's daughter starts school in September",
    ]
}

#[test]
fn a_store_built_through_a_provider_recalls_and_reopens_with_it() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = Namespace::new("u1").unwrap();
    let e =
        Arc::new(HttpEmbedder::connect(spec(&format!("openai:hash-256@{}/v1?batch=2", server.url())), None).unwrap());
    assert_eq!(e.dim(), DIM, "learned from one request");
    let id = e.model_id().to_string();
    assert_eq!(id, format!("openai:hash-256@{}/v1#{DIM}", server.url()));
    {
        let engine = Engine::builder(dir.path()).embedder(e.clone()).open().unwrap();
        let batch: Vec<NewMemory> = facts().into_iter().map(NewMemory::new).collect();
        for r in engine.remember_batch(&ns, batch).unwrap() {
            assert!(!r.unwrap().vector_pending);
        }
        // Five texts in requests of at most two.
        assert!(server.batches.lock().unwrap().iter().all(|&n| n <= 2));
        let hits = engine.recall(&ns, "which host is the staging database on", &RecallOptions::default()).unwrap();
        assert!(hits[0].memory.content.contains("pg-stage-2"), "{:?}", hits[0].memory.content);
        engine.close().unwrap();
        assert_eq!(Engine::recorded_model(dir.path()).unwrap().as_deref(), Some(id.as_str()));
    }
    // `auto` finds the provider again from the recorded id, with no probe.
    let before = server.requests.load(Ordering::SeqCst);
    let again = load_embedder_for(EmbedderChoice::Auto, std::path::Path::new("/nonexistent"), Some(&id)).unwrap();
    assert_eq!(again.model_id(), id);
    assert_eq!(server.requests.load(Ordering::SeqCst), before);
    let engine = Engine::builder(dir.path()).embedder(again).open().unwrap();
    assert_eq!(engine.open_report().vectors_embedded, 0, "same model: nothing re-embedded");
    let hits = engine.recall(&ns, "Bob window seat flights", &RecallOptions::default()).unwrap();
    assert!(hits[0].memory.content.contains("window seats"));
}

#[test]
fn ollama_shape_and_the_api_key_from_the_environment() {
    let server = Server::start();
    let e = HttpEmbedder::connect(spec(&format!("ollama:nomic-embed-text@{}?dims={DIM}", server.url())), None).unwrap();
    let v = e.embed(&["hello there", "general kenobi"], EmbedKind::Query).unwrap();
    assert_eq!(v.len(), 2);
    assert!((v[0].iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4, "normalised");
    // The key is read from the variable the spec names and sent as a bearer token.
    std::env::set_var("MNEMON_TEST_PROVIDER_KEY", "sk-test-123");
    let keyed = HttpEmbedder::connect(
        spec(&format!("openai:m@{}/v1?dims={DIM}&key_env=MNEMON_TEST_PROVIDER_KEY", server.url())),
        None,
    )
    .unwrap();
    keyed.embed(&["x"], EmbedKind::Passage).unwrap();
    assert!(server.auth.lock().unwrap().iter().any(|a| a == "Bearer sk-test-123"));
    assert!(!keyed.model_id().contains("sk-test"), "a key is never part of the model id");
}

#[test]
fn retries_honour_retry_after_and_5xx() {
    let server = Server::start();
    let e = HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}", server.url())), None).unwrap();
    server.script.lock().unwrap().too_many = 1;
    let t = Instant::now();
    let v = e.embed(&["one"], EmbedKind::Passage).unwrap();
    assert_eq!(v.len(), 1);
    assert!(t.elapsed() >= Duration::from_millis(900), "waited for Retry-After: 1 ({:?})", t.elapsed());
    assert_eq!(e.requests_sent(), 1, "one call");
    assert_eq!(server.requests.load(Ordering::SeqCst), 2, "two tries");
    server.script.lock().unwrap().unavailable = 2;
    assert_eq!(e.embed(&["two"], EmbedKind::Passage).unwrap().len(), 1);
    // More failures than retries: unavailable, naming the provider.
    let few = HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}&retries=1", server.url())), None).unwrap();
    server.script.lock().unwrap().unavailable = 5;
    let err = few.embed(&["three"], EmbedKind::Passage).unwrap_err();
    assert!(matches!(err, Error::ProviderUnavailable { .. }), "{err}");
    assert!(err.to_string().contains("503") && err.to_string().contains(&server.url()), "{err}");
}

#[test]
fn a_wrong_dimension_or_a_non_finite_value_is_refused_naming_the_provider() {
    let server = Server::start();
    let e = HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}", server.url())), None).unwrap();
    server.script.lock().unwrap().wrong_dim = Some(100);
    let err = e.embed(&["a"], EmbedKind::Passage).unwrap_err();
    assert!(matches!(err, Error::Embedder(_)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("100 components") && msg.contains(&format!("{DIM}")) && msg.contains("openai:m@"), "{msg}");
    *server.script.lock().unwrap() = Script { overflow: true, ..Script::default() };
    let err = e.embed(&["a", "b"], EmbedKind::Passage).unwrap_err();
    assert!(err.to_string().contains("non-finite value at component 3"), "{err}");
    // A write with such an answer is refused and writes nothing.
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder(dir.path()).embedder(Arc::new(e)).open().unwrap();
    let ns = Namespace::new("u").unwrap();
    assert!(engine.remember(&ns, NewMemory::new("Dana likes tea")).is_err());
    assert_eq!(engine.stats().last_seq, 0);
}

#[test]
fn a_provider_down_mid_import_loses_no_write_and_catches_up() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = Namespace::new("u1").unwrap();
    let e = Arc::new(
        HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}&retries=1", server.url())), None).unwrap(),
    );
    let engine = Engine::builder(dir.path()).embedder(e.clone()).open().unwrap();
    let all = facts();
    // The first two go in while the provider answers.
    for f in &all[..2] {
        assert!(!engine.remember(&ns, NewMemory::new(*f)).unwrap().vector_pending);
    }
    server.down.store(true, Ordering::SeqCst);
    let mut pending = Vec::new();
    for f in &all[2..] {
        let r = engine.remember(&ns, NewMemory::new(*f)).unwrap();
        assert!(r.vector_pending, "stored at once, embedded later");
        pending.push(r.id);
    }
    assert!(!e.available());
    // Recall goes on by words while the provider is down, and says which
    // hits have no vector yet.
    let hits = engine.recall(&ns, "staging database host pg-stage-2", &RecallOptions::default()).unwrap();
    let top = &hits[0];
    assert!(top.memory.content.contains("pg-stage-2") && top.explain.vector_pending);
    assert_eq!(engine.embed_backlog(), 3);
    server.down.store(false, Ordering::SeqCst);
    assert_eq!(
        engine.wait_embedded(Duration::from_secs(120)).unwrap(),
        0,
        "backfill finished once the provider returned"
    );
    let hits = engine.recall(&ns, "which host is the staging database on", &RecallOptions::default()).unwrap();
    assert!(hits[0].memory.content.contains("pg-stage-2") && !hits[0].explain.vector_pending);
    engine.close().unwrap();
    // Every acknowledged write is there after reopen, with its vector.
    let engine = Engine::builder(dir.path()).embedder(e).open().unwrap();
    assert_eq!(engine.open_report().vectors_pending, 0);
    for id in pending {
        engine.get(&ns, id).unwrap();
    }
    assert_eq!(engine.list(&ns, &Default::default()).len(), all.len());
}

#[test]
fn a_reranker_orders_the_top_hits() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = Namespace::new("u1").unwrap();
    let engine = Engine::builder(dir.path())
        .embedder(Arc::new(HashingEmbedder::new(DIM).unwrap()))
        .reranker(Arc::new(HttpReranker::new(spec(&format!("rerank:bge-reranker@{}", server.url()))).unwrap()), 20)
        .open()
        .unwrap();
    for f in facts() {
        engine.remember(&ns, NewMemory::new(f)).unwrap();
    }
    let q = "Alice Bob Carol team database";
    // No access records: recency stays as it was between the calls.
    let opts = RecallOptions { top_k: 3, record_access: false, ..RecallOptions::default() };
    let hits = engine.recall(&ns, q, &opts).unwrap();
    assert_eq!(hits.len(), 3);
    let lens: Vec<usize> = hits.iter().map(|h| h.memory.content.len()).collect();
    assert!(lens.windows(2).all(|w| w[0] >= w[1]), "reranker's order (longest first): {lens:?}");
    assert!(hits.iter().all(|h| h.explain.rerank_score.is_some()));
    let plain = engine.recall(&ns, q, &RecallOptions { rerank: false, ..opts.clone() }).unwrap();
    assert!(plain.iter().all(|h| h.explain.rerank_score.is_none()));
    assert_eq!(engine.stats().rerank_failed, 0);
    // A reranker that fails leaves recall's own order, and stats count it.
    server.down.store(true, Ordering::SeqCst);
    let kept = engine.recall(&ns, q, &opts).unwrap();
    assert_eq!(
        kept.iter().map(|h| h.memory.id).collect::<Vec<_>>(),
        plain.iter().map(|h| h.memory.id).collect::<Vec<_>>()
    );
    assert!(kept.iter().all(|h| h.explain.rerank_score.is_none()));
    let stats = engine.stats();
    assert_eq!(stats.rerank_failed, 1);
    assert!(stats.last_rerank_error.as_deref().is_some_and(|e| !e.is_empty()), "{stats:?}");
    server.down.store(false, Ordering::SeqCst);
    engine.recall(&ns, q, &opts).unwrap();
    assert_eq!(engine.stats().rerank_failed, 1, "a call that succeeds is not counted");
}

#[test]
fn specs_name_providers_at_every_door() {
    let c: EmbedderChoice = "openai:text-embedding-3-small?dimensions=512".parse().unwrap();
    assert!(matches!(c, EmbedderChoice::Provider(p) if p.dimensions == Some(512)));
    assert_eq!(c.to_string(), "openai:text-embedding-3-small@https://api.openai.com/v1?dimensions=512");
    let err = "openai:m@http://user:secret@host".parse::<EmbedderChoice>().unwrap_err();
    assert!(!err.to_string().is_empty());
    let err = "bert-large".parse::<EmbedderChoice>().unwrap_err();
    assert!(err.to_string().contains("openai:MODEL"), "{err}");
}

#[test]
fn an_import_while_the_provider_is_down_is_written_and_embedded_later() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = Namespace::new("u1").unwrap();
    let e = Arc::new(
        HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}&retries=0&batch=4", server.url())), None)
            .unwrap(),
    );
    let engine = Engine::builder(dir.path()).embedder(e).open().unwrap();
    let lines: String = (0..40)
        .map(|i| format!("{{\"type\":\"memory\",\"content\":\"Import note {i} about harbour {i}\"}}\n"))
        .collect();
    // The provider is down for the whole import: every chunk is written
    // without vectors.
    server.down.store(true, Ordering::SeqCst);
    let opts = mnemon::portability::ImportOptions { batch: 10, ..Default::default() };
    let sum = engine.import(&ns, mnemon::portability::parse_jsonl(&lines), &opts).unwrap();
    assert_eq!(sum.memories_written, 40, "{sum:?}");
    assert_eq!(engine.embed_backlog(), 40);
    server.down.store(false, Ordering::SeqCst);
    assert_eq!(engine.wait_embedded(Duration::from_secs(120)).unwrap(), 0);
    let hits = engine.recall(&ns, "harbour 17", &RecallOptions::default()).unwrap();
    assert!(hits.iter().any(|h| h.memory.content.contains("note 17 ")) && !hits[0].explain.vector_pending);
}

#[test]
fn an_import_through_a_provider_embeds_every_chunk() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = Namespace::new("u1").unwrap();
    let e = Arc::new(
        HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}&batch=8", server.url())), None).unwrap(),
    );
    let engine = Engine::builder(dir.path()).embedder(e).open().unwrap();
    let lines: String = (0..50)
        .map(|i| format!("{{\"type\":\"memory\",\"content\":\"Chunked fact {i} on topic {}\"}}\n", i * 7))
        .collect();
    let opts = mnemon::portability::ImportOptions { batch: 12, ..Default::default() };
    let sum = engine.import(&ns, mnemon::portability::parse_jsonl(&lines), &opts).unwrap();
    assert_eq!(sum.memories_written, 50, "{sum:?}");
    assert_eq!(engine.embed_backlog(), 0, "embedded as it was written");
    assert!(server.batches.lock().unwrap().iter().all(|&n| n <= 8));
    let hits = engine.recall(&ns, "Chunked fact 33", &RecallOptions::default()).unwrap();
    assert!(hits[0].memory.content.contains("fact 33 "));
}

#[test]
fn a_text_the_provider_cannot_take_fails_alone() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = Namespace::new("u1").unwrap();
    let long = format!("A very long note: {}", "word ".repeat(200));
    // A server that answers an over-long input with 400: import rejects
    // that record, with its line, and writes the rest.
    server.script.lock().unwrap().too_long = Some((500, "400 Bad Request"));
    let e = Arc::new(
        HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}&retries=1", server.url())), None).unwrap(),
    );
    let engine = Engine::builder(dir.path()).embedder(e.clone()).open().unwrap();
    let mut lines: String =
        (0..5).map(|i| format!("{{\"type\":\"memory\",\"content\":\"Short note {i}\"}}\n")).collect();
    lines.push_str(&format!("{{\"type\":\"memory\",\"content\":\"{long}\"}}\n"));
    let sum = engine.import(&ns, mnemon::portability::parse_jsonl(&lines), &Default::default()).unwrap();
    assert_eq!((sum.memories_written, sum.rejected), (5, 1), "{sum:?}");
    assert_eq!(sum.rejections[0].line, 6);
    assert!(sum.rejections[0].reason.contains("400"), "{:?}", sum.rejections[0]);
    // A server that answers it with a 5xx looks down; the write is kept
    // and the background embedder finds that only this text fails: the
    // others are embedded.
    server.script.lock().unwrap().too_long = Some((500, "500 Internal Server Error"));
    let r = engine.remember(&ns, NewMemory::new(long.clone())).unwrap();
    assert!(r.vector_pending);
    let later = engine.remember(&ns, NewMemory::new("Gina plays the cello")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while engine.embed_backlog() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(engine.embed_backlog(), 0, "nothing holds the backlog back");
    assert_eq!(engine.stats().embed_failed, 1, "only the long text failed");
    let hits = engine.recall(&ns, "who plays the cello", &RecallOptions::default()).unwrap();
    let gina = hits.iter().find(|h| h.memory.id == later.id).expect("Gina's memory is found");
    assert!(!gina.explain.vector_pending);
}

#[test]
fn not_implemented_is_not_retried_and_zero_vectors_are_refused() {
    let server = Server::start();
    let e = HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}", server.url())), None).unwrap();
    server.script.lock().unwrap().too_long = Some((0, "501 Not Implemented"));
    let before = server.requests.load(Ordering::SeqCst);
    let err = e.embed(&["x"], EmbedKind::Passage).unwrap_err();
    assert!(matches!(err, Error::Embedder(_)) && err.to_string().contains("501"), "{err}");
    assert_eq!(server.requests.load(Ordering::SeqCst), before + 1, "tried once");
    *server.script.lock().unwrap() = Script { zeros: true, ..Script::default() };
    let err = e.embed(&["x"], EmbedKind::Passage).unwrap_err();
    assert!(err.to_string().contains("all-zero"), "{err}");
}

#[test]
fn recall_while_the_provider_is_down_says_so_and_does_not_abstain() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ns = Namespace::new("u1").unwrap();
    let e = Arc::new(
        HttpEmbedder::connect(spec(&format!("openai:m@{}/v1?dims={DIM}&retries=0", server.url())), None).unwrap(),
    );
    let engine = Engine::builder(dir.path()).embedder(e).open().unwrap();
    for f in facts() {
        engine.remember(&ns, NewMemory::new(f)).unwrap();
    }
    server.down.store(true, Ordering::SeqCst);
    let opts = RecallOptions {
        abstain: Some(mnemon::embed::Abstain { below: 0.9, unknown_name_below: 0.9 }),
        ..RecallOptions::default()
    };
    let hits = engine.recall(&ns, "Alice food", &opts).unwrap();
    assert!(hits[0].memory.content.contains("Alice"), "found by words, not abstained");
    assert!(hits.iter().all(|h| h.explain.query_unembedded));
}
