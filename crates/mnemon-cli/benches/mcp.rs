//! Per-call latency of `remember` and `recall` through the MCP server
//! (`mnemon mcp` on stdio, one long-lived process, driven by the official
//! Rust SDK's client) against the baseline of one CLI process per call
//! (`mnemon remember …`: start, open the store, call, close), both with the
//! hashing embedder so that embedding is excluded; plus the size of the
//! tool definitions in tokens. Then the same calls over streamable HTTP
//! (`mnemon serve` on the same store, one client connection) against
//! stdio's figures of this run: a response that waits for the client's
//! delayed ACK (Nagle's algorithm on the server's socket) shows here as
//! about 40 ms per call. Ratios come from the same run.
//!
//! `cargo bench --bench mcp` (`MNEMON_BENCH_CALLS` sets the MCP calls per
//! operation, default 500; the CLI baseline makes a tenth as many).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use std::io::BufRead;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

#[path = "../tests/common/serve.rs"]
mod serve;

const BIN: &str = env!("CARGO_BIN_EXE_mnemon");
const WORDS: &[&str] =
    &["heron", "kite", "lantern", "orchard", "violin", "glacier", "saffron", "harbour", "meadow", "tram"];

fn text(i: usize) -> String {
    format!(
        "Fact {i}: the {} near the {} was {} in {}",
        WORDS[i % 10],
        WORDS[(i / 10) % 10],
        WORDS[(i / 100) % 10],
        1900 + i % 120
    )
}

fn query(i: usize) -> String {
    format!("where was the {} near the {}", WORDS[(i * 7) % 10], WORDS[(i * 3) % 10])
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

struct Figures {
    p50: Duration,
    p99: Duration,
}

fn figures(mut v: Vec<Duration>) -> Figures {
    v.sort_unstable();
    Figures { p50: percentile(&v, 0.5), p99: percentile(&v, 0.99) }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn cli(data: &Path, args: &[&str]) -> Duration {
    let t = Instant::now();
    let out = Command::new(BIN).arg("--data").arg(data).args(["--embedder", "hashing"]).args(args).output().unwrap();
    let d = t.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    d
}

/// Sequential `remember` then `recall` calls (`calls` of each) after a
/// warm-up: their latencies.
async fn drive(client: &RunningService<RoleClient, ()>, calls: usize, from: usize) -> (Figures, Figures) {
    let call = |tool: &'static str, args: Value| {
        let Value::Object(args) = args else { panic!() };
        let peer = client.peer().clone();
        async move {
            let t = Instant::now();
            let r = peer.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.unwrap();
            let d = t.elapsed();
            assert_ne!(r.is_error, Some(true), "{:?}", r.content);
            d
        }
    };
    // Warm-up: the first calls pay for page faults and lazy setup.
    for i in 0..20 {
        call("memory_remember", json!({"namespace": "bench", "content": format!("warm-up {i}")})).await;
        call("memory_recall", json!({"namespace": "bench", "query": query(i)})).await;
    }
    let mut remember = Vec::with_capacity(calls);
    for i in from..from + calls {
        remember.push(call("memory_remember", json!({"namespace": "bench", "content": text(i)})).await);
    }
    let mut recall = Vec::with_capacity(calls);
    for i in 0..calls {
        recall.push(call("memory_recall", json!({"namespace": "bench", "query": query(i), "top_k": 5})).await);
    }
    (figures(remember), figures(recall))
}

/// `mnemon serve` on `data` at a free loopback port: the child and its URL.
fn serve(data: &Path) -> (std::process::Child, String) {
    let mut child = Command::new(BIN)
        .arg("--data")
        .arg(data)
        .args(["--embedder", "hashing", "serve", "--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = serve::announced(&mut lines, "mnemon: serving MCP on ");
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let calls: usize = std::env::var("MNEMON_BENCH_CALLS").ok().and_then(|s| s.parse().ok()).unwrap_or(500);
    let cli_calls = (calls / 10).max(10);
    let dir = tempfile::tempdir().unwrap();
    let mcp_data = dir.path().join("mcp");
    let cli_data = dir.path().join("cli");

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (remember, recall, tool_tokens, n_tools) = rt.block_on(async {
        let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
            c.arg("--data").arg(&mcp_data).args(["--embedder", "hashing", "mcp"]);
        }))
        .unwrap();
        let client = ().serve(transport).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        let tokens = mnemon::recall::estimate_tokens(&serde_json::to_string(&json!({ "tools": tools })).unwrap());
        let (remember, recall) = drive(&client, calls, 0).await;
        client.cancel().await.unwrap();
        (remember, recall, tokens, tools.len())
    });
    // The same store over HTTP (the stdio server has exited): the store
    // holds one more round of memories, which recall barely notices.
    let (mut server, url) = serve(&mcp_data);
    let (http_remember, http_recall) = rt.block_on(async {
        let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
        let out = drive(&client, calls, calls).await;
        client.cancel().await.unwrap();
        out
    });
    let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
    let _ = server.wait();

    let mut cli_remember = Vec::with_capacity(cli_calls);
    for i in 0..cli_calls {
        cli_remember.push(cli(&cli_data, &["remember", "--namespace", "bench", &text(i)]));
    }
    let mut cli_recall = Vec::with_capacity(cli_calls);
    for i in 0..cli_calls {
        cli_recall.push(cli(&cli_data, &["recall", "--namespace", "bench", "--top-k", "5", &query(i)]));
    }
    let (cli_remember, cli_recall) = (figures(cli_remember), figures(cli_recall));

    println!("mcp bench: hashing embedder, {calls} MCP calls and {cli_calls} CLI processes per operation");
    println!("| operation | MCP stdio p50 | MCP stdio p99 | CLI per call p50 | CLI per call p99 | p50 ratio |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (name, m, c) in [("remember", &remember, &cli_remember), ("recall", &recall, &cli_recall)] {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.1} ms | {:.1} ms | {:.0}× |",
            ms(m.p50),
            ms(m.p99),
            ms(c.p50),
            ms(c.p99),
            c.p50.as_secs_f64() / m.p50.as_secs_f64()
        );
    }
    println!();
    println!("| operation | MCP HTTP p50 | MCP HTTP p99 | MCP stdio p50 (same run) | HTTP / stdio p50 |");
    println!("| --- | --- | --- | --- | --- |");
    for (name, h, m) in [("remember", &http_remember, &remember), ("recall", &http_recall, &recall)] {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2}× |",
            ms(h.p50),
            ms(h.p99),
            ms(m.p50),
            h.p50.as_secs_f64() / m.p50.as_secs_f64()
        );
    }
    println!(
        "tool definitions: {n_tools} tools, {tool_tokens} tokens (mnemon::recall::estimate_tokens over the tools/list JSON)"
    );
}
