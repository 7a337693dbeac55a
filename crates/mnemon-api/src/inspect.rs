//! Requests for looking at a store: its namespaces with their figures, a
//! namespace's events over time, and the receipts of its compactions.
//! Counts only, never content.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::budget::{page_size, Limits, Packer};
use super::error::ApiError;
use super::Call;
use mnemon::CompactionReceipt;
use mnemon::{Engine, NamespaceSummary, Timeline};
use mnemon::{Namespace, Seq};

/// Default number of buckets of a timeline: on the inspector's 960-pixel
/// plot, bars about 18 pixels wide, still readable, while a namespace's
/// sessions usually fall into buckets of their own (chosen for that plot).
pub const DEFAULT_TIMELINE_BUCKETS: usize = 48;

/// `namespaces`: every namespace holding a record, by name, with its
/// figures (memories by status, quarantined, observations, forgotten
/// counts), paged. A store-wide read: a server restricted to some
/// namespaces refuses it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespacesRequest {
    /// next_cursor of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size, 1–1000 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// A page of namespaces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespacesResponse {
    /// Namespaces in name order, with their figures.
    pub namespaces: Vec<NamespaceSummary>,
    /// The log position read.
    pub seq: Seq,
    /// Pass as `cursor` for the next page (the last namespace of this
    /// page); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Call for NamespacesRequest {
    type Output = NamespacesResponse;
    const OP: &'static str = "namespaces";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<NamespacesResponse, ApiError> {
        let page = page_size(self.limit)?;
        let seq = engine.last_seq();
        let all = engine.namespaces();
        let rest = match &self.cursor {
            None => &all[..],
            Some(after) => {
                let start = all.partition_point(|s| s.namespace.as_str() <= after.as_str());
                &all[start..]
            }
        };
        let mut packer = Packer::new(limits);
        let namespaces: Vec<NamespaceSummary> =
            rest.iter().take(page).take_while(|s| packer.take(s)).cloned().collect();
        let next_cursor = (namespaces.len() < rest.len())
            .then(|| namespaces.last().map(|s| s.namespace.as_str().to_string()))
            .flatten();
        Ok(NamespacesResponse { namespaces, seq, next_cursor })
    }
}

/// `timeline`: a namespace's events counted by kind in equal time buckets
/// (see [`Engine::timeline`]). Responds with the [`Timeline`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// Number of buckets, 1–500 (default 48).
    /// Fewer over a span shorter than that many microseconds (one when
    /// every event shares one instant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 500))]
    pub buckets: Option<usize>,
    /// Start (RFC 3339). Default the namespace's first event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<DateTime<Utc>>,
    /// End (RFC 3339). Default the namespace's last event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<DateTime<Utc>>,
}

impl Call for TimelineRequest {
    type Output = Timeline;
    const OP: &'static str = "timeline";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<Timeline, ApiError> {
        let buckets = self.buckets.unwrap_or(DEFAULT_TIMELINE_BUCKETS);
        let t = engine.timeline(&self.namespace, buckets, self.from, self.to)?;
        if !Packer::new(limits).take(&t) {
            return Err(Packer::too_large(&format!("a timeline of {buckets} buckets"), limits));
        }
        Ok(t)
    }
}

/// `receipts`: the stored receipts of the store's compactions, newest
/// first, paged (see [`Engine::compaction_receipts`]). Counts and digests
/// only, never erased content. A store-wide read: a server restricted to
/// some namespaces refuses it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReceiptsRequest {
    /// next_cursor of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size, 1–1000 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// A page of compaction receipts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReceiptsResponse {
    /// Receipts, newest (highest generation) first.
    pub receipts: Vec<CompactionReceipt>,
    /// Pass as `cursor` for the next page (the generation of this page's
    /// last receipt); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Call for ReceiptsRequest {
    type Output = ReceiptsResponse;
    const OP: &'static str = "receipts";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<ReceiptsResponse, ApiError> {
        let page = page_size(self.limit)?;
        let before = match &self.cursor {
            None => None,
            Some(c) => Some(c.parse::<u64>().map_err(|_| {
                ApiError::invalid("cursor", format!("must be a next_cursor this server returned, got {c:?}"))
            })?),
        };
        let all = engine.compaction_receipts()?;
        let rest: Vec<CompactionReceipt> =
            all.into_iter().filter(|r| before.is_none_or(|b| r.generation < b)).collect();
        let mut packer = Packer::new(limits);
        let receipts: Vec<CompactionReceipt> = rest.iter().take(page).take_while(|r| packer.take(r)).cloned().collect();
        if receipts.is_empty() && !rest.is_empty() {
            return Err(Packer::too_large("one compaction receipt", limits));
        }
        let next_cursor =
            (receipts.len() < rest.len()).then(|| receipts.last().map(|r| r.generation.to_string())).flatten();
        Ok(ReceiptsResponse { receipts, next_cursor })
    }
}
