//! Installed neural embedders, found as the product finds them.

use std::io::Write;
use std::sync::Arc;

use mnemon::embed::{default_models_dir, load_embedder, Embedder, EmbedderChoice};

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
