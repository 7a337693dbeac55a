//! Installed neural embedders, found as the product finds them.

use std::io::Write;
use std::sync::Arc;

use mnemon::embed::{default_models_dir, is_installed, load_embedder, model_dir, Embedder, EmbedderChoice, ModelSpec};

/// The installed embedder for `choice` from `default_models_dir()` (so
/// `$MNEMON_MODELS` or the default), or `None` with a SKIPPED notice; a
/// missing model fails the test when `MNEMON_REQUIRE_MODELS=1`.
pub fn installed(choice: EmbedderChoice) -> Option<Arc<dyn Embedder>> {
    if !cfg!(feature = "neural") {
        let _ = writeln!(std::io::stderr(), "SKIPPED {choice}: built without the `neural` feature");
        return None;
    }
    let dir = default_models_dir();
    match load_embedder(choice, &dir) {
        Ok(e) => Some(e),
        Err(err) => {
            let msg =
                format!("{choice} is not usable from {}: {err}; run `mnemon model install {choice}`", dir.display());
            if std::env::var("MNEMON_REQUIRE_MODELS").as_deref() == Ok("1") {
                panic!("{msg}; MNEMON_REQUIRE_MODELS=1 makes this a failure");
            }
            let _ = writeln!(std::io::stderr(), "SKIPPED: {msg}");
            None
        }
    }
}

/// The directory of the installed model `spec` under `default_models_dir()`
/// (`full_name` names it in messages), or `None` with a SKIPPED notice on
/// standard error (written directly, so the harness does not capture it);
/// a missing model fails the test when `MNEMON_REQUIRE_MODELS=1`.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn installed_dir(spec: &ModelSpec, full_name: &str) -> Option<std::path::PathBuf> {
    let dir = default_models_dir();
    if is_installed(spec, &dir) {
        return Some(model_dir(spec, &dir));
    }
    let msg = format!(
        "{full_name} is not installed in {}; run `mnemon model install {}` (MNEMON_MODELS selects the models directory)",
        dir.display(),
        spec.name
    );
    if std::env::var("MNEMON_REQUIRE_MODELS").as_deref() == Ok("1") {
        panic!("{msg}; MNEMON_REQUIRE_MODELS=1 makes this a failure");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED (model missing): {msg}");
    None
}
