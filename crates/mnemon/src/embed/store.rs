//! Which embedder a door (the CLI, the MCP server, the Python package)
//! opens a store with when the user leaves the choice to mnemon.
//!
//! Under [`EmbedderChoice::Auto`] an existing store keeps the model it was
//! built with ([`load_embedder_for`]). A new store is built on the preferred
//! installed neural model; when none is installed it is refused
//! ([`Error::NoModelInstalled`]) rather than built on the lexical-only
//! hashing embedder, since a store keeps the embedder it was created with
//! and would never recall by meaning. The hashing embedder stays available
//! by name ([`EmbedderChoice::Hashing`]).

use std::path::Path;
use std::sync::Arc;

use super::hashing::HASHING_ID_PREFIX;
#[cfg(test)]
use super::MINILM;
use super::{is_installed, load_embedder_for, Embedder, EmbedderChoice, ModelSpec};
use crate::error::{Error, Result};

/// The embedder a door opens a store with, and what its user should be
/// told about it ([`embedder_for_store`]).
#[derive(Clone)]
pub struct StoreEmbedder {
    /// The embedder to give [`crate::EngineBuilder::embedder`].
    pub embedder: Arc<dyn Embedder>,
    /// One line for the user, when there is something to say: the store is
    /// on the hashing embedder while a neural model is installed (see
    /// [`lexical_store_notice`]). `None` otherwise.
    pub notice: Option<String>,
}

impl std::fmt::Debug for StoreEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreEmbedder")
            .field("model_id", &self.embedder.model_id())
            .field("notice", &self.notice)
            .finish()
    }
}

/// The neural model [`EmbedderChoice::Auto`] builds a new store on: the
/// first of multilingual-e5-small, bge-small-en-v1.5 and all-MiniLM-L6-v2
/// that is installed in `models_dir` (`None` in a build without the
/// `neural` feature, or when none is installed).
pub fn preferred_installed(models_dir: &Path) -> Option<&'static ModelSpec> {
    PREFERENCE.iter().copied().find(|s| is_installed(s, models_dir))
}

/// The neural models this build can load, in the order
/// [`EmbedderChoice::Auto`] prefers them (see [`super::load_embedder`]).
#[cfg(feature = "neural")]
const PREFERENCE: &[&ModelSpec] = &[&super::e5::E5_SMALL, &super::bge::BGE_SMALL_EN, &super::MINILM];
#[cfg(not(feature = "neural"))]
const PREFERENCE: &[&ModelSpec] = &[];

/// The model a user is told to install first: the one
/// [`EmbedderChoice::Auto`] prefers.
fn recommended() -> Option<&'static ModelSpec> {
    PREFERENCE.first().copied()
}

/// The full name of a built-in model, as its users know it.
fn full_name(spec: &ModelSpec) -> &'static str {
    match spec.name {
        "e5-small" => "multilingual-e5-small",
        "minilm" => "all-MiniLM-L6-v2",
        "bge-small-en" => "bge-small-en-v1.5",
        _ => "the model",
    }
}

/// The message of [`Error::NoModelInstalled`]: what would have happened,
/// the command that installs the model (with its size), and the explicit
/// alternative.
pub(crate) fn no_model_message(store: &Path, models_dir: &Path) -> String {
    let alternative = "pass `--embedder hashing` (Python: `embedder=\"hashing\"`) to build a lexical-only store";
    match recommended() {
        Some(spec) => format!(
            "no embedding model is installed in {}, so the store at {} would recall by exact words only: run \
             `mnemon model install {}` ({}, {:.0} MB), or {alternative}; nothing was created",
            models_dir.display(),
            store.display(),
            spec.name,
            full_name(spec),
            spec.size_bytes as f64 / 1e6,
        ),
        None => format!(
            "this build of mnemon has no neural embedder (it was built without the `neural` feature), so the \
             store at {} would recall by exact words only: {alternative}, or use a build with neural models; \
             nothing was created",
            store.display()
        ),
    }
}

/// The embedder to open the store at `store` with, for a door that takes
/// the user's `choice` (models under `models_dir`, usually
/// [`super::default_models_dir`]):
///
/// - an existing store: as [`load_embedder_for`] with the model the store
///   recorded ([`crate::Engine::recorded_model`]), so under
///   [`EmbedderChoice::Auto`] it keeps its model; when that model is the
///   hashing embedder and a neural model is installed, `notice` says so and
///   how to move the store (see [`lexical_store_notice`]);
/// - a new store (nothing recorded: no store at `store`, or a directory
///   that holds none yet): under `Auto`, the preferred installed neural
///   model ([`preferred_installed`]), and when none is installed, an error;
///   any other choice loads that embedder.
///
/// Reads the store's recorded model (taking and releasing its lock) but
/// creates nothing: a refused store leaves no directory behind.
///
/// # Errors
/// [`Error::NoModelInstalled`] for a new store under `Auto` with no neural
/// model installed (or a build without the `neural` feature): building it
/// on the hashing embedder would make a store that recalls by exact words
/// only, for good. [`Error::Locked`] when another process or engine holds
/// the store; otherwise as [`load_embedder_for`] and
/// [`crate::Engine::recorded_model`].
pub fn embedder_for_store(choice: EmbedderChoice, models_dir: &Path, store: &Path) -> Result<StoreEmbedder> {
    let recorded = crate::Engine::recorded_model(store)?;
    check_new_store(choice, models_dir, store, recorded.as_deref())?;
    let embedder = load_embedder_for(choice, models_dir, recorded.as_deref())?;
    let notice = lexical_store_notice(choice, models_dir, store, embedder.model_id());
    Ok(StoreEmbedder { embedder, notice })
}

/// The refusal of [`embedder_for_store`] alone, without loading a model:
/// `Ok` unless the store at `store` is new (`recorded`, the model it
/// recorded, is `None`), `choice` is [`EmbedderChoice::Auto`] and no
/// neural model is installed in `models_dir`. For a door that checks before
/// it prepares anything on disk for the store.
///
/// # Errors
/// [`Error::NoModelInstalled`] in that case.
pub fn check_new_store(choice: EmbedderChoice, models_dir: &Path, store: &Path, recorded: Option<&str>) -> Result<()> {
    if recorded.is_none() && choice == EmbedderChoice::Auto && preferred_installed(models_dir).is_none() {
        return Err(Error::NoModelInstalled {
            store: store.to_path_buf(),
            models_dir: models_dir.to_path_buf(),
            message: no_model_message(store, models_dir),
        });
    }
    Ok(())
}

/// A one-line notice (no trailing period, no `note:` prefix) for a store
/// whose vectors were made by the hashing embedder (`model_id`
/// `hashing-v1-N`) opened under [`EmbedderChoice::Auto`] while a neural
/// model is installed in `models_dir`: the store recalls by exact words
/// only, and naming the installed model once moves it there (the store
/// re-embeds every memory from its log, then keeps that model). `None` for
/// any other model, any explicit choice, or when no neural model is
/// installed.
pub fn lexical_store_notice(choice: EmbedderChoice, models_dir: &Path, store: &Path, model_id: &str) -> Option<String> {
    if choice != EmbedderChoice::Auto || !model_id.starts_with(HASHING_ID_PREFIX) {
        return None;
    }
    let spec = preferred_installed(models_dir)?;
    Some(format!(
        "the store at {} is on the hashing embedder ({model_id}) and recalls by exact words only, though {} is \
         installed; to move it to that model, run `mnemon --data {} --embedder {} stats` once (it re-embeds \
         every memory from the log, and the store keeps that model from then on)",
        store.display(),
        full_name(spec),
        store.display(),
        spec.name,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new store under `auto` with no model installed is refused, with
    /// nothing created; the hashing embedder by name still builds one.
    #[test]
    fn a_new_store_under_auto_without_a_model_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (models, store) = (tmp.path().join("models"), tmp.path().join("a").join("store"));
        let err = embedder_for_store(EmbedderChoice::Auto, &models, &store).err().unwrap();
        assert!(matches!(err, Error::NoModelInstalled { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&store.display().to_string()) && msg.contains("--embedder hashing"), "{msg}");
        if cfg!(feature = "neural") {
            assert!(msg.contains("`mnemon model install e5-small` (multilingual-e5-small, 72 MB)"), "{msg}");
            assert!(msg.contains(&models.display().to_string()), "{msg}");
        }
        assert!(!tmp.path().join("a").exists(), "refusing created {}", store.display());
        let chosen = embedder_for_store(EmbedderChoice::Hashing, &models, &store).unwrap();
        assert_eq!(chosen.embedder.model_id(), "hashing-v1-384");
        assert!(chosen.notice.is_none());
    }

    /// The notice is for a hashing store under `auto` with a neural model
    /// installed, and names the command that moves it.
    #[test]
    fn the_notice_needs_auto_a_hashing_store_and_an_installed_model() {
        let empty = tempfile::tempdir().unwrap();
        let store = Path::new("/srv/memory");
        assert_eq!(lexical_store_notice(EmbedderChoice::Auto, empty.path(), store, "hashing-v1-384"), None);
        // A fake installation is enough for `is_installed` (manifest and sizes).
        let models = tempfile::tempdir().unwrap();
        let spec = &MINILM;
        let dir = super::super::model_dir(spec, models.path());
        std::fs::create_dir_all(&dir).unwrap();
        let mut files = Vec::new();
        for (_, name, sha) in spec.files {
            std::fs::write(dir.join(name), b"x").unwrap();
            files.push(serde_json::json!({ "name": name, "size": 1, "sha256": sha }));
        }
        let manifest = serde_json::json!({
            "spec": spec.name, "pip_requirement": spec.pip_requirement,
            "wheel_sha256": spec.wheel_sha256, "files": files,
        });
        std::fs::write(dir.join(super::super::install::MANIFEST_NAME), manifest.to_string()).unwrap();
        if !cfg!(feature = "neural") {
            return;
        }
        assert_eq!(preferred_installed(models.path()).map(|s| s.name), Some("minilm"));
        let notice = lexical_store_notice(EmbedderChoice::Auto, models.path(), store, "hashing-v1-384").unwrap();
        assert!(notice.contains("exact words only") && notice.contains("all-MiniLM-L6-v2"), "{notice}");
        assert!(notice.contains("`mnemon --data /srv/memory --embedder minilm stats`"), "{notice}");
        for (choice, id) in [
            (EmbedderChoice::Hashing, "hashing-v1-384"),
            (EmbedderChoice::Auto, "all-MiniLM-L6-v2@0123abcd"),
            (EmbedderChoice::Auto, "multilingual-e5-small-q4@0123abcd"),
        ] {
            assert_eq!(lexical_store_notice(choice, models.path(), store, id), None, "{choice} {id}");
        }
    }
}
