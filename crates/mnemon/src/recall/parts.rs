//! What a `context` block is made of besides the recalled memories: the
//! profile (current value of every slot key, every permanent memory) and
//! the recent turns of the caller's session; and [`Engine::context`], which
//! gathers the three parts and renders them ([`super::render_block`]).

use chrono::{DateTime, Utc};

use super::context::{render_block, BlockParts, ContextBlock, PartShares};
use super::RecallOptions;
use crate::engine::{AsOf, Engine, ListOptions, ReadPoint};
use crate::error::{Error, Result};
use crate::projection::{Memory, Observation};
use crate::types::{Namespace, Tier};

/// Default token budget of a block (the `context` command's long-standing
/// default).
pub const DEFAULT_CONTEXT_BUDGET: usize = 400;

/// Options for [`Engine::context`].
#[derive(Clone, Debug)]
pub struct ContextOptions {
    /// The recall behind the relevant part. `abstain` `None` means the
    /// embedder's [`crate::embed::Embedder::context_floor`]; `as_of` and
    /// `current_session` also shape the profile and recent parts; the
    /// other filters apply to the relevant part only.
    pub recall: RecallOptions,
    /// Most tokens of the block by [`super::estimate_tokens`], at least 1.
    /// Default [`DEFAULT_CONTEXT_BUDGET`].
    pub budget_tokens: usize,
    /// Shares of the budget for the profile and recent parts (0 turns a
    /// part off). Default [`PartShares::default`].
    pub shares: PartShares,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            recall: RecallOptions::default(),
            budget_tokens: DEFAULT_CONTEXT_BUDGET,
            shares: PartShares::default(),
        }
    }
}

impl Engine {
    /// The profile of `ns`: the current version of every slot key and
    /// every permanent memory, whatever the query, as of `as_of` (default:
    /// now). Current means active (not superseded, forgotten, quarantined
    /// or archived) at that point, or in a valid-time view true at that
    /// time. With `current_session`, short-term memories of other sessions
    /// are left out, as recall leaves them out.
    ///
    /// Order (stable: it depends on the store only, never on a query):
    /// permanent memories first, oldest first (by id); then the other keyed
    /// memories, most recently true first (by `valid_from`, newest first,
    /// then the latest written first). A block's profile part packs them in this order, so
    /// under a small share the permanent ones and the freshest slot values
    /// stay.
    ///
    /// # Errors
    /// As [`Engine::as_of`] for a `Seq` past the end of the log.
    pub fn profile(&self, ns: &Namespace, as_of: Option<AsOf>, current_session: Option<&str>) -> Result<Vec<Memory>> {
        let point = self.read_point(ns, as_of)?;
        let visible = |m: &Memory| {
            (m.tier == Tier::Permanent || m.key.is_some())
                && (m.tier != Tier::ShortTerm
                    || current_session
                        .is_none_or(|s| m.session.as_deref().is_some_and(|ms| crate::types::same_id(ms, s))))
        };
        let (mut permanent, mut keyed): (Vec<Memory>, Vec<Memory>) = self
            .list_where(ns, &ListOptions::default(), point, visible)
            .into_iter()
            .partition(|m| m.tier == Tier::Permanent);
        permanent.sort_by_key(|m| m.id);
        keyed.sort_by(|a, b| b.valid_from.cmp(&a.valid_from).then(b.id.cmp(&a.id)));
        // One entry per key (in its identifier form): the newest version,
        // should a key ever hold two current ones.
        let form = |k: &str| crate::types::canonical_id(k).into_owned();
        let mut seen = std::collections::HashSet::new();
        for m in &permanent {
            if let Some(k) = &m.key {
                seen.insert(form(k));
            }
        }
        keyed.retain(|m| m.key.as_deref().is_some_and(|k| seen.insert(form(k))));
        permanent.extend(keyed);
        Ok(permanent)
    }

    /// The turns (observations) of `session` in `ns`, oldest first by when
    /// they happened (event time, else write time; ties in write order), as
    /// of `as_of` (default: now): those recorded by the log position, or in
    /// a valid-time view those that happened by the time.
    ///
    /// # Errors
    /// As [`Engine::as_of`] for a `Seq` past the end of the log.
    pub fn session_turns(&self, ns: &Namespace, session: &str, as_of: Option<AsOf>) -> Result<Vec<Observation>> {
        let point = self.read_point(ns, as_of)?;
        let happened = |o: &Observation| -> DateTime<Utc> { o.event_time.unwrap_or(o.recorded_at) };
        let mut turns: Vec<Observation> = self
            .observations(ns, Some(session))
            .into_iter()
            .filter(|o| o.id.0 <= point.seq && point.valid_at.is_none_or(|t| happened(o) <= t))
            .collect();
        // Oldest first by when they were said: a turn logged late (imported
        // or backfilled history) takes its place by its time; ties keep the
        // order of writing.
        turns.sort_by_key(|o| (happened(o), o.id));
        Ok(turns)
    }

    /// A prompt block for `query` in three parts ([module
    /// grammar](crate::recall::render_block)): the profile
    /// ([`Engine::profile`]), the memories recalled for the query, and the
    /// turns of `opts.recall.current_session` ([`Engine::session_turns`];
    /// none without one), within `opts.budget_tokens`.
    ///
    /// Recall abstains as the `context` command does (the floors of
    /// `opts.recall.abstain`, by default the embedder's context floor;
    /// lexical mode never abstains): then the relevant part is empty and
    /// `abstained` is set, and the profile and recent parts are rendered
    /// all the same. With `opts.recall.record_access` (and no `as_of`),
    /// access is recorded for the memories the block holds, profile and
    /// relevant.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `budget_tokens` for a budget of 0,
    /// `profile_share` / `recent_share` as [`PartShares::check`];
    /// otherwise as [`Engine::recall`]. Nothing is written on error. A
    /// `current_session` nothing belongs to yet (a conversation that has
    /// just begun) is not an error: its recent part is empty.
    pub fn context(&self, ns: &Namespace, query: &str, opts: &ContextOptions) -> Result<ContextBlock> {
        if opts.budget_tokens == 0 {
            return Err(Error::invalid("budget_tokens", "must be at least 1"));
        }
        let shares = opts.shares.check()?;
        let current = opts.recall.current_session.as_deref();
        let mut recall = opts.recall.clone();
        let floors = recall.abstain.take().unwrap_or_else(|| self.embedder().context_floor());
        // Access is recorded below, for the memories the block holds only.
        let record_access = std::mem::replace(&mut recall.record_access, false);
        let (mut hits, query_time) = self.recall_timed(ns, query, &recall)?;
        let profile = if shares.profile > 0.0 { self.profile(ns, recall.as_of, current)? } else { Vec::new() };
        let recent = match current {
            Some(s) if shares.recent > 0.0 => self.session_turns(ns, s, recall.as_of)?,
            _ => Vec::new(),
        };
        let unknown_names = self.unknown_names(ns, query);
        let abstention = Some(floors)
            .filter(|_| recall.mode != super::RecallMode::Lexical)
            .and_then(|f| f.judge(&hits, || !unknown_names.is_empty()));
        if abstention.is_some() {
            hits.clear();
        }
        let block = render_block(
            BlockParts {
                profile: &profile,
                relevant: &hits,
                recent: &recent,
                offset: recall.reference_time.map(|t| *t.offset()),
            },
            opts.budget_tokens,
            shares,
        );
        if record_access && recall.as_of.is_none() {
            self.record_access(ns, block.memory_ids.clone(), recall.requester.clone());
        }
        Ok(ContextBlock { abstained: abstention.is_some(), unknown_names, abstention, query_time, ..block })
    }

    /// The read point of `as_of` (default: the last durable position).
    fn read_point(&self, ns: &Namespace, as_of: Option<AsOf>) -> Result<ReadPoint> {
        Ok(match as_of {
            None => ReadPoint::at(self.last_seq()),
            Some(at) => self.as_of(ns, at)?.point(),
        })
    }
}
