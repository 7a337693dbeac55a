//! Response budgets and paging.
//!
//! MCP clients reject (or silently cut) tool results above about 25,000
//! tokens, so every read of the surface is capped. Tokens are counted with
//! [`crate::estimate_tokens`] over the compact JSON of the response: one
//! token per CJK character plus one per four other characters, rounded up.
//! Current BPE tokenizers average about four characters per English token
//! and JSON punctuation tokenizes at least as densely, so the count errs
//! high for Chinese and is close for English. Lists stop before the item
//! that would pass the budget and say how to continue (`next_cursor`) or
//! how many were left out (`omitted`).

use serde::Serialize;

use super::error::{ApiError, ErrorCode};
use crate::types::Seq;

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
    serde_json::to_string(v).map(|s| crate::estimate_tokens(&s)).unwrap_or(usize::MAX)
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
        Some(n) => Err(ApiError::invalid("limit", format!("{n}: must be in 1..={MAX_PAGE}"))),
    }
}

/// A position in a paged read: the log position the first page was read at
/// (so later pages show the same state) and how far the pages got. Written
/// as `"<at>.<after>"`; clients treat it as opaque.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) at: Seq,
    pub(crate) after: u64,
}

impl Cursor {
    pub(crate) fn parse(s: &str) -> Result<Cursor, ApiError> {
        let bad = || ApiError::invalid("cursor", format!("{s:?} is not a cursor this server returned"));
        let (a, b) = s.split_once('.').ok_or_else(bad)?;
        Ok(Cursor { at: a.parse().map_err(|_| bad())?, after: b.parse().map_err(|_| bad())? })
    }

    pub(crate) fn encode(self) -> String {
        format!("{}.{}", self.at, self.after)
    }
}
