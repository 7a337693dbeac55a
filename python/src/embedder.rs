//! A Python callable as the engine's [`Embedder`].
//!
//! The engine calls [`Embedder::embed`] with batches of texts, without the
//! GIL (on the caller's thread inside [`crate::engine::Engine::call`], on
//! the background embedder's thread, or while opening re-embeds a store).
//! [`PyEmbedder`] takes the GIL only for the call itself, converts the answer
//! to `f32` and checks it: one vector per text, each of [`Embedder::dim`]
//! finite components, not all zero. Every refusal is an
//! [`mnemon::Error::Embedder`] naming the embedder's model id.

use mnemon::embed::{EmbedKind, Embedder};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Text embedded once to learn the dimension when the caller gives none.
const PROBE_TEXT: &str = "dimension probe";

/// The caller's functions, called with the GIL.
pub(crate) struct PyEmbedder {
    model_id: String,
    dim: usize,
    /// `(list[str]) -> list[list[float]]`, for memories (and for queries
    /// when `query` is None).
    documents: Py<PyAny>,
    /// `(str) -> list[float]`, for recall queries (LangChain's
    /// `embed_query`).
    query: Option<Py<PyAny>>,
}

impl PyEmbedder {
    /// Wraps `documents` (and `query`) under `model_id`; with `dims` None
    /// the dimension is learnt by embedding one short text.
    ///
    /// # Errors
    /// [`mnemon::Error::InvalidInput`] for a bad `model_id` (field
    /// `embedder_name`) or `dims` (field `dims`, 1..=65,536);
    /// [`mnemon::Error::Embedder`] when the probe fails.
    pub(crate) fn new(
        py: Python<'_>,
        model_id: String,
        dims: Option<usize>,
        documents: Py<PyAny>,
        query: Option<Py<PyAny>>,
    ) -> mnemon::Result<PyEmbedder> {
        mnemon_api::door::check_model_id(&model_id)?;
        let mut e = PyEmbedder { model_id, dim: dims.unwrap_or(0), documents, query };
        match dims {
            Some(d) if (1..=65_536).contains(&d) => {}
            Some(d) => return Err(mnemon::Error::invalid("dims", mnemon::range_reason(1, 65_536, d))),
            None => {
                let v = e.call_documents(py, &[PROBE_TEXT])?;
                e.dim = v.first().map(Vec::len).unwrap_or(0);
                if e.dim == 0 {
                    return Err(e.fail("returned an empty vector for the dimension probe"));
                }
            }
        }
        Ok(e)
    }

    fn fail(&self, what: impl std::fmt::Display) -> mnemon::Error {
        mnemon::Error::Embedder(format!("embedder {}: {what}", self.model_id).into())
    }

    /// The Python exception `e` as an embedder error.
    fn raised(&self, py: Python<'_>, e: PyErr) -> mnemon::Error {
        let kind = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "exception".into());
        self.fail(format!("raised {kind}: {}", e.value(py)))
    }

    fn call_documents(&self, py: Python<'_>, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        let list = PyList::new(py, texts).map_err(|e| self.raised(py, e))?;
        let out = self.documents.call1(py, (list,)).map_err(|e| self.raised(py, e))?;
        let rows = out.bind(py);
        let n = rows.len().map_err(|_| self.fail("returned something that is not a list of vectors"))?;
        if n != texts.len() {
            return Err(self.fail(format!("returned {n} vectors for {} texts", texts.len())));
        }
        let mut vectors = Vec::with_capacity(n);
        for (i, row) in rows.try_iter().map_err(|e| self.raised(py, e))?.enumerate() {
            let row = row.map_err(|e| self.raised(py, e))?;
            vectors.push(self.vector(&row, i)?);
        }
        Ok(vectors)
    }

    fn call_query(&self, py: Python<'_>, query: &Py<PyAny>, text: &str) -> mnemon::Result<Vec<f32>> {
        let out = query.call1(py, (text,)).map_err(|e| self.raised(py, e))?;
        self.vector(out.bind(py), 0)
    }

    /// Row `i` of an answer as a checked vector (its length is checked
    /// against the dimension once one is known).
    fn vector(&self, row: &Bound<'_, PyAny>, i: usize) -> mnemon::Result<Vec<f32>> {
        let not_numbers = || self.fail(format!("vector {i} is not a sequence of numbers (got {})", type_name(row)));
        if row.is_instance_of::<pyo3::types::PyString>() {
            return Err(not_numbers());
        }
        // Any iterable of numbers: a list, a tuple, a NumPy array.
        let mut v = Vec::with_capacity(self.dim);
        for (j, x) in row.try_iter().map_err(|_| not_numbers())?.enumerate() {
            let x: f64 = x.and_then(|x| x.extract()).map_err(|_| not_numbers())?;
            // A finite f64 beyond f32's range becomes infinite here and is
            // refused with the others.
            #[allow(clippy::cast_possible_truncation)]
            let y = x as f32;
            if !y.is_finite() {
                return Err(self.fail(format!("vector {i} component {j} is {x} (must be finite, within ±3.4e38)")));
            }
            v.push(y);
        }
        if self.dim != 0 && v.len() != self.dim {
            return Err(self.fail(format!("vector {i} has {} components, expected {}", v.len(), self.dim)));
        }
        if v.iter().all(|x| *x == 0.0) {
            return Err(self.fail(format!("vector {i} is all zeros (it has no direction)")));
        }
        Ok(v)
    }
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an object".into())
}

impl Embedder for PyEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str], kind: EmbedKind) -> mnemon::Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // `try_attach`: an engine thread that outlives the interpreter
        // (shutting down) gets an error instead of blocking.
        let out = Python::try_attach(|py| match (&self.query, kind) {
            (Some(q), EmbedKind::Query) => texts.iter().map(|t| self.call_query(py, q, t)).collect(),
            _ => self.call_documents(py, texts),
        });
        let mut vectors = out.unwrap_or_else(|| Err(self.fail("the Python interpreter is shutting down")))?;
        for v in &mut vectors {
            mnemon::embed::normalize(v);
        }
        Ok(vectors)
    }
}
