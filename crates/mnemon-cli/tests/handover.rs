//! Two MCP clients configured with one data directory: the second
//! `mnemon mcp` reaches the engine the first holds (through the store's
//! socket) instead of failing with "store is locked"; both write, every
//! write is there; a CLI command meanwhile goes through the socket too;
//! when the holder is killed (-9), the survivor takes the store over and
//! keeps serving, with every acknowledged write intact.

use std::path::Path;
use std::process::Command;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mnemon");

type Client = RunningService<RoleClient, ()>;

fn mnemon(data: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).arg("--data").arg(data).args(["--embedder", "hashing"]).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn start(data: &Path) -> (Client, u32) {
    start_with(data, &[]).await
}

/// A server started with `extra` global flags before `mcp`.
async fn start_with(data: &Path, extra: &[&str]) -> (Client, u32) {
    let t = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--data").arg(data).args(["--embedder", "hashing"]).args(extra).arg("mcp");
    }))
    .unwrap();
    let pid = t.id().unwrap();
    (().serve(t).await.unwrap(), pid)
}

/// A CLI call passed to the holder's socket runs with the holder's settings:
/// one that chose other phone regions or another embedder is refused and
/// writes nothing; one that chose none is told whose regions apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_call_never_drops_the_settings_it_chose() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let (a, _) = start_with(&data, &["--phone-regions", ""]).await;
    call(&a, "memory_remember", json!({"namespace": "u1", "content": "a holds the store"})).await.unwrap();
    for args in [
        vec!["--json", "--phone-regions", "CN", "remember", "--ns", "u1", "我的新手机号是13912345678"],
        vec!["--json", "--phone-regions=GB", "remember", "--ns", "u1", "Landlord mobile 07700 900456"],
    ] {
        let (ok, _, err) = mnemon(&data, &args);
        assert!(!ok, "{args:?}");
        let v: Value = serde_json::from_str(err.trim()).unwrap_or_else(|e| panic!("{e}: {err}"));
        assert_eq!(v["error"]["field"], "phone_regions", "{err}");
        assert!(v["error"]["message"].as_str().unwrap().contains("process"), "{err}");
    }
    let out = Command::new(BIN)
        .arg("--data")
        .arg(&data)
        .args(["--json", "--embedder", "e5-small", "recall", "--ns", "u1", "store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("\"field\":\"embedder\""), "{err}");
    // With the defaults, the holder's regions apply, and the caller is told.
    let (ok, _, err) = mnemon(&data, &["remember", "--ns", "u1", "Likes herons"]);
    assert!(ok && err.contains("whose phone regions apply to this call: none"), "{err}");
    let v = call(&a, "memory_list", json!({"namespace": "u1"})).await.unwrap();
    let texts: Vec<&str> = v["memories"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(texts, ["a holds the store", "Likes herons"], "refused calls wrote nothing");
    a.cancel().await.unwrap();
}

async fn call(c: &Client, tool: &str, a: Value) -> Result<Value, Value> {
    let Value::Object(args) = a else { panic!() };
    let r = c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)).await.unwrap();
    let text = r.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
    let v: Value = serde_json::from_str(&text).unwrap();
    if r.is_error == Some(true) {
        Err(v)
    } else {
        Ok(v)
    }
}

async fn remember_all(c: &Client, tag: &str, n: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    for i in 0..n {
        let v = call(
            c,
            "memory_remember",
            json!({"namespace": "shared", "content": format!("{tag} wrote fact {i} about herons"), "dedup": "off"}),
        )
        .await
        .unwrap_or_else(|e| panic!("{tag} {i}: {e}"));
        ids.push(v["id"].as_u64().unwrap());
    }
    ids
}

async fn count(c: &Client) -> usize {
    let mut n = 0;
    let mut cursor = Value::Null;
    loop {
        let v = call(c, "memory_list", json!({"namespace": "shared", "cursor": cursor, "limit": 1000})).await.unwrap();
        n += v["memories"].as_array().unwrap().len();
        match v.get("next_cursor") {
            Some(Value::String(s)) => cursor = Value::String(s.clone()),
            _ => return n,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_server_reaches_the_first_and_takes_over_when_it_dies() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let (a, a_pid) = start(&data).await;
    // The first call makes sure `a` holds the store before `b` starts.
    call(&a, "memory_remember", json!({"namespace": "shared", "content": "a holds the store"})).await.unwrap();
    let (b, _) = start(&data).await;

    let (ia, ib) = tokio::join!(remember_all(&a, "a", 60), remember_all(&b, "b", 60));
    assert_eq!(ia.len() + ib.len(), 120);
    // One store, one writer: ids are distinct across both clients.
    let mut all: Vec<u64> = ia.iter().chain(&ib).copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 120);
    assert_eq!(count(&a).await, 121);
    assert_eq!(count(&b).await, 121);

    // A CLI command while a server holds the store goes through its socket.
    let (ok, out, err) = mnemon(&data, &["--json", "remember", "--ns", "shared", "the CLI wrote this about herons"]);
    assert!(ok, "{err}");
    assert!(!err.contains("locked"), "{err}");
    let cli_id = serde_json::from_str::<Value>(&out).unwrap()["id"].as_u64().unwrap();
    assert_eq!(count(&b).await, 122);

    // Kill the holder; the survivor takes over at its next call.
    Command::new("kill").args(["-9", &a_pid.to_string()]).status().unwrap();
    drop(a);
    let ic = remember_all(&b, "b after the kill", 30).await;
    assert_eq!(ic.len(), 30);
    assert_eq!(count(&b).await, 152);
    // And serves the next one through the socket.
    let (ok, _, err) = mnemon(&data, &["remember", "--ns", "shared", "another CLI fact about herons"]);
    assert!(ok, "{err}");
    let v = call(&b, "memory_get", json!({"namespace": "shared", "id": cli_id})).await.unwrap();
    assert_eq!(v["content"], "the CLI wrote this about herons");
    b.cancel().await.unwrap();

    // Every acknowledged write is in the store, which checks out.
    let (ok, out, err) = mnemon(&data, &["--json", "stats"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["active_memories"], 153, "{out}");
    let (ok, out, err) = mnemon(&data, &["--json", "list", "--ns", "shared", "--limit", "1000"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let stored: std::collections::BTreeSet<u64> =
        v["memories"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()).collect();
    for id in ia.iter().chain(&ib).chain(&ic) {
        assert!(stored.contains(id), "acknowledged memory {id} is missing");
    }
    let (ok, out, err) = mnemon(&data, &["check"]);
    assert!(ok, "{out}{err}");
}

/// CLI processes writing at once on one store: each is the holder for the
/// length of its command or a proxy to the one that is. A holder that exits
/// after its own command first answers every call it took, so no write is
/// reported failed (or in doubt) and every one is there.
#[test]
fn concurrent_cli_writers_all_get_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let data = data.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let text = format!("writer {w} noted item {i} about herons");
                    let (ok, _, err) = mnemon(&data, &["remember", "--ns", "shared", "--dedup", "off", &text]);
                    assert!(ok, "writer {w}, write {i}: {err}");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let (ok, out, err) = mnemon(&data, &["--json", "stats"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["active_memories"], 75, "{out}");
    let (ok, out, err) = mnemon(&data, &["check"]);
    assert!(ok, "{out}{err}");
}

/// A store held by a program using the library serves no socket: a CLI
/// command is told so, naming the process, rather than waiting for a socket
/// that never comes; once the program closes the store the command works.
/// A server (`mnemon mcp`) is still reached through its socket.
#[test]
fn a_library_holder_is_reported_as_such() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("store");
    let engine = mnemon::Engine::builder(&data)
        .embedder(std::sync::Arc::new(mnemon::embed::HashingEmbedder::new(384).unwrap()))
        .open()
        .unwrap();
    let lock = std::fs::read_to_string(data.join("LOCK")).unwrap();
    assert!(lock.contains(&format!("pid {}", std::process::id())) && lock.contains("socket no"), "{lock}");
    let (ok, _, err) = mnemon(&data, &["--json", "remember", "--ns", "u1", "written while the library holds it"]);
    assert!(!ok);
    let v: Value = serde_json::from_str(err.trim()).unwrap_or_else(|_| panic!("{err}"));
    assert_eq!(v["error"]["code"], "locked", "{err}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains(&format!("process {}", std::process::id())) && msg.contains("serves no socket"), "{msg}");
    assert_eq!(engine.stats().events.extracted, 0, "nothing was written");
    engine.close().unwrap();
    // No note outlives its holder.
    assert_eq!(std::fs::read_to_string(data.join("LOCK")).unwrap(), "", "the note is blanked at close");
    let (ok, _, err) = mnemon(&data, &["remember", "--ns", "u1", "written once the library let go"]);
    assert!(ok, "{err}");
}

/// A server started on a data directory that does not exist yet while a CLI
/// command is creating the store there: the two take turns, so the
/// command's write lands in the one store the server then serves, and no
/// build directory is left beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_and_a_cli_command_creating_one_store_keep_every_write() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..6 {
        let data = dir.path().join(format!("store-{round}"));
        let text = format!("round {round}: the CLI wrote this about herons");
        let cli = Command::new(BIN)
            .arg("--data")
            .arg(&data)
            .args(["--embedder", "hashing", "--json", "remember", "--ns", "shared", &text])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (server, _) = start(&data).await;
        let out = tokio::task::spawn_blocking(move || cli.wait_with_output().unwrap()).await.unwrap();
        assert!(out.status.success(), "round {round}: {}", String::from_utf8_lossy(&out.stderr));
        let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["id"].as_u64().unwrap();
        let v = call(&server, "memory_get", json!({"namespace": "shared", "id": id})).await.unwrap();
        assert_eq!(v["content"], text.as_str(), "round {round}");
        server.cancel().await.unwrap();
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("mnemon-"))
            .collect();
        assert!(left.is_empty(), "round {round}: build directories left: {left:?}");
    }
}
