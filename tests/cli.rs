//! The `mnemon` binary end to end on a temporary store, hashing embedder:
//! `forget --matching` takes the embedder's relevance floor when none is
//! given, `recall --similarity-norm` switches the cosine scaling, `recall`
//! and `context` expose every recall option, `--json` prints the command
//! surface's shapes and errors, and `list` pages.

use std::path::Path;
use std::process::Command;

fn mnemon(data: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .arg("--data")
        .arg(data)
        .args(["--embedder", "hashing"])
        .args(args)
        .output()
        .expect("run mnemon");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn forget_matching_defaults_to_the_embedders_floor_and_dry_run_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    for text in [
        "I am allergic to peanuts and shellfish.",
        "My daughter Xiaoyu turns five in March.",
        "我喜欢喝偏酸的浅烘咖啡。",
    ] {
        let (ok, _, err) = mnemon(&data, &["remember", "--ns", "u1", text]);
        assert!(ok, "{err}");
    }
    // The hashing embedder's floor (0.5) keeps the unrelated memories out.
    let (ok, out, err) = mnemon(
        &data,
        &["--json", "forget", "--ns", "u1", "--matching", "I am allergic to peanuts and shellfish", "--dry-run"],
    );
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["memories"], 1, "{out}");
    // A floor given on the command line wins: -1 matches everything.
    let (ok, out, err) =
        mnemon(&data, &["--json", "forget", "--ns", "u1", "--matching", "peanuts", "--min-similarity=-1", "--dry-run"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["memories"], 3, "{out}");
    // Dry runs wrote nothing.
    let (ok, out, _) = mnemon(&data, &["--json", "list", "--ns", "u1"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["memories"].as_array().map(Vec::len), Some(3), "{out}");
}

#[test]
fn recall_similarity_norm_is_parsed_and_bad_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    for text in ["Prefers window seats on flights.", "Lives in Hangzhou near West Lake."] {
        assert!(mnemon(&data, &["remember", "--ns", "u1", text]).0);
    }
    for norm in ["auto", "raw", "minmax"] {
        let (ok, out, err) =
            mnemon(&data, &["--json", "recall", "--ns", "u1", "--similarity-norm", norm, "window seat on flights"]);
        assert!(ok, "{norm}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hits"][0]["memory"]["content"], "Prefers window seats on flights.", "{norm}: {out}");
    }
    let (ok, _, err) = mnemon(&data, &["recall", "--ns", "u1", "--similarity-norm", "zscore", "seat"]);
    assert!(!ok);
    assert!(err.contains("similarity_norm"), "{err}");
}

fn json(data: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (ok, out, err) = mnemon(data, &all);
    assert!(ok, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// Contents of the hits of a `recall --json`, best first.
fn contents(v: &serde_json::Value) -> Vec<String> {
    v["hits"].as_array().unwrap().iter().map(|h| h["memory"]["content"].as_str().unwrap().to_string()).collect()
}

#[test]
fn recall_and_context_expose_every_filter() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    let base = ["remember", "--ns", "u"];
    let write = |extra: &[&str], text: &str| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        a.push(text);
        let (ok, out, err) = mnemon(&data, &a);
        assert!(ok, "{err}");
        out.trim().to_string()
    };
    write(
        &["--kind", "preference", "--session", "s1", "--time", "2024-03-01T09:00:00Z"],
        "Coffee: likes a light roast",
    );
    write(&["--kind", "fact", "--session", "s2", "--time", "2025-06-01T09:00:00Z"], "Coffee machine is in the kitchen");
    write(&["--kind", "fact", "--tier", "short", "--session", "s3"], "Coffee order today is a flat white");
    write(&["--kind", "fact", "--tier", "permanent"], "Coffee beans come from Yunnan");
    write(&["--key", "user.roast"], "Coffee: dark roast only");
    let after_five = json(&data, &["stats"])["last_seq"].as_u64().unwrap();
    write(&["--key", "user.roast"], "Coffee: medium roast these days");

    let q = "coffee roast kitchen flat white";
    // --session
    assert_eq!(
        contents(&json(&data, &["recall", "--ns", "u", "--session", "s2", q])),
        ["Coffee machine is in the kitchen"]
    );
    // --kind (repeatable)
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--kind", "preference", q]);
    assert_eq!(contents(&v), ["Coffee: likes a light roast"]);
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--kind", "preference", "--kind", "fact", q]);
    assert_eq!(contents(&v).len(), 5, "{v}");
    // --tier (repeatable)
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--tier", "short", q]);
    assert_eq!(contents(&v), ["Coffee order today is a flat white"]);
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--tier", "short", "--tier", "permanent", q]);
    assert_eq!(contents(&v).len(), 2, "{v}");
    // --current-session leaves out short-term memories of other sessions.
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--current-session", "s9", q]);
    assert!(!contents(&v).contains(&"Coffee order today is a flat white".to_string()), "{v}");
    // --from / --to over the time the memory happened.
    let v = json(
        &data,
        &["recall", "--ns", "u", "--k", "10", "--from", "2024-01-01T00:00:00Z", "--to", "2024-12-31T00:00:00Z", q],
    );
    assert_eq!(contents(&v), ["Coffee: likes a light roast"]);
    // --include-superseded
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", q]);
    assert!(!contents(&v).contains(&"Coffee: dark roast only".to_string()), "{v}");
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--include-superseded", q]);
    assert!(contents(&v).contains(&"Coffee: dark roast only".to_string()), "{v}");
    // --as-of-seq: before the medium roast was written, the dark roast was current.
    let seq = after_five.to_string();
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--as-of-seq", &seq, q]);
    assert!(contents(&v).contains(&"Coffee: dark roast only".to_string()), "{v}");
    assert!(!contents(&v).contains(&"Coffee: medium roast these days".to_string()), "{v}");
    // --mode, --min-similarity, --candidates, --requester, --no-record-access
    let v = json(&data, &["recall", "--ns", "u", "--mode", "lexical", "kitchen"]);
    assert_eq!(contents(&v), ["Coffee machine is in the kitchen"]);
    let v = json(&data, &["recall", "--ns", "u", "--k", "10", "--min-similarity", "0.99", q]);
    assert_eq!(contents(&v).len(), 0, "{v}");
    let v = json(&data, &["recall", "--ns", "u", "--candidates", "1", "--mode", "lexical", "kitchen"]);
    assert_eq!(contents(&v).len(), 1, "{v}");
    let before = json(&data, &["stats"])["events"]["accessed"].as_u64().unwrap();
    json(&data, &["recall", "--ns", "u", "--no-record-access", q]);
    assert_eq!(json(&data, &["stats"])["events"]["accessed"].as_u64().unwrap(), before);
    json(&data, &["recall", "--ns", "u", "--requester", "planner", q]);
    let (ok, log, _) = mnemon(&data, &["log", "--ns", "u"]);
    assert!(ok && log.contains("\"requester\":\"planner\""), "{log}");

    // context takes the same options.
    let v = json(&data, &["context", "--ns", "u", "--session", "s2", q]);
    assert_eq!(v["memories"], 1, "{v}");
    assert!(v["context"].as_str().unwrap().contains("Coffee machine is in the kitchen"), "{v}");
    let v = json(&data, &["context", "--ns", "u", "--tier", "permanent", q]);
    assert_eq!(v["memories"], 1, "{v}");
    assert!(v["context"].as_str().unwrap().contains("Yunnan"), "{v}");
    let v = json(&data, &["context", "--ns", "u", "--as-of-seq", &seq, q]);
    let block = v["context"].as_str().unwrap();
    assert!(block.contains("dark roast") && !block.contains("medium roast"), "{v}");

    // Bad values are refused with the field named.
    for (args, field) in [
        (vec!["recall", "--ns", "u", "--from", "yesterday", q], "from"),
        (vec!["recall", "--ns", "u", "--from", "2025-01-01T00:00:00Z", "--to", "2024-01-01T00:00:00Z", q], "from"),
        (vec!["recall", "--ns", "u", "--tier", "eternal", q], "tier"),
        (vec!["recall", "--ns", "u", "--candidates", "0", q], "candidates"),
        (vec!["context", "--ns", "u", "--budget", "0", q], "budget_tokens"),
        (vec!["recall", "--ns", "u u", q], "namespace"),
    ] {
        let mut a = vec!["--json"];
        a.extend(args.iter().copied());
        let (ok, _, err) = mnemon(&data, &a);
        assert!(!ok, "{args:?} accepted");
        let e: serde_json::Value = serde_json::from_str(err.trim()).unwrap_or_else(|_| panic!("{err}"));
        assert_eq!(e["error"]["code"], "invalid_input", "{err}");
        assert_eq!(e["error"]["field"], field, "{err}");
    }
    // --as-of-seq and --as-of-time exclude each other.
    assert!(!mnemon(&data, &["recall", "--ns", "u", "--as-of-seq", "1", "--as-of-time", "2025-01-01T00:00:00Z", q]).0);
}

#[test]
fn list_pages_with_a_cursor_and_log_exports_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    for i in 0..5 {
        let text = format!(
            "Memory number {} about {}",
            ["one", "two", "three", "four", "five"][i],
            ["cats", "dogs", "owls", "bees", "fish"][i]
        );
        assert!(mnemon(&data, &["remember", "--ns", "u", &text]).0);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["list", "--ns", "u", "--limit", "2"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let v = json(&data, &args);
        for m in v["memories"].as_array().unwrap() {
            seen.push(m["id"].as_u64().unwrap());
        }
        // A write between pages does not move the pages' position.
        assert!(mnemon(&data, &["remember", "--ns", "u", &format!("Written while paging {}", seen.len())]).0);
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, [1, 2, 3, 4, 5]);
    let (ok, _, err) = mnemon(&data, &["list", "--ns", "u", "--cursor", "nonsense"]);
    assert!(!ok && err.contains("cursor"), "{err}");
    // `log` prints every event, one JSON object a line.
    let (ok, out, _) = mnemon(&data, &["log", "--ns", "u"]);
    assert!(ok);
    let seqs: Vec<u64> =
        out.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=8).collect::<Vec<u64>>());
}

#[test]
fn schema_lists_every_operation() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&dir.path().join("store"), &["schema"]);
    let ops: Vec<&str> = v.as_array().unwrap().iter().map(|s| s["op"].as_str().unwrap()).collect();
    for op in [
        "remember",
        "observe",
        "recall",
        "context",
        "get",
        "history",
        "list",
        "log",
        "forget",
        "compact",
        "stats",
        "check",
        "extraction_prompt",
        "apply_extraction",
        "end_session",
        "maintain",
    ] {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
    let recall = v.as_array().unwrap().iter().find(|s| s["op"] == "recall").unwrap();
    for field in [
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
        assert!(recall["request"]["properties"].get(field).is_some(), "recall lacks {field}: {}", recall["request"]);
    }
}
