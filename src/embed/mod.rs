//! Embedders: turn text into L2-normalised `f32` vectors.
//!
//! The engine never embeds on its writer thread; callers (or the engine's
//! open-time re-embedding pass) call [`Embedder::embed`] in batches.

use crate::error::Result;

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
