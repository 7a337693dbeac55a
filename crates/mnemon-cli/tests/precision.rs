//! The embedding precision chosen by `MNEMON_EMBED_PRECISION` at the CLI.

#[path = "../../mnemon/tests/common/models.rs"]
mod models;

use mnemon::embed::EmbedderChoice;

/// `MNEMON_EMBED_PRECISION` chooses for the CLI (and every door); a value
/// that is not a precision is refused by name, nothing written.
#[test]
fn the_precision_variable_is_honoured_and_checked() {
    if models::installed(EmbedderChoice::MiniLm).is_none() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let run = |precision: &str, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mnemon"))
            .env("MNEMON_EMBED_PRECISION", precision)
            .arg("--data")
            .arg(data.path())
            .args(["--embedder", "minilm"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run("fp16", &["remember", "--ns", "u1", "I keep bees on the roof"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("MNEMON_EMBED_PRECISION") && err.contains("fp16"), "{err}");
    for p in ["f32", "INT8", " auto ", ""] {
        let out = run(p, &["remember", "--ns", "u1", "I keep bees on the roof"]);
        assert!(out.status.success(), "{p:?}: {}", String::from_utf8_lossy(&out.stderr));
        let out = run(p, &["--json", "recall", "--ns", "u1", "bees"]);
        assert!(String::from_utf8_lossy(&out.stdout).contains("bees on the roof"), "{p:?}");
    }
    // One memory: the refused write left nothing, later writes were duplicates.
    let out = run("f32", &["--json", "list", "--ns", "u1"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["memories"].as_array().map(Vec::len), Some(1), "{v}");
}
