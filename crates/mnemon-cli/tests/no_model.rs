//! Creating a store while no embedding model is installed: the `mnemon`
//! binary refuses a new store under `--embedder auto` (writing nothing, not
//! even a directory), builds one on the hashing embedder only when asked by
//! name, builds a new store on e5 once a model is installed, keeps existing
//! stores on their model, and says when a store recalls by exact words only
//! although a neural model is installed.

#[path = "../../mnemon/tests/common/models.rs"]
mod models;

use std::path::Path;
use std::process::{Command, Output};

use mnemon::embed::EmbedderChoice;

/// `mnemon ARGS` with models looked for in `models` (an empty directory
/// plays a machine where none is installed), the embedder left to its
/// default unless `ARGS` names one.
fn run(models: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .env_remove("MNEMON_EMBEDDER")
        .env("MNEMON_MODELS", models)
        .args(args)
        .output()
        .expect("run mnemon")
}

/// `mnemon ARGS` with the models installed where the tests find them.
fn run_installed(args: &[&str]) -> Output {
    let models = mnemon::embed::default_models_dir();
    run(&models, args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stats(models: &Path, data: &Path) -> serde_json::Value {
    let o = run(models, &["--data", data.to_str().unwrap(), "--json", "stats"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Every file and directory under `dir`, as paths relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A first write with no model installed is refused with the command to
/// run and the alternative, exit status 1, and leaves nothing on disk:
/// not the data directory, not its parents, not a build directory.
#[test]
fn a_new_store_without_a_model_is_refused_and_nothing_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir(&models).unwrap();
    let data = tmp.path().join("home").join("agent-memory");
    let d = data.to_str().unwrap();
    let o = run(&models, &["--data", d, "remember", "--ns", "u1", "Prefers oolong tea in the afternoon"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    for part in [
        "error: no embedding model is installed in",
        &format!("so the store at {d} would recall by exact words only"),
        "run `mnemon model install e5-small` (multilingual-e5-small, 72 MB)",
        "pass `--embedder hashing`",
        "nothing was created",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
    assert_eq!(tree(tmp.path()), vec!["models".to_string()], "{err}");

    // The same refusal as a JSON error object, code `embedder`.
    let o = run(&models, &["--data", d, "--json", "observe", "--ns", "u1", "--session", "s1", "I moved to Porto"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert_eq!(v["error"]["code"], "embedder", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("mnemon model install e5-small"), "{v}");

    // `import` writes in place: refused before the store is made.
    let file = tmp.path().join("notes.jsonl");
    std::fs::write(&file, "{\"content\": \"The spare key is under the blue flowerpot\"}\n").unwrap();
    let o = run(&models, &["--data", d, "import", "--ns", "u1", file.to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("mnemon model install e5-small"), "{}", stderr(&o));

    // An existing empty directory (opened in place) gains no store files.
    let empty = tmp.path().join("mounted");
    std::fs::create_dir(&empty).unwrap();
    let o = run(&models, &["--data", empty.to_str().unwrap(), "remember", "--ns", "u1", "Likes jazz"]);
    assert!(!o.status.success() && stderr(&o).contains("would recall by exact words only"), "{}", stderr(&o));
    assert!(tree(&empty).is_empty(), "{:?}", tree(&empty));
    assert_eq!(tree(tmp.path()), vec!["models", "mounted", "notes.jsonl"], "{err}");
}

/// The hashing embedder asked for by name (flag or variable) builds the
/// store; reopening it under `auto` with still no model keeps it working,
/// with nothing to say.
#[test]
fn the_hashing_embedder_by_name_builds_a_lexical_store() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir(&models).unwrap();
    let data = tmp.path().join("store");
    let d = data.to_str().unwrap();
    let o = run(&models, &["--data", d, "--embedder", "hashing", "remember", "--ns", "u1", "Prefers oolong tea"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let by_var = tmp.path().join("by-variable");
    let o = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .env("MNEMON_EMBEDDER", "hashing")
        .env("MNEMON_MODELS", &models)
        .args(["--data", by_var.to_str().unwrap(), "remember", "--ns", "u1", "Prefers green tea"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for store in [&data, &by_var] {
        let o = run(&models, &["--data", store.to_str().unwrap(), "recall", "--ns", "u1", "tea"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("tea"), "{}", String::from_utf8_lossy(&o.stdout));
        assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
        assert_eq!(stats(&models, store)["model_id"], "hashing-v1-384");
    }
}

/// The demo runs on its throwaway store with no model installed, and says
/// that it runs on the hashing embedder and what to install; kept with
/// `--keep`, its store is refused like any other.
#[test]
fn the_demo_runs_without_a_model_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir(&models).unwrap();
    let o = run(&models, &["demo"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("embedder: hashing-v1-384"), "{out}");
    assert!(out.contains("no embedding model is installed, so the demo runs on the hashing embedder"), "{out}");
    assert!(out.contains("`mnemon model install e5-small`"), "{out}");
    let kept = tmp.path().join("demo-store");
    let o = run(&models, &["demo", "--keep", kept.to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("mnemon model install e5-small"), "{}", stderr(&o));
    assert!(!kept.exists());
}

/// With a model installed, `auto` builds a new store on e5; a store built
/// on the hashing embedder stays on it, and each command says that it
/// recalls by exact words only and names the command that moves it,
/// which then re-embeds it on e5 for good.
#[test]
fn with_a_model_installed_auto_builds_on_e5_and_names_the_move_of_a_hashing_store() {
    if models::installed(EmbedderChoice::E5).is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let installed = mnemon::embed::default_models_dir();
    let fresh = tmp.path().join("fresh");
    let o = run_installed(&["--data", fresh.to_str().unwrap(), "remember", "--ns", "u1", "我女儿叫小雨"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
    let model = stats(&installed, &fresh)["model_id"].as_str().unwrap().to_string();
    assert!(model.starts_with("multilingual-e5-small"), "{model}");

    let data = tmp.path().join("lexical");
    let d = data.to_str().unwrap();
    let o = run_installed(&["--data", d, "--embedder", "hashing", "remember", "--ns", "u1", "Prefers oolong tea"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Named explicitly, hashing draws no notice.
    let o = run_installed(&["--data", d, "--embedder", "hashing", "stats"]);
    assert!(o.status.success() && !stderr(&o).contains("note:"), "{}", stderr(&o));
    let move_it = format!("`mnemon --data {d} --embedder e5-small stats`");
    let o = run_installed(&["--data", d, "recall", "--ns", "u1", "something warm to drink"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    // One notice of the move (recall's own note on abstaining may follow).
    assert_eq!(err.matches("note: the store at").count(), 1, "{err}");
    for part in ["is on the hashing embedder (hashing-v1-384)", "recalls by exact words only", &move_it] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
    assert_eq!(stats(&installed, &data)["model_id"], "hashing-v1-384", "auto moved the store by itself");

    // The command the notice names moves the store; `auto` keeps it there.
    let o = run_installed(&["--data", d, "--embedder", "e5-small", "stats"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("re-embedded 1 memory"), "{}", stderr(&o));
    let o = run_installed(&["--data", d, "--json", "stats"]);
    assert!(o.status.success() && !stderr(&o).contains("note:"), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["model_id"].as_str().unwrap().starts_with("multilingual-e5-small"), "{v}");
}

/// `stats` says what kind of embedder the store is on, not only its id.
#[test]
fn stats_names_the_embedder_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir(&models).unwrap();
    let data = tmp.path().join("store");
    let d = data.to_str().unwrap();
    let o = run(&models, &["--data", d, "--embedder", "hashing", "remember", "--ns", "u1", "Prefers oolong tea"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&models, &["--data", d, "stats"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = out.lines().find(|l| l.starts_with("embedder:")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("hashing-v1-384") && line.contains("lexical") && line.contains("exact words"), "{line}");
    assert!(out.lines().any(|l| l == "encryption: off"), "a plain store says so: {out}");
}
