//! `mnemon mcp` (stdio) and `mnemon serve` (streamable HTTP) driven by the
//! official Rust SDK's client (`rmcp`): the tool list and its size in
//! tokens, every tool, bad input as error results that write nothing,
//! namespace policies, bearer tokens, and shutdown that keeps every
//! acknowledged write.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mnemon");
/// Target for the whole tool list (issue of clients' context budgets).
const MAX_TOOL_TOKENS: usize = 2_000;

type Client = RunningService<RoleClient, ()>;

fn mnemon(data: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).arg("--data").arg(data).args(["--embedder", "hashing"]).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn stdio_client(data: &Path, extra: &[&str]) -> Client {
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--data").arg(data).args(["--embedder", "hashing", "mcp"]).args(extra);
    }))
    .unwrap();
    ().serve(transport).await.unwrap()
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("arguments must be an object"),
    }
}

async fn call(c: &Client, tool: &str, a: Value) -> CallToolResult {
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(a))).await.unwrap()
}

fn text(r: &CallToolResult) -> Value {
    let t = r.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{e}: {t}"))
}

/// The result of a successful call, as JSON.
async fn ok(c: &Client, tool: &str, a: Value) -> Value {
    let r = call(c, tool, a.clone()).await;
    assert_ne!(r.is_error, Some(true), "{tool} {a}: {:?}", text(&r));
    text(&r)
}

/// The error object of a failed call.
async fn fails(c: &Client, tool: &str, a: Value) -> Value {
    let r = call(c, tool, a.clone()).await;
    assert_eq!(r.is_error, Some(true), "{tool} {a} succeeded: {:?}", text(&r));
    text(&r)["error"].clone()
}

/// Tokens of the tool definitions as `tools/list` sends them, counted as
/// the command surface counts every response (`mnemon::estimate_tokens`).
fn tool_tokens(tools: &[Tool]) -> usize {
    mnemon::estimate_tokens(&serde_json::to_string(&json!({ "tools": tools })).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_serves_every_tool_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let c = stdio_client(&data, &[]).await;

    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "remember",
            "observe",
            "recall",
            "context",
            "get",
            "history",
            "list",
            "forget",
            "extraction_prompt",
            "apply_extraction"
        ]
    );
    let tokens = tool_tokens(&tools);
    println!("tool definitions: {} tools, {tokens} tokens", tools.len());
    assert!(tokens <= MAX_TOOL_TOKENS, "tool definitions take {tokens} tokens");
    let hint = |name: &str| tools.iter().find(|t| t.name == name).unwrap().annotations.clone().unwrap();
    assert_eq!(hint("forget").destructive_hint, Some(true));
    assert_ne!(hint("forget").read_only_hint, Some(true));
    assert_eq!(hint("recall").read_only_hint, Some(true));
    assert_eq!(hint("remember").destructive_hint, Some(false));
    // Every recall filter is an argument of the recall tool.
    let recall = tools.iter().find(|t| t.name == "recall").unwrap();
    for f in [
        "namespace",
        "query",
        "top_k",
        "min_similarity",
        "kinds",
        "tiers",
        "session",
        "current_session",
        "from",
        "to",
        "as_of",
        "include_superseded",
        "include_quarantined",
        "include_archived",
        "mode",
        "similarity_norm",
        "candidates",
        "requester",
        "record_access",
    ] {
        assert!(recall.input_schema["properties"].get(f).is_some(), "recall lacks {f}");
    }

    let obs =
        ok(&c, "observe", json!({"namespace": "u", "session": "s1", "text": "User: I moved to Hangzhou last month"}))
            .await;
    let obs_id = obs["observation_id"].as_u64().unwrap();
    let r = ok(
        &c,
        "remember",
        json!({"namespace": "u", "content": "Prefers oolong tea", "kind": "preference", "key": "user.drink"}),
    )
    .await;
    assert_eq!(r["action"], "created");
    let first = r["id"].as_u64().unwrap();
    let r = ok(&c, "remember", json!({"namespace": "u", "content": "Prefers green tea", "key": "user.drink"})).await;
    assert_eq!(r["action"], "superseded");
    let second = r["id"].as_u64().unwrap();
    let hits = ok(&c, "recall", json!({"namespace": "u", "query": "what tea does the user like", "top_k": 3})).await;
    assert_eq!(hits["hits"][0]["memory"]["content"], "Prefers green tea");
    let hits = ok(
        &c,
        "recall",
        json!({"namespace": "u", "query": "tea", "include_superseded": true, "kinds": ["preference"]}),
    )
    .await;
    // The keyed update inherited the kind, so both versions are preferences.
    assert_eq!(hits["hits"].as_array().unwrap().len(), 2, "{hits}");
    assert!(hits["hits"].as_array().unwrap().iter().all(|h| h["memory"]["kind"] == "preference"), "{hits}");
    let hits =
        ok(&c, "recall", json!({"namespace": "u", "query": "tea", "include_superseded": true, "kinds": ["fact"]}))
            .await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 0, "{hits}");
    let hits = ok(&c, "recall", json!({"namespace": "u", "query": "tea", "kinds": ["preference"]})).await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 1, "{hits}");
    let ctx = ok(&c, "context", json!({"namespace": "u", "query": "tea", "budget_tokens": 200})).await;
    assert!(ctx["context"].as_str().unwrap().contains("Prefers green tea"), "{ctx}");
    // The part shares are accepted though not listed.
    let ctx = ok(&c, "context", json!({"namespace": "u", "query": "tea", "profile_share": 0, "recent_share": 0})).await;
    assert_eq!((ctx["profile"].as_u64(), ctx["recent"].as_u64()), (Some(0), Some(0)), "{ctx}");
    let m = ok(&c, "get", json!({"namespace": "u", "id": second})).await;
    assert_eq!(m["prev"], first);
    let h = ok(&c, "history", json!({"namespace": "u", "id": second})).await;
    assert_eq!(h["versions"].as_array().unwrap().len(), 2);
    let l = ok(&c, "list", json!({"namespace": "u", "include_superseded": true, "limit": 1})).await;
    assert_eq!(l["memories"].as_array().unwrap().len(), 1);
    let l = ok(&c, "list", json!({"namespace": "u", "include_superseded": true, "cursor": l["next_cursor"]})).await;
    assert_eq!(l["memories"][0]["id"], second);
    let p = ok(&c, "extraction_prompt", json!({"namespace": "u", "session": "s1"})).await;
    assert!(p["prompt"].as_str().unwrap().contains("Hangzhou"));
    let doc = json!({"new_memories": [{"content": "Lives in Hangzhou", "kind": "fact", "source_ids": [obs_id]}]});
    let rep = ok(&c, "apply_extraction", json!({"namespace": "u", "extraction": doc})).await;
    assert_eq!(rep["items"][0]["status"], "applied", "{rep}");
    let dry = ok(&c, "forget", json!({"namespace": "u", "id": second, "dry_run": true})).await;
    assert_eq!((dry["memories"].as_u64(), dry["dry_run"].as_bool()), (Some(2), Some(true)));

    // Bad input: an error result with the surface's code and field, nothing written.
    let before = ok(&c, "list", json!({"namespace": "u", "include_superseded": true})).await;
    for (tool, a, code, field) in [
        ("remember", json!({"namespace": "u"}), "invalid_input", "content"),
        ("remember", json!({"namespace": "u", "content": 7}), "invalid_input", "content"),
        ("remember", json!({"namespace": "u", "content": "x", "importance": "very"}), "invalid_input", "importance"),
        ("remember", json!({"namespace": "u", "content": "x".repeat(40_000)}), "invalid_input", "content"),
        ("remember", json!({"namespace": "not a namespace", "content": "x"}), "invalid_input", "namespace"),
        ("remember", json!({"namespace": "u", "content": "x", "colour": "red"}), "invalid_input", "colour"),
        ("recall", json!({"namespace": "u", "query": "tea", "top_k": "five"}), "invalid_input", "top_k"),
        ("context", json!({"namespace": "u", "query": "tea", "profile_share": -1}), "invalid_input", "profile_share"),
        ("forget", json!({"namespace": "u"}), "invalid_input", "target"),
        ("get", json!({"namespace": "u", "id": 999}), "not_found", ""),
    ] {
        let e = fails(&c, tool, a.clone()).await;
        assert_eq!(e["code"], code, "{tool} {a}: {e}");
        if !field.is_empty() {
            assert_eq!(e["field"], field, "{tool} {a}: {e}");
        }
    }
    let unknown = c.call_tool(CallToolRequestParams::new("teleport").with_arguments(args(json!({})))).await;
    assert!(unknown.unwrap_err().to_string().contains("unknown tool"));
    let after = ok(&c, "list", json!({"namespace": "u", "include_superseded": true})).await;
    assert_eq!(before["memories"], after["memories"]);

    // Closing stdin shuts the server down cleanly; every write is on disk.
    c.cancel().await.unwrap();
    let (okay, out, err) = mnemon(&data, &["--json", "list", "--ns", "u", "--all"]);
    assert!(okay, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["memories"].as_array().unwrap().len(), 3, "{out}");
    assert!(mnemon(&data, &["check"]).0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_for_one_namespace_hides_the_argument_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let c = stdio_client(&data, &["--ns", "alice"]).await;
    let tools = c.list_all_tools().await.unwrap();
    for t in &tools {
        assert!(t.input_schema["properties"].get("namespace").is_none(), "{} still takes a namespace", t.name);
    }
    let r = ok(&c, "remember", json!({"content": "Alice drinks oolong"})).await;
    assert_eq!(r["action"], "created");
    let e = fails(&c, "remember", json!({"namespace": "bob", "content": "Bob drinks coffee"})).await;
    assert_eq!(e["code"], "namespace_not_allowed");
    let l = ok(&c, "list", json!({})).await;
    assert_eq!(l["memories"][0]["namespace"], "alice");
    c.cancel().await.unwrap();

    let c = stdio_client(&data, &["--allow-ns", "team:*,alice"]).await;
    ok(&c, "remember", json!({"namespace": "team:red", "content": "Red team ships on Friday"})).await;
    let e = fails(&c, "list", json!({"namespace": "bob"})).await;
    assert_eq!(e["code"], "namespace_not_allowed");
    let e = fails(&c, "list", json!({})).await;
    assert_eq!(e["field"], "namespace");
    c.cancel().await.unwrap();
    let (_, out, _) = mnemon(&data, &["--json", "stats"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["active_memories"], 2, "{out}");
}

/// A `mnemon serve` child and the address it listens on.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(data: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .arg("--data")
            .arg(data)
            .args(["--embedder", "hashing", "serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("server exited before listening").unwrap();
            if let Some(rest) = line.strip_prefix("mnemon: serving MCP on http://") {
                break rest.trim_end_matches("/mcp").to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Server { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// SIGTERM, then the exit status.
    fn terminate(mut self) -> std::process::ExitStatus {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "server ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

async fn http_client(url: &str, token: Option<&str>) -> Result<Client, String> {
    let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(t) = token {
        cfg = cfg.auth_header(t.to_string());
    }
    let transport = StreamableHttpClientTransport::from_config(cfg);
    ().serve(transport).await.map_err(|e| e.to_string())
}

/// Status code of a raw HTTP/1.1 POST of `body` to /mcp.
fn raw_post(addr: &str, auth: Option<&str>, body: &str) -> u16 {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let auth = auth.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requires_the_token_and_shuts_down_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let server = Server::start(&data, &["--token", "s3cret"]);
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"namespace":"u","content":"sneaky"}}}"#;
    assert_eq!(raw_post(&server.addr, None, call), 401);
    assert_eq!(raw_post(&server.addr, Some("Bearer wrong"), call), 401);
    assert_eq!(raw_post(&server.addr, Some("s3cret"), call), 401);
    assert!(http_client(&server.url(), None).await.is_err());
    assert!(http_client(&server.url(), Some("nope")).await.is_err());
    // Malformed JSON with the right token: a JSON-RPC error, and the server lives on.
    let status = raw_post(&server.addr, Some("Bearer s3cret"), "{not json");
    assert!((400..500).contains(&status), "{status}");

    let c = http_client(&server.url(), Some("s3cret")).await.unwrap();
    let tools = c.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 10);
    println!("tool definitions over HTTP: {} tokens", tool_tokens(&tools));
    for i in 0..20 {
        ok(&c, "remember", json!({"namespace": "u", "content": format!("Acknowledged fact number {i} about owls")}))
            .await;
    }
    let hits = ok(&c, "recall", json!({"namespace": "u", "query": "owls", "top_k": 50})).await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 20);
    drop(c);
    let status = server.terminate();
    assert!(status.success(), "{status}");

    let (okay, out, err) = mnemon(&data, &["--json", "list", "--ns", "u"]);
    assert!(okay, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let contents: Vec<&str> =
        v["memories"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(contents.len(), 20, "{out}");
    assert!(!contents.contains(&"sneaky"));
    assert!(mnemon(&data, &["check"]).0);
}

#[test]
fn listening_off_loopback_requires_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let (okay, _, err) = mnemon(&dir.path().join("store"), &["serve", "--listen", "0.0.0.0:0"]);
    assert!(!okay);
    assert!(err.contains("token"), "{err}");
}
