//! Response budgets and paging.
//!
//! MCP clients reject (or silently cut) tool results above about 25,000
//! tokens, so every read of the surface is capped. Tokens are counted with
//! [`mnemon::recall::estimate_tokens`] over the compact JSON of the response: one
//! token per CJK character plus one per four other characters, rounded up.
//! Current BPE tokenizers average about four characters per English token
//! and JSON punctuation tokenizes at least as densely, so the count errs
//! high for Chinese and is close for English. Lists stop before the item
//! that would pass the budget and say how to continue (`next_cursor`) or
//! how many were left out (`omitted`).

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::error::{ApiError, ErrorCode};
use mnemon::Seq;

/// Default cap of one response, in estimated tokens: the limit MCP clients
/// apply to tool results (25,000 in Claude Code; other clients are similar).
pub const DEFAULT_MAX_RESPONSE_TOKENS: usize = 25_000;
/// Tokens kept back from the budget for the response's own fields and the
/// protocol frame around it (field names, cursor, counters: measured under
/// 100; doubled for margin).
pub const FRAME_TOKENS: usize = 200;
/// Default page size of `list`, `history` and `log`.
pub const DEFAULT_PAGE: usize = 100;
/// Largest page size a request may ask for.
pub const MAX_PAGE: usize = 1000;

/// Limits every response of the surface respects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most estimated tokens in one response (see the module docs). Default
    /// [`DEFAULT_MAX_RESPONSE_TOKENS`]; at least 1,000.
    pub max_response_tokens: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_response_tokens: DEFAULT_MAX_RESPONSE_TOKENS }
    }
}

/// Estimated tokens of `v` as compact JSON (see the module docs).
pub fn json_tokens<T: Serialize + ?Sized>(v: &T) -> usize {
    serde_json::to_string(v).map(|s| mnemon::recall::estimate_tokens(&s)).unwrap_or(usize::MAX)
}

/// Packs items into a response until the budget is spent.
pub(crate) struct Packer {
    left: usize,
}

impl Packer {
    pub(crate) fn new(limits: &Limits) -> Packer {
        Packer { left: limits.max_response_tokens.saturating_sub(FRAME_TOKENS) }
    }

    /// Charges `item` to the budget; false (and nothing charged) when it
    /// does not fit.
    pub(crate) fn take<T: Serialize>(&mut self, item: &T) -> bool {
        let cost = json_tokens(item) + 1;
        if cost > self.left {
            return false;
        }
        self.left -= cost;
        true
    }

    /// The error for a first item that alone does not fit.
    pub(crate) fn too_large(what: &str, limits: &Limits) -> ApiError {
        ApiError::new(
            ErrorCode::ResponseTooLarge,
            format!("{what} alone is above the response budget of {} tokens", limits.max_response_tokens),
        )
    }
}

/// The page size a request asked for, checked.
pub(crate) fn page_size(limit: Option<usize>) -> Result<usize, ApiError> {
    match limit {
        None => Ok(DEFAULT_PAGE),
        Some(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::out_of_range("limit", 1, MAX_PAGE, n)),
    }
}

/// A position in a paged read: the point the first page was read at (log
/// position and, for a valid-time view, the valid time: later pages show
/// the same state) and how far the pages got. Written as `"<at>.<after>"`
/// or `"<at>.<after>.<valid time, µs since the epoch>"`; clients treat it
/// as opaque.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) at: Seq,
    pub(crate) after: u64,
    pub(crate) valid_at: Option<DateTime<Utc>>,
}

impl Cursor {
    pub(crate) fn parse(s: &str) -> Result<Cursor, ApiError> {
        let bad = || ApiError::invalid("cursor", format!("must be a next_cursor this server returned, got {s:?}"));
        let mut parts = s.split('.');
        let at = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let after = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let valid_at = match parts.next() {
            None => None,
            Some(p) => Some(p.parse().ok().and_then(DateTime::<Utc>::from_timestamp_micros).ok_or_else(bad)?),
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Cursor { at, after, valid_at })
    }

    pub(crate) fn encode(self) -> String {
        match self.valid_at {
            Some(t) => format!("{}.{}.{}", self.at, self.after, t.timestamp_micros()),
            None => format!("{}.{}", self.at, self.after),
        }
    }
}
