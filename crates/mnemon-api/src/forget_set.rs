//! `forget_user`: forget every namespace a user's data lives in, in one
//! request, with a receipt per namespace.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::budget::Limits;
use super::error::ApiError;
use super::Call;
use mnemon::{Engine, Namespace};

/// `forget_user`: forget every memory and observation of each namespace
/// named (1–1000, each once), as `forget` with `all` does, crypto-shredding
/// each namespace's data key on an encrypted store. All namespaces are
/// checked before anything is written: an empty list, a bad or repeated
/// namespace is `invalid_input`, one nothing was ever written to is
/// `not_found`, and then nothing is written. Each namespace's forget is
/// atomic and durable before the response; the set is not one
/// transaction: if the disk fails part way, the namespaces already
/// forgotten stay so, and the same request sent again finishes the rest
/// (zero counts for those done).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForgetUserRequest {
    /// The namespaces to forget, 1–1000, each named once.
    #[schemars(length(min = 1, max = 1000))]
    pub namespaces: Vec<Namespace>,
    /// Why, kept in the log of each namespace.
    /// Default "user request".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What `forget_user` erased in one namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceForgotten {
    /// The namespace.
    pub namespace: Namespace,
    /// Memory versions erased (0 for a namespace emptied before).
    pub memories: usize,
    /// Observations erased.
    pub observations: usize,
    /// Spans of the reason replaced by `[erased]` because they quoted a
    /// forgotten text.
    pub quotes_cut: usize,
    /// True on an encrypted store: the namespace's data key was destroyed,
    /// so every copy of its records (backups and exports included) is
    /// unreadable from now on.
    pub key_shredded: bool,
}

/// What `forget_user` erased: one receipt per namespace, in the order of
/// the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForgetUserResponse {
    /// One receipt per namespace, in the order of the request.
    pub namespaces: Vec<NamespaceForgotten>,
    /// Memory versions erased, over all namespaces.
    pub memories: usize,
    /// Observations erased, over all namespaces.
    pub observations: usize,
}

impl Call for ForgetUserRequest {
    type Output = ForgetUserResponse;
    const OP: &'static str = "forget_user";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn namespaces(&self) -> &[Namespace] {
        &self.namespaces
    }

    fn call(self, engine: &Engine, _limits: &Limits) -> Result<ForgetUserResponse, ApiError> {
        let reason = self.reason.as_deref().unwrap_or("user request");
        let outcomes = engine.forget_namespaces(&self.namespaces, reason)?;
        let namespaces: Vec<NamespaceForgotten> = self
            .namespaces
            .into_iter()
            .zip(outcomes)
            .map(|(namespace, f)| NamespaceForgotten {
                namespace,
                memories: f.memories,
                observations: f.observations,
                quotes_cut: f.quotes_cut,
                key_shredded: f.key_shredded,
            })
            .collect();
        Ok(ForgetUserResponse {
            memories: namespaces.iter().map(|n| n.memories).sum(),
            observations: namespaces.iter().map(|n| n.observations).sum(),
            namespaces,
        })
    }
}
