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

#[path = "../../mnemon/tests/common/models.rs"]
mod models;
#[path = "common/serve.rs"]
mod serve;

const BIN: &str = env!("CARGO_BIN_EXE_mnemon");
/// Most tokens of the whole tool list: clients send it with every request.
const MAX_TOOL_TOKENS: usize = mnemon_server::MAX_TOOL_TOKENS;

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
    stdio_client_with_env(data, extra, &[]).await
}

async fn stdio_client_with_env(data: &Path, extra: &[&str], env: &[(&str, &str)]) -> Client {
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--data").arg(data).args(["--embedder", "hashing", "mcp"]).args(extra);
        for (k, v) in env {
            c.env(k, v);
        }
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

/// The result of a successful call, as JSON: its structured content, which
/// the text block repeats and which fits the tool's output schema.
async fn ok(c: &Client, tool: &str, a: Value) -> Value {
    let r = call(c, tool, a.clone()).await;
    assert_ne!(r.is_error, Some(true), "{tool} {a}: {:?}", text(&r));
    let structured = r.structured_content.clone().unwrap_or_else(|| panic!("{tool}: no structured content"));
    assert_eq!(text(&r), structured, "{tool}: the text block is not the structured content");
    let tools = c.list_all_tools().await.unwrap();
    let schema = tools.iter().find(|t| t.name == tool).and_then(|t| t.output_schema.clone()).unwrap();
    if let Err(why) = fits(&Value::Object((*schema).clone()), &structured) {
        panic!("{tool}: the result does not fit its output schema: {why}: {structured}");
    }
    structured
}

/// Checks `v` against the JSON Schema keywords output schemas use
/// (`type`, `required`, `properties`, `items`, `enum`).
fn fits(schema: &Value, v: &Value) -> Result<(), String> {
    let type_ok = |t: &str| match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    };
    match schema.get("type") {
        Some(Value::String(t)) if !type_ok(t) => return Err(format!("not {t}: {v}")),
        Some(Value::Array(ts)) if !ts.iter().filter_map(Value::as_str).any(type_ok) => {
            return Err(format!("none of {ts:?}: {v}"))
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        if !values.contains(v) {
            return Err(format!("{v} not in {values:?}"));
        }
    }
    for r in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
        let r = r.as_str().unwrap_or_default();
        if v.get(r).is_none() {
            return Err(format!("lacks {r}"));
        }
    }
    for (k, s) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        if let Some(field) = v.get(k) {
            fits(s, field).map_err(|e| format!("{k}: {e}"))?;
        }
    }
    if let (Some(items), Some(a)) = (schema.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            fits(items, x).map_err(|e| format!("[{i}]: {e}"))?;
        }
    }
    Ok(())
}

/// The error object of a failed call.
async fn fails(c: &Client, tool: &str, a: Value) -> Value {
    let r = call(c, tool, a.clone()).await;
    assert_eq!(r.is_error, Some(true), "{tool} {a} succeeded: {:?}", text(&r));
    text(&r)["error"].clone()
}

/// Tokens of the tool definitions as `tools/list` sends them, counted as
/// the command surface counts every response (`mnemon::recall::estimate_tokens`).
fn tool_tokens(tools: &[Tool]) -> usize {
    mnemon::recall::estimate_tokens(&serde_json::to_string(&json!({ "tools": tools })).unwrap())
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
            "memory_remember",
            "memory_observe",
            "memory_recall",
            "memory_context",
            "memory_get",
            "memory_history",
            "memory_list",
            "memory_forget",
            "memory_forget_user",
            "memory_extraction_prompt",
            "memory_apply_extraction"
        ]
    );
    let tokens = tool_tokens(&tools);
    println!("tool definitions: {} tools, {tokens} tokens", tools.len());
    assert!(tokens <= MAX_TOOL_TOKENS, "tool definitions take {tokens} tokens");
    let hint = |name: &str| tools.iter().find(|t| t.name == name).unwrap().annotations.clone().unwrap();
    assert_eq!(hint("memory_forget").destructive_hint, Some(true));
    assert_ne!(hint("memory_forget").read_only_hint, Some(true));
    assert_eq!(hint("memory_forget_user").destructive_hint, Some(true));
    assert_eq!(hint("memory_recall").read_only_hint, Some(true));
    assert_eq!(hint("memory_remember").destructive_hint, Some(false));
    // The recall tool lists the filters a model needs; every other field of
    // the request is accepted (below).
    let recall = tools.iter().find(|t| t.name == "memory_recall").unwrap();
    for f in ["namespace", "query", "top_k", "kinds", "current_session", "from", "to", "include_superseded", "explain"]
    {
        assert!(recall.input_schema["properties"].get(f).is_some(), "recall lacks {f}");
    }
    // Every tool says what it is for with one example call, and has an
    // output schema its results are checked against (in `ok`).
    for t in &tools {
        let d = t.description.as_deref().unwrap_or_default();
        let example = d.split_once("Example: ").map(|(_, e)| e).unwrap_or_else(|| panic!("{}: {d}", t.name));
        let example: Value = serde_json::from_str(example).unwrap_or_else(|e| panic!("{}: {e}: {d}", t.name));
        if t.input_schema["properties"].get("namespaces").is_some() {
            // A tool over a set of namespaces names them all, never one.
            assert!(example["namespaces"].is_array() && example.get("namespace").is_none(), "{}: {d}", t.name);
        } else {
            assert_eq!(example["namespace"], "u1", "{}: {d}", t.name);
        }
        let schema = t.output_schema.as_deref().unwrap_or_else(|| panic!("{} has no output schema", t.name));
        assert_eq!(schema.get("type"), Some(&json!("object")), "{}", t.name);
    }

    let obs = ok(
        &c,
        "memory_observe",
        json!({"namespace": "u", "session": "s1", "text": "User: I moved to Hangzhou last month"}),
    )
    .await;
    let obs_id = obs["observation_id"].as_u64().unwrap();
    let r = ok(
        &c,
        "memory_remember",
        json!({"namespace": "u", "content": "Prefers oolong tea", "kind": "preference", "key": "user.drink"}),
    )
    .await;
    assert_eq!(r["action"], "created");
    let first = r["id"].as_u64().unwrap();
    let r =
        ok(&c, "memory_remember", json!({"namespace": "u", "content": "Prefers green tea", "key": "user.drink"})).await;
    assert_eq!(r["action"], "superseded");
    let second = r["id"].as_u64().unwrap();
    let hits =
        ok(&c, "memory_recall", json!({"namespace": "u", "query": "what tea does the user like", "top_k": 3})).await;
    assert_eq!(hits["hits"][0]["content"], "Prefers green tea");
    assert!(hits["hits"][0].get("memory").is_none(), "compact by default: {hits}");
    let hits = ok(
        &c,
        "memory_recall",
        json!({"namespace": "u", "query": "tea", "include_superseded": true, "kinds": ["preference"], "explain": true}),
    )
    .await;
    // The keyed update inherited the kind, so both versions are preferences.
    assert_eq!(hits["hits"].as_array().unwrap().len(), 2, "{hits}");
    assert!(hits["hits"].as_array().unwrap().iter().all(|h| h["memory"]["kind"] == "preference"), "{hits}");
    let hits = ok(
        &c,
        "memory_recall",
        json!({"namespace": "u", "query": "tea", "include_superseded": true, "kinds": ["fact"]}),
    )
    .await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 0, "{hits}");
    let hits = ok(&c, "memory_recall", json!({"namespace": "u", "query": "tea", "kinds": ["preference"]})).await;
    assert_eq!(hits["hits"].as_array().unwrap().len(), 1, "{hits}");
    let ctx = ok(&c, "memory_context", json!({"namespace": "u", "query": "tea", "budget_tokens": 200})).await;
    assert!(ctx["context"].as_str().unwrap().contains("Prefers green tea"), "{ctx}");
    // The part shares are accepted though not listed.
    let ctx =
        ok(&c, "memory_context", json!({"namespace": "u", "query": "tea", "profile_share": 0, "recent_share": 0}))
            .await;
    assert_eq!((ctx["profile"].as_u64(), ctx["recent"].as_u64()), (Some(0), Some(0)), "{ctx}");
    let m = ok(&c, "memory_get", json!({"namespace": "u", "id": second})).await;
    assert_eq!(m["prev"], first);
    let h = ok(&c, "memory_history", json!({"namespace": "u", "id": second})).await;
    assert_eq!(h["versions"].as_array().unwrap().len(), 2);
    let l = ok(&c, "memory_list", json!({"namespace": "u", "include_superseded": true, "limit": 1})).await;
    assert_eq!(l["memories"].as_array().unwrap().len(), 1);
    let l =
        ok(&c, "memory_list", json!({"namespace": "u", "include_superseded": true, "cursor": l["next_cursor"]})).await;
    assert_eq!(l["memories"][0]["id"], second);
    let p = ok(&c, "memory_extraction_prompt", json!({"namespace": "u", "session": "s1"})).await;
    assert!(p["prompt"].as_str().unwrap().contains("Hangzhou"));
    let doc = json!({"new_memories": [{"content": "Lives in Hangzhou", "kind": "fact", "source_ids": [obs_id]}]});
    let rep = ok(&c, "memory_apply_extraction", json!({"namespace": "u", "extraction": doc})).await;
    assert_eq!(rep["items"][0]["status"], "applied", "{rep}");
    let dry = ok(&c, "memory_forget", json!({"namespace": "u", "id": second, "dry_run": true})).await;
    assert_eq!((dry["memories"].as_u64(), dry["dry_run"].as_bool()), (Some(2), Some(true)));

    // Bad input: an error result with the surface's code and field, nothing written.
    let before = ok(&c, "memory_list", json!({"namespace": "u", "include_superseded": true})).await;
    for (tool, a, code, field) in [
        ("memory_remember", json!({"namespace": "u"}), "invalid_input", "content"),
        ("memory_remember", json!({"namespace": "u", "content": 7}), "invalid_input", "content"),
        (
            "memory_remember",
            json!({"namespace": "u", "content": "x", "importance": "very"}),
            "invalid_input",
            "importance",
        ),
        ("memory_remember", json!({"namespace": "u", "content": "x".repeat(40_000)}), "invalid_input", "content"),
        ("memory_remember", json!({"namespace": "not a namespace", "content": "x"}), "invalid_input", "namespace"),
        ("memory_remember", json!({"namespace": "u", "content": "x", "colour": "red"}), "invalid_input", "colour"),
        ("memory_recall", json!({"namespace": "u", "query": "tea", "top_k": "five"}), "invalid_input", "top_k"),
        (
            "memory_context",
            json!({"namespace": "u", "query": "tea", "profile_share": -1}),
            "invalid_input",
            "profile_share",
        ),
        ("memory_forget", json!({"namespace": "u"}), "invalid_input", "target"),
        ("memory_get", json!({"namespace": "u", "id": 999}), "not_found", ""),
    ] {
        let e = fails(&c, tool, a.clone()).await;
        assert_eq!(e["code"], code, "{tool} {a}: {e}");
        if !field.is_empty() {
            assert_eq!(e["field"], field, "{tool} {a}: {e}");
            // The message names the field and does not repeat the code.
            let m = e["message"].as_str().unwrap();
            assert!(m.starts_with(field) && !m.contains("invalid input"), "{tool} {a}: {e}");
        }
    }
    let unknown = c.call_tool(CallToolRequestParams::new("teleport").with_arguments(args(json!({})))).await;
    assert!(unknown.unwrap_err().to_string().contains("unknown tool"));
    let after = ok(&c, "memory_list", json!({"namespace": "u", "include_superseded": true})).await;
    assert_eq!(before["memories"], after["memories"]);

    // Closing stdin shuts the server down cleanly; every write is on disk.
    c.cancel().await.unwrap();
    let (okay, out, err) = mnemon(&data, &["--json", "list", "--ns", "u", "--all"]);
    assert!(okay, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["memories"].as_array().unwrap().len(), 3, "{out}");
    assert!(mnemon(&data, &["check"]).0);
}

/// The tool list stays within its token budget whatever the server serves,
/// and the instructions speak of a namespace argument only where calls
/// take one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_list_fits_its_budget_and_the_instructions_fit_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    for (extra, takes_namespace) in [
        (&[][..], true),
        (&["--namespace", "alice"][..], false),
        (&["--ns", "alice"][..], false),
        (&["--allow-ns", "team:*,alice"][..], true),
        (&["--tool-prefix", ""][..], true),
    ] {
        let c = stdio_client(&data, extra).await;
        let tools = c.list_all_tools().await.unwrap();
        let tokens = tool_tokens(&tools);
        println!("{extra:?}: tool definitions {tokens} tokens");
        assert!(tokens <= MAX_TOOL_TOKENS, "{extra:?}: tool definitions take {tokens} tokens");
        let instructions = c.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
        assert_eq!(instructions.contains("namespace"), takes_namespace, "{extra:?}: {instructions}");
        for t in tools.iter().filter(|t| t.input_schema["properties"].get("namespaces").is_none()) {
            let named = t.input_schema["properties"].get("namespace").is_some();
            assert_eq!(named, takes_namespace, "{extra:?}: {}", t.name);
            let d = t.description.as_deref().unwrap_or_default();
            assert_eq!(d.contains("\"namespace\""), takes_namespace, "{extra:?}: {d}");
        }
        if extra.contains(&"--allow-ns") {
            assert!(instructions.contains("team:*, alice"), "{instructions}");
        }
        c.cancel().await.unwrap();
    }
}

/// Tool names carry a prefix (`memory_` unless `--tool-prefix` or
/// `MNEMON_TOOL_PREFIX` says otherwise) in the list, in calls, and where a
/// description or the instructions name another tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_names_carry_the_chosen_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    for (extra, env, prefix) in [
        (&[][..], &[][..], "memory_"),
        (&["--tool-prefix", ""][..], &[][..], ""),
        (&[][..], &[("MNEMON_TOOL_PREFIX", "mnemon.")][..], "mnemon."),
        (&["--tool-prefix", "m-"][..], &[("MNEMON_TOOL_PREFIX", "ignored_")][..], "m-"),
    ] {
        let c = stdio_client_with_env(&data, extra, env).await;
        let tools = c.list_all_tools().await.unwrap();
        assert!(
            tools.iter().all(|t| t.name.starts_with(prefix)),
            "{prefix}: {:?}",
            tools.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        let ex = tools.iter().find(|t| t.name == format!("{prefix}extraction_prompt")).unwrap();
        assert!(ex.description.as_deref().unwrap().contains(&format!("{prefix}apply_extraction")), "{ex:?}");
        let instructions = c.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
        assert!(instructions.contains(&format!("call {prefix}context (or {prefix}recall)")), "{instructions}");
        let r = ok(
            &c,
            &format!("{prefix}remember"),
            json!({"namespace": "u", "content": format!("Named with {prefix:?}")}),
        )
        .await;
        assert!(r["id"].is_u64(), "{r}");
        if !prefix.is_empty() {
            let bare = c
                .call_tool(
                    CallToolRequestParams::new("remember")
                        .with_arguments(args(json!({"namespace": "u", "content": "x"}))),
                )
                .await;
            assert!(
                bare.unwrap_err().to_string().contains(&format!("{prefix}remember")),
                "the error lists the real names"
            );
        }
        c.cancel().await.unwrap();
    }
    // A prefix no tool name may hold is refused before the store is opened.
    let other = dir.path().join("other");
    let (okay, _, err) = mnemon(&other, &["--json", "mcp", "--tool-prefix", "my tools"]);
    assert!(!okay && err.contains("\"field\":\"tool_prefix\""), "{err}");
    assert!(!other.exists());
}

/// A recall result is compact unless the call asks to explain it: five
/// hits of everyday memories take under 400 tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_results_are_compact_unless_explained() {
    let dir = tempfile::tempdir().unwrap();
    let c = stdio_client(&dir.path().join("store"), &["--namespace", "u"]).await;
    for m in [
        "Prefers aisle seats on long flights",
        "Lives in Lisbon since 2023",
        "Works as a nurse at the city hospital",
        "Allergic to peanuts and tree nuts",
        "Has a dog named Biscuit who hates flights",
    ] {
        ok(&c, "memory_remember", json!({"content": m})).await;
    }
    let q = "flights, home town, work, allergies, pets";
    let compact = ok(&c, "memory_recall", json!({"query": q, "top_k": 5})).await;
    assert_eq!(compact["hits"].as_array().unwrap().len(), 5, "{compact}");
    let tokens = mnemon_api::json_tokens(&compact);
    println!("five compact recall hits: {tokens} tokens");
    assert!(tokens <= 400, "{tokens} tokens: {compact}");
    for h in compact["hits"].as_array().unwrap() {
        assert!(h["id"].is_u64() && h["content"].is_string() && h["score"].is_number() && h["why"].is_string(), "{h}");
        assert!(h.get("memory").is_none() && h.get("explain").is_none(), "{h}");
    }
    let full = ok(&c, "memory_recall", json!({"query": q, "top_k": 5, "explain": true})).await;
    let full_tokens = mnemon_api::json_tokens(&full);
    println!("five explained recall hits: {full_tokens} tokens");
    assert!(full["hits"].as_array().unwrap().iter().all(|h| h["memory"]["id"] == h["id"] && h["explain"].is_object()));
    // Settings the tool does not list are accepted.
    let lexical = ok(
        &c,
        "memory_recall",
        json!({"query": "Lisbon", "mode": "lexical", "candidates": 5, "reference_time": "2026-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(lexical["hits"][0]["content"], "Lives in Lisbon since 2023", "{lexical}");
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_for_one_namespace_hides_the_argument_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let c = stdio_client(&data, &["--namespace", "alice"]).await;
    let tools = c.list_all_tools().await.unwrap();
    for t in &tools {
        assert!(t.input_schema["properties"].get("namespace").is_none(), "{} still takes a namespace", t.name);
    }
    let r = ok(&c, "memory_remember", json!({"content": "Alice drinks oolong"})).await;
    assert_eq!(r["action"], "created");
    let e = fails(&c, "memory_remember", json!({"namespace": "bob", "content": "Bob drinks coffee"})).await;
    assert_eq!(e["code"], "namespace_not_allowed");
    let l = ok(&c, "memory_list", json!({})).await;
    assert_eq!(l["memories"][0]["namespace"], "alice");
    c.cancel().await.unwrap();

    let c = stdio_client(&data, &["--allow-ns", "team:*,alice"]).await;
    ok(&c, "memory_remember", json!({"namespace": "team:red", "content": "Red team ships on Friday"})).await;
    let e = fails(&c, "memory_list", json!({"namespace": "bob"})).await;
    assert_eq!(e["code"], "namespace_not_allowed");
    let e = fails(&c, "memory_list", json!({})).await;
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
        let addr = serve::announced(&mut lines, "mnemon: serving MCP on http://").trim_end_matches("/mcp").to_string();
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
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_remember","arguments":{"namespace":"u","content":"sneaky"}}}"#;
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
    assert_eq!(tools.len(), 11);
    println!("tool definitions over HTTP: {} tokens", tool_tokens(&tools));
    for i in 0..20 {
        ok(
            &c,
            "memory_remember",
            json!({"namespace": "u", "content": format!("Acknowledged fact number {i} about owls")}),
        )
        .await;
    }
    let hits = ok(&c, "memory_recall", json!({"namespace": "u", "query": "owls", "top_k": 50})).await;
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

/// Sends `request` (a whole HTTP/1.1 request) on a new connection and
/// returns the status and the full answer (read until the server closes).
fn raw_http(addr: &str, request: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, answer)
}

/// A POST to /mcp with `headers` (each ending in CRLF) and `body`.
fn post_with(addr: &str, headers: &str, body: &str) -> (u16, String) {
    raw_http(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// The value of header `name` in a raw HTTP answer.
fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    answer
        .split("\r\n\r\n")
        .next()?
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

#[test]
fn http_bearer_scheme_origin_and_session_end() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let server = Server::start(&data, &["--token", "s3cret", "--allow-origin", "https://app.example.com"]);
    let a = &server.addr;
    // The scheme is case-insensitive; the token is not.
    for auth in ["Bearer s3cret", "bearer s3cret", "BEARER   s3cret"] {
        let (status, answer) = post_with(a, &format!("Authorization: {auth}\r\n"), INITIALIZE);
        assert_eq!(status, 200, "{auth}: {answer}");
    }
    assert_eq!(post_with(a, "Authorization: bearer S3CRET\r\n", INITIALIZE).0, 401);
    // Origin: loopback pages and listed origins pass; others are refused
    // before anything runs (DNS rebinding).
    for (origin, expected) in [
        ("http://localhost:5173", 200),
        ("http://127.0.0.1:8080", 200),
        ("https://app.example.com", 200),
        ("http://evil.example", 403),
        ("https://app.example.com:8443", 403),
        ("null", 403),
        ("http://127.0.0.1.evil.example", 403),
    ] {
        let (status, answer) =
            post_with(a, &format!("Authorization: Bearer s3cret\r\nOrigin: {origin}\r\n"), INITIALIZE);
        assert_eq!(status, expected, "{origin}: {answer}");
    }
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_remember","arguments":{"namespace":"u","content":"from another site"}}}"#;
    assert_eq!(post_with(a, "Authorization: Bearer s3cret\r\nOrigin: http://evil.example\r\n", call).0, 403);
    // DELETE: an unknown session is 404; a known one ends (204), then is unknown.
    let delete = |id: &str| {
        raw_http(
            a,
            &format!("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\nMcp-Session-Id: {id}\r\nConnection: close\r\n\r\n"),
        )
    };
    assert_eq!(delete("never-opened").0, 404);
    let (_, answer) = post_with(a, "Authorization: Bearer s3cret\r\n", INITIALIZE);
    let session = header(&answer, "mcp-session-id").expect("no session id").to_string();
    let (status, answer) = delete(&session);
    assert_eq!(status, 204, "{answer}");
    assert_eq!(delete(&session).0, 404);
    assert!(server.terminate().success());
    let (_, out, _) = mnemon(&data, &["--json", "stats"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["last_seq"], 0, "{out}");
}

/// Waits (at most `limit`) for the server to close `s`; true if it did.
fn closed_within(s: &mut std::net::TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn http_closes_slow_and_idle_connections() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("store"), &["--header-timeout-secs", "1", "--body-timeout-secs", "1"]);
    let connect = || std::net::TcpStream::connect(&server.addr).unwrap();
    // Silent, half a request line, headers without their end, a body that never comes.
    let mut idle = connect();
    let mut slow = connect();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0").unwrap();
    let mut trickle = connect();
    trickle.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    let mut no_body = connect();
    no_body
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
        )
        .unwrap();
    for (name, s) in
        [("idle", &mut idle), ("slow header", &mut slow), ("trickle", &mut trickle), ("no body", &mut no_body)]
    {
        // Generous: the server allows one second.
        assert!(closed_within(s, Duration::from_secs(30)), "{name} connection still open");
    }
    // A kept-alive connection that goes quiet after a request is closed too.
    let mut kept = connect();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    write!(kept, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    assert!(closed_within(&mut kept, Duration::from_secs(30)), "kept-alive connection still open");
    assert!(server.terminate().success());
}

#[test]
fn http_caps_connections_with_a_clear_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("store"), &["--max-connections", "2"]);
    let held: Vec<_> = (0..2).map(|_| std::net::TcpStream::connect(&server.addr).unwrap()).collect();
    // The held connections are taken in order, before this one.
    let (status, answer) = post_with(&server.addr, "", INITIALIZE);
    assert_eq!(status, 503, "{answer}");
    assert_eq!(header(&answer, "retry-after"), Some("1"), "{answer}");
    assert!(answer.contains("-32000"), "{answer}");
    drop(held);
    // Once they close, their slots are free again.
    let mut status = 0;
    for _ in 0..100 {
        status = post_with(&server.addr, "", INITIALIZE).0;
        if status == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status, 200);
    assert!(server.terminate().success());
}

/// CPU time (user + system) of process `pid` in clock ticks (Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
#[cfg(target_os = "linux")]
fn http_out_of_file_descriptors_backs_off_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    // 64 open files at most, so that 80 idle clients exhaust them (the cap,
    // 256 by default, is not what stops them).
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 64 && exec "$0" --data "$1" --embedder hashing serve --listen 127.0.0.1:0 --header-timeout-secs 3"#)
        .arg(BIN)
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = serve::announced(&mut lines, "mnemon: serving MCP on http://").trim_end_matches("/mcp").to_string();
    let errors = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let idle: Vec<_> = (0..80).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(500));
    let (t0, c0) = (Instant::now(), cpu_ticks(child.id()));
    std::thread::sleep(Duration::from_secs(2));
    let (wall, cpu) = (t0.elapsed(), cpu_ticks(child.id()) - c0);
    // A busy accept loop burns a core; backing off, the server idles. Ticks are 1/100 s.
    let share = cpu as f64 / 100.0 / wall.as_secs_f64();
    assert!(share < 0.25, "server used {:.0}% CPU with no traffic", share * 100.0);
    // The idle clients (still held here) time out and a new client is served.
    let mut status = 0;
    for _ in 0..100 {
        status = post_with(&addr, "", INITIALIZE).0;
        if status == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(status, 200);
    drop(idle);
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());
    let errors = errors.join().unwrap();
    assert!(errors.iter().any(|l| l.contains("cannot accept connections")), "{errors:?}");
}

/// `mnemon mcp` driven line by line: raw bytes in, JSON lines out.
struct RawStdio {
    child: Child,
    input: std::process::ChildStdin,
    output: std::sync::mpsc::Receiver<Value>,
}

impl RawStdio {
    fn start(data: &Path) -> RawStdio {
        let mut child = Command::new(BIN)
            .arg("--data")
            .arg(data)
            .args(["--embedder", "hashing", "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, output) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let v = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut s = RawStdio { child, input, output };
        s.send(INITIALIZE.as_bytes());
        assert_eq!(s.next()["id"], 1);
        s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    /// Writes `line` and a newline.
    fn send(&mut self, line: &[u8]) {
        self.input.write_all(&[line, b"\n"].concat()).unwrap();
        self.input.flush().unwrap();
    }

    /// The next message from the server (at most 30 s away).
    fn next(&self) -> Value {
        self.output.recv_timeout(Duration::from_secs(30)).expect("no answer from the server")
    }

    /// The result of tool call `id`, read until its answer (others kept out).
    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        self.send(req.to_string().as_bytes());
        loop {
            let m = self.next();
            if m["id"] == id {
                return m;
            }
        }
    }

    /// Closes stdin; returns every message still to come and standard error.
    fn finish(mut self) -> (Vec<Value>, String) {
        drop(self.input);
        let mut rest = Vec::new();
        while let Ok(m) = self.output.recv_timeout(Duration::from_secs(60)) {
            rest.push(m);
        }
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(self.child.wait().unwrap().success(), "{err}");
        (rest, err)
    }
}

#[test]
fn stdio_answers_every_malformed_line_with_the_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = RawStdio::start(&dir.path().join("store"));
    // (line, code, id of the answer)
    let cases: Vec<(&[u8], i64, Value)> = vec![
        (b"not json", -32700, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,", -32700, Value::Null),
        (b"\"\\ud83c\"", -32700, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"tools/call\",\"params\":{\"name\":\"remember\",\"arguments\":{\"namespace\":\"u\",\"content\":\"\\ud83c\"}}}", -32700, Value::Null),
        (b"\xff\xfe\x00{}", -32700, Value::Null),
        (b"[]", -32600, Value::Null),
        (b"[{\"jsonrpc\":\"2.0\",\"id\":31,\"method\":\"ping\"}]", -32600, Value::Null),
        (b"42", -32600, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}", -32600, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -32600, Value::Null),
        (b"{\"jsonrpc\":\"1.0\",\"id\":32,\"method\":\"ping\"}", -32600, json!(32)),
        (b"{\"id\":33,\"method\":\"ping\"}", -32600, json!(33)),
        (b"{\"jsonrpc\":\"2.0\",\"id\":34}", -32600, json!(34)),
        (b"{\"jsonrpc\":\"2.0\",\"id\":35,\"method\":[\"ping\"]}", -32600, json!(35)),
        (b"{\"jsonrpc\":\"2.0\",\"id\":36,\"method\":\"tools/call\",\"params\":\"oops\"}", -32602, json!(36)),
        (b"{\"jsonrpc\":\"2.0\",\"id\":\"x37\",\"method\":\"tools/call\",\"params\":[1,2]}", -32602, json!("x37")),
        (b"{\"jsonrpc\":\"2.0\",\"id\":38,\"method\":\"tools/call\",\"params\":{\"name\":7}}", -32602, json!(38)),
        (b"{\"jsonrpc\":\"2.0\",\"id\":39,\"method\":\"no/such/method\",\"params\":{}}", -32601, json!(39)),
    ];
    for (line, code, id) in &cases {
        s.send(line);
        let m = s.next();
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        assert_eq!(m["error"]["code"], *code, "{}: {m}", String::from_utf8_lossy(line));
        assert_eq!(m["id"], *id, "{}: {m}", String::from_utf8_lossy(line));
    }
    // A malformed notification gets no answer; the server lives on.
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"oops"}"#);
    s.send(br#"{"jsonrpc":"2.0","id":40,"method":"ping"}"#);
    let m = s.next();
    assert_eq!((m["id"].clone(), m.get("error")), (json!(40), None), "{m}");
    let (rest, err) = s.finish();
    assert!(rest.is_empty(), "{rest:?}");
    // Every refusal is noted on standard error (the SDK answers -32601 itself).
    let noted = err.lines().filter(|l| l.starts_with("mnemon: stdin:")).count();
    assert_eq!(noted, cases.len(), "{err}");
    let (okay, out, _) = mnemon(&dir.path().join("store"), &["--json", "stats"]);
    assert!(okay);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["last_seq"], 0, "{out}");
}

#[test]
fn a_write_cancelled_before_it_is_planned_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = mnemon::Engine::builder(dir.path().join("store")).open().unwrap();
    let ns = mnemon::Namespace::new("u").unwrap();
    let token = mnemon::CancelToken::new();
    let handle = engine.with_cancel(token.clone());
    handle.remember(&ns, mnemon::NewMemory::new("kept before the cancellation")).unwrap();
    token.cancel();
    let e = handle.remember(&ns, mnemon::NewMemory::new("withdrawn")).unwrap_err();
    assert!(matches!(e, mnemon::Error::Cancelled), "{e}");
    assert_eq!(mnemon_api::ApiError::from(e).code, mnemon_api::ErrorCode::Cancelled);
    // The engine itself and other handles are not affected.
    engine.remember(&ns, mnemon::NewMemory::new("written after")).unwrap();
    let contents: Vec<String> = engine.list(&ns, &Default::default()).into_iter().map(|m| m.content).collect();
    assert_eq!(contents, ["kept before the cancellation", "written after"]);
    engine.close().unwrap();
}

#[test]
fn a_cancelled_call_gets_no_answer_and_commits_only_if_it_was_planned() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let mut withdrawn = 0;
    let rounds = 5;
    let mut s = RawStdio::start(&data);
    for round in 0..rounds {
        let ns = format!("c{round}");
        for i in 0..3 {
            let r = s.call(
                100 + round * 10 + i,
                "memory_remember",
                json!({"namespace": ns, "content": format!("fact {i} of {ns}")}),
            );
            assert_eq!(r["result"]["isError"], false, "{r}");
        }
        // The call and its cancellation in one write, then a ping.
        let id = 200 + round;
        let forget = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "memory_forget", "arguments": {"namespace": ns, "all": true}}});
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "changed my mind"}});
        s.send(format!("{forget}\n{cancel}").as_bytes());
        let ping = 300 + round;
        s.send(json!({"jsonrpc": "2.0", "id": ping, "method": "ping"}).to_string().as_bytes());
        loop {
            let m = s.next();
            assert_ne!(m["id"], id, "a cancelled request was answered: {m}");
            if m["id"] == ping {
                break;
            }
        }
    }
    let (rest, err) = s.finish();
    assert!(rest.iter().all(|m| !(200..200 + rounds).contains(&m["id"].as_u64().unwrap_or(0))), "{rest:?}");
    for round in 0..rounds {
        let ns = format!("c{round}");
        let (okay, out, e) = mnemon(&data, &["--json", "list", "--ns", &ns]);
        assert!(okay, "{e}");
        let left = serde_json::from_str::<Value>(&out).unwrap()["memories"].as_array().unwrap().len();
        let id = 200 + round;
        // Withdrawn: all three remain, and the log says so; committed:
        // none remain, and the log says it stands.
        if left == 3 {
            withdrawn += 1;
            assert!(
                err.contains(&format!("request {id} (memory_forget) cancelled: withdrawn, nothing written")),
                "{err}"
            );
        } else {
            assert_eq!(left, 0, "{out}");
            assert!(
                err.contains(&format!("request {id} (memory_forget) was cancelled after its write was planned")),
                "{err}"
            );
        }
    }
    println!("cancelled forgets withdrawn: {withdrawn} of {rounds}");
}

/// One HTTP/1.1 POST to /mcp as a client of protocol 2025-06-18 (which
/// keeps a session): the status and the `Mcp-Session-Id` it answered with.
fn session_post(addr: &str, session: Option<&str>, body: &str) -> (u16, Option<String>) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let id = text
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| l[15..].trim().to_string()));
    (status, id)
}

/// `mnemon serve --max-sessions 2`: a third session closes the one idle
/// longest, whose next call is refused with 404 (its client initialises
/// again); the two newest keep working. A cap of 0 is refused at start.
#[test]
fn a_session_beyond_the_cap_closes_the_one_idle_longest() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("store"), &["--max-sessions", "2"]);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let open = || {
        let (status, id) = session_post(&server.addr, None, init);
        assert_eq!(status, 200);
        let id = id.expect("a session id");
        assert_eq!(session_post(&server.addr, Some(&id), initialized).0, 202);
        id
    };
    let a = open();
    let b = open();
    assert_eq!(session_post(&server.addr, Some(&a), list).0, 200);
    assert_eq!(session_post(&server.addr, Some(&b), list).0, 200);
    let c = open();
    assert_eq!(session_post(&server.addr, Some(&a), list).0, 404, "the session idle longest was closed");
    assert_eq!(session_post(&server.addr, Some(&b), list).0, 200);
    assert_eq!(session_post(&server.addr, Some(&c), list).0, 200);
    let (ok_, _, err) = mnemon(&dir.path().join("other"), &["serve", "--max-sessions", "0"]);
    assert!(!ok_ && err.contains("max_sessions"), "{err}");
    assert!(server.terminate().success());
}

/// The lines a server printed on standard error, for checks after it ran.
fn lines_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The installed e5 model, linked into `models` (a directory that held
/// none): what `mnemon model install e5-small` would have put there.
/// `false` (the test skips that part) when it is not installed.
fn install_e5_into(models: &Path) -> bool {
    if models::installed(mnemon::embed::EmbedderChoice::E5).is_none() {
        return false;
    }
    std::os::unix::fs::symlink(mnemon::embed::default_models_dir().join("e5-small"), models.join("e5-small")).unwrap();
    true
}

/// `mnemon mcp` started by a client before any model is installed: it
/// starts, warns on standard error, puts the refusal in the instructions
/// every client reads at `initialize`, answers every tool call with the
/// refusal (code `embedder`) and creates nothing; once a model is
/// installed, the next call creates the store on it, with no restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_without_a_model_says_so_and_refuses_calls_until_one_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let (models, data, log) = (dir.path().join("models"), dir.path().join("store"), dir.path().join("stderr.txt"));
    std::fs::create_dir(&models).unwrap();
    let cmd = tokio::process::Command::new(BIN).configure(|c| {
        c.env_remove("MNEMON_EMBEDDER").env("MNEMON_MODELS", &models);
        c.arg("--data").arg(&data).args(["mcp", "--ns", "user:42"]);
    });
    let (transport, _) = TokioChildProcess::builder(cmd).stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
    let c = ().serve(transport).await.unwrap();
    let instructions = c.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
    for part in [
        "Long-term memory.",
        "MEMORY IS NOT AVAILABLE: No embedding model is installed",
        "would recall by exact words only",
        "`mnemon model install e5-small` (multilingual-e5-small, 72 MB)",
        "Every tool call fails with error code `embedder`",
    ] {
        assert!(instructions.contains(part), "{part:?} missing from: {instructions}");
    }
    assert_eq!(c.list_all_tools().await.unwrap().len(), 11);
    let e = fails(&c, "memory_remember", json!({"content": "Prefers aisle seats", "key": "user.seat"})).await;
    assert_eq!(e["code"], "embedder", "{e}");
    assert!(e["message"].as_str().unwrap().contains("mnemon model install e5-small"), "{e}");
    let e = fails(&c, "memory_recall", json!({"query": "seat"})).await;
    assert_eq!(e["code"], "embedder", "{e}");
    assert!(!data.exists(), "a refused call created {}", data.display());
    let err = lines_of(&log);
    assert!(err.contains("mnemon: warning: no embedding model is installed"), "{err}");
    assert!(err.contains("every tool call fails with error code embedder"), "{err}");

    if install_e5_into(&models) {
        ok(&c, "memory_remember", json!({"content": "Prefers aisle seats", "key": "user.seat"})).await;
        let hits = ok(&c, "memory_recall", json!({"query": "where do they like to sit on a plane"})).await;
        assert_eq!(hits["hits"][0]["content"], "Prefers aisle seats", "{hits}");
    }
    c.cancel().await.unwrap();
    if models.join("e5-small").exists() {
        // Under `auto` (naming hashing would move the store to it).
        let out = Command::new(BIN)
            .env_remove("MNEMON_EMBEDDER")
            .env("MNEMON_MODELS", &models)
            .arg("--data")
            .arg(&data)
            .args(["--json", "stats"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert!(v["model_id"].as_str().unwrap().starts_with("multilingual-e5-small"), "{v}");
    }
}

/// `mnemon serve` likewise: it listens, warns on standard error and in the
/// instructions, and refuses calls with code `embedder`; a store on the
/// hashing embedder served while a neural model is installed gets a note
/// in the instructions naming the command that moves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_without_a_model_says_so_and_a_hashing_store_gets_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let (models, data) = (dir.path().join("models"), dir.path().join("store"));
    std::fs::create_dir(&models).unwrap();
    let start = |data: &Path| {
        let mut child = Command::new(BIN)
            .env_remove("MNEMON_EMBEDDER")
            .env("MNEMON_MODELS", &models)
            .arg("--data")
            .arg(data)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut before = String::new();
        let addr = loop {
            let line = lines.next().expect("server exited before listening").unwrap();
            if let Some(rest) = line.strip_prefix("mnemon: serving MCP on http://") {
                break rest.trim_end_matches("/mcp").to_string();
            }
            before.push_str(&line);
            before.push('\n');
        };
        std::thread::spawn(move || for _ in lines {});
        (Server { child, addr }, before)
    };
    let (server, err) = start(&data);
    assert!(err.contains("mnemon: warning: no embedding model is installed"), "{err}");
    let c = http_client(&server.url(), None).await.unwrap();
    let instructions = c.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
    assert!(instructions.contains("MEMORY IS NOT AVAILABLE") && instructions.contains("e5-small"), "{instructions}");
    let e = fails(&c, "memory_remember", json!({"namespace": "u", "content": "Prefers aisle seats"})).await;
    assert_eq!(e["code"], "embedder", "{e}");
    drop(c);
    assert!(server.terminate().success());
    assert!(!data.exists());

    // A hashing store, served under `auto` once a model is installed.
    if !install_e5_into(&models) {
        return;
    }
    let (made, _, err) = mnemon(&data, &["remember", "--ns", "u", "Prefers aisle seats"]);
    assert!(made, "{err}");
    let (server, err) = start(&data);
    let move_it = format!("`mnemon --data {} --embedder e5-small stats`", data.display());
    assert!(err.contains("note: the store at") && err.contains(&move_it), "{err}");
    let c = http_client(&server.url(), None).await.unwrap();
    let instructions = c.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
    assert!(instructions.contains("Note for the user: The store at"), "{instructions}");
    assert!(instructions.contains("recalls by exact words only") && instructions.contains(&move_it), "{instructions}");
    ok(&c, "memory_recall", json!({"namespace": "u", "query": "aisle"})).await;
    drop(c);
    assert!(server.terminate().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_store_is_served_with_its_key_and_forget_user_shreds_each_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let key = dir.path().join("store.key");
    mnemon::crypt::write_new_key_file(&key).unwrap();
    let key = key.to_str().unwrap();
    let c = stdio_client(&data, &["--key-file", key]).await;
    for (ns, content) in [
        ("alice", "Alice prefers a window seat on long flights"),
        ("alice", "Alice is allergic to peanuts"),
        ("alice:work", "Alice's team ships the billing service on Thursdays"),
        ("bob", "Bob lives in Porto"),
    ] {
        ok(&c, "memory_remember", json!({"namespace": ns, "content": content})).await;
    }
    let e = fails(&c, "memory_forget_user", json!({"namespaces": []})).await;
    assert_eq!((e["code"].as_str(), e["field"].as_str()), (Some("invalid_input"), Some("namespaces")), "{e}");
    let e = fails(&c, "memory_forget_user", json!({"namespaces": ["alice", "nobody"]})).await;
    assert_eq!(e["code"], "not_found", "{e}");
    let r =
        ok(&c, "memory_forget_user", json!({"namespaces": ["alice", "alice:work"], "reason": "account closed"})).await;
    let receipts: Vec<(String, u64, bool)> = r["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (n["namespace"].as_str().unwrap().to_string(), n["memories"].as_u64().unwrap(), n["key_shredded"] == true)
        })
        .collect();
    assert_eq!(receipts, [("alice".to_string(), 2, true), ("alice:work".to_string(), 1, true)], "{r}");
    let bob = ok(&c, "memory_list", json!({"namespace": "bob"})).await;
    assert_eq!(bob["memories"][0]["content"], "Bob lives in Porto");
    c.cancel().await.unwrap();

    // Once the server is gone, the store opens only with its key.
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = loop {
        let (ok, out, err) = mnemon(&data, &["--json", "list", "--namespace", "bob"]);
        if !ok || Instant::now() > deadline {
            break format!("{out}{err}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let v: Value = serde_json::from_str(refused.trim()).unwrap_or_default();
    assert_eq!(
        (v["error"]["code"].as_str(), v["error"]["field"].as_str()),
        (Some("key_required"), Some("key")),
        "{refused}"
    );
    let other = dir.path().join("other.key");
    mnemon::crypt::write_new_key_file(&other).unwrap();
    let (ok, _, err) = mnemon(&data, &["--key-file", other.to_str().unwrap(), "--json", "list", "--namespace", "bob"]);
    let v: Value = serde_json::from_str(err.trim()).unwrap_or_default();
    assert!(!ok);
    assert_eq!(v["error"]["code"], "wrong_key", "{err}");
    let (ok, out, err) = mnemon(&data, &["--key-file", key, "--json", "list", "--namespace", "bob"]);
    assert!(ok, "{err}");
    assert!(out.contains("Bob lives in Porto"), "{out}");
    let (ok, out, err) = mnemon(&data, &["--key-file", key, "--json", "verify-erasure", "--shredded", "alice:work"]);
    assert!(ok, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap_or_default()["verified"], true, "{out}");
}
