//! The rerank stage: a cross-encoder reads the query with each of the top
//! candidates of hybrid recall and orders them again.

use super::spec::{ProviderKind, ProviderSpec};
use super::transport::Transport;
use crate::error::{Error, Result};

/// A model that scores how well each document answers a query.
pub trait Reranker: Send + Sync {
    /// A stable name of the model (for explanations and logs).
    fn model_id(&self) -> &str;

    /// One relevance score per document, in the documents' order; higher
    /// is more relevant. Scores of one call are comparable with each
    /// other only.
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`] / [`Error::Embedder`] as a provider
    /// fails; recall then keeps its own order.
    fn rerank(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>>;
}

/// A reranker reached over HTTP: `POST {base}/rerank` with
/// `{"model", "query", "documents": [...]}`, answered with
/// `{"results": [{"index", "relevance_score"}, ...]}` (the Cohere and Jina
/// shape, which Hugging Face TEI and Infinity serve). Spec:
/// `rerank:MODEL@BASE_URL[?OPTIONS]` ([`ProviderSpec`]); `batch` bounds the
/// documents per request.
pub struct HttpReranker {
    spec: &'static ProviderSpec,
    id: String,
    transport: Transport,
}

impl std::fmt::Debug for HttpReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpReranker").field("model_id", &self.id).finish()
    }
}

impl HttpReranker {
    /// A reranker for `spec`, which must be of kind `rerank`. Sends
    /// nothing until the first recall.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `reranker`) for an embedding spec.
    pub fn new(spec: &'static ProviderSpec) -> Result<HttpReranker> {
        if spec.kind != ProviderKind::Rerank {
            return Err(Error::invalid(
                "reranker",
                format!("{} is not a rerank provider (rerank:MODEL@URL)", spec.identity()),
            ));
        }
        Ok(HttpReranker { spec, id: spec.identity(), transport: Transport::new(spec) })
    }
}

impl Reranker for HttpReranker {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn rerank(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        let mut scores = vec![f32::NAN; documents.len()];
        for (c, chunk) in documents.chunks(self.spec.batch).enumerate() {
            let body = serde_json::json!({
                "model": self.spec.model,
                "query": query,
                "documents": chunk,
                "return_documents": false,
            });
            let answer = self.transport.post("/rerank", &body)?;
            let shape = |what: &str| Error::Embedder(format!("reranker {} answered without {what}", self.id).into());
            let results = answer.get("results").and_then(|r| r.as_array()).ok_or_else(|| shape("a `results` list"))?;
            for r in results {
                let i =
                    r.get("index").and_then(serde_json::Value::as_u64).ok_or_else(|| shape("an `index` per result"))?
                        as usize;
                let s = r
                    .get("relevance_score")
                    .or_else(|| r.get("score"))
                    .and_then(serde_json::Value::as_f64)
                    .ok_or_else(|| shape("a `relevance_score` per result"))?;
                let slot = scores
                    .get_mut(c * self.spec.batch + i)
                    .filter(|_| i < chunk.len())
                    .ok_or_else(|| shape("valid indexes"))?;
                *slot = s as f32;
            }
        }
        if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
            return Err(Error::Embedder(format!("reranker {} gave no finite score for document {i}", self.id).into()));
        }
        Ok(scores)
    }
}
