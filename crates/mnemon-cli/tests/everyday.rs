//! `mnemon eval everyday` with the default model, on its built-in dev split
//! and on the further near-miss set: the context block holds what everyday
//! questions need, shows no replaced value, and stays empty where nothing
//! stored answers. The figures it checks are floors a regression would
//! cross, a little under what the sets measure (docs/BENCHMARKS.md,
//! "Everyday questions" and "Near misses of new kinds").

#[path = "../../mnemon/tests/common/models.rs"]
mod models;

use mnemon::embed::EmbedderChoice;

/// Runs `mnemon eval everyday` with e5-small on the dev split of `set` (the
/// built-in set when `None`); returns its `--out` JSON and its stdout, or
/// `None` when e5-small is not installed.
fn eval_dev(set: Option<&std::path::Path>) -> Option<(serde_json::Value, String)> {
    models::installed(EmbedderChoice::E5)?;
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("everyday.json");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mnemon"));
    cmd.arg("--data").arg(dir.path().join("unused")).args(["--embedder", "e5-small", "eval", "everyday"]);
    if let Some(set) = set {
        cmd.arg(set);
    }
    let out = cmd.args(["--split", "dev", "--quiet", "--out"]).arg(&out_file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("| dev/all |"), "{stdout}");
    Some((serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap(), stdout))
}

#[test]
fn the_everyday_dev_split_holds_its_figures() {
    let Some((v, stdout)) = eval_dev(None) else { return };
    let f = &v["figures"]["dev/all"];
    let ratio = |a: &str, b: &str| f[a].as_f64().unwrap() / f[b].as_f64().unwrap().max(1.0);
    assert!(f["scenarios"].as_u64().unwrap() >= 60, "{f}");
    assert!(ratio("found", "needed") >= 0.94, "needed present: {f}\n{stdout}");
    assert_eq!(f["superseded_shown"].as_u64(), Some(0), "{f}\n{stdout}");
    assert!(ratio("order_kept", "order_checked") >= 0.75, "newer first: {f}\n{stdout}");
    assert!(ratio("empty_when_nothing", "nothing_relevant") >= 0.75, "empty when nothing relevant: {f}\n{stdout}");
    // Every outcome carries its block and what recall ranked.
    let outcomes = v["outcomes"].as_array().unwrap();
    assert!(outcomes.iter().all(|o| o["block"].as_str().is_some_and(|b| b.starts_with("<memories>"))));
}

/// The further dev set of near misses (`crates/mnemon-eval/data/
/// everyday-nearmiss.json`, 48 scenarios): its paraphrased answers stay in
/// the block. The floor is a little under what it measures (25 of 30
/// needed memories); its never-stored questions are reported, not held to
/// a floor.
#[test]
fn the_near_miss_set_keeps_its_paraphrased_answers() {
    let set = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mnemon-eval/data/everyday-nearmiss.json");
    let Some((v, stdout)) = eval_dev(Some(&set)) else { return };
    let f = &v["figures"]["dev/all"];
    assert_eq!(f["scenarios"].as_u64(), Some(48), "{f}");
    assert_eq!(f["nothing_relevant"].as_u64(), Some(24), "{f}");
    let found = f["found"].as_f64().unwrap() / f["needed"].as_f64().unwrap();
    assert!(found >= 0.8, "needed present: {f}\n{stdout}");
}
