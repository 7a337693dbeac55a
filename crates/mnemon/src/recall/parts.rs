//! What a `context` block is made of besides the recalled memories: the
//! profile (current value of every slot key, every permanent memory) and
//! the recent turns of the caller's session; and [`Engine::context`], which
//! gathers the three parts and renders them ([`super::render_block`]).

use chrono::{DateTime, Utc};

use super::context::{render_block, BlockParts, ContextBlock, PartShares};
use super::{Hit, RecallOptions};
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
        // The query's vector is kept: an excerpt of a long memory is chosen
        // against it below.
        self.check_query(query, &recall)?;
        let query_vector = match self.query_vector(query, &recall)? {
            Some(v) => v,
            // A provider that is down: the block is built from words alone.
            None => {
                recall.mode = super::RecallMode::Lexical;
                Vec::new()
            }
        };
        let (mut hits, query_time) = self.recall_scored(ns, query, &query_vector, &recall)?;
        if recall.mode == super::RecallMode::Lexical && opts.recall.mode != super::RecallMode::Lexical {
            for h in &mut hits {
                h.explain.query_unembedded = true;
            }
        }
        let profile = if shares.profile > 0.0 { self.profile(ns, recall.as_of, current)? } else { Vec::new() };
        let recent = match current {
            Some(s) if shares.recent > 0.0 => self.held_back(self.session_turns(ns, s, recall.as_of)?),
            _ => Vec::new(),
        };
        let unknown_names = self.unknown_names(ns, query);
        let judged = recall.mode != super::RecallMode::Lexical;
        let abstention =
            Some(floors).filter(|_| judged).and_then(|f| f.judge(query, &mut hits, || unknown_names.clone()));
        if abstention.is_some() {
            hits.clear();
        } else if judged {
            self.newer_values_first(ns, &mut hits);
            // What has grounds comes first, in rank order: a small store's
            // unrelated memories never push out a relevant one.
            hits.sort_by_key(|h| h.explain.grounds.is_none());
        }
        // The passage of each long memory that answers the query, for a
        // memory that does not fit whole.
        let mut excerpts = Vec::new();
        let long = |h: &&Hit| super::estimate_tokens(&h.memory.content) > super::excerpt::EXCERPT_FROM_TOKENS;
        let long_hits: Vec<&Hit> = hits.iter().filter(long).take(super::excerpt::MAX_EXCERPTS).collect();
        if !long_hits.is_empty() {
            let chosen = (|| -> Result<Vec<(crate::types::MemoryId, Vec<String>)>> {
                // Lexical mode embedded no query; the excerpt needs one.
                let lexical_only;
                let qv = if query_vector.is_empty() {
                    lexical_only = crate::embed::embed_query(self.embedder().as_ref(), query)?;
                    &lexical_only
                } else {
                    &query_vector
                };
                let mut out = Vec::new();
                for h in long_hits {
                    let text = crate::text::searchable(&h.memory.content);
                    let ps = super::excerpt::best_passages(self.embedder().as_ref(), query, qv, &text)?;
                    if !ps.is_empty() {
                        out.push((h.memory.id, ps.into_iter().map(str::to_string).collect()));
                    }
                }
                Ok(out)
            })();
            match chosen {
                Ok(c) => excerpts = c,
                // A provider that is down: long memories show their start.
                Err(Error::ProviderUnavailable { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let block = render_block(
            BlockParts {
                profile: &profile,
                relevant: &hits,
                recent: &recent,
                offset: recall.reference_time.map(|t| *t.offset()),
                excerpts: &excerpts,
            },
            opts.budget_tokens,
            shares,
        );
        if record_access && recall.as_of.is_none() {
            self.record_access(ns, block.memory_ids.clone(), recall.requester.clone(), recall.access_session());
        }
        let floors = judged.then_some(floors);
        Ok(ContextBlock { abstained: abstention.is_some(), unknown_names, abstention, query_time, floors, ..block })
    }

    /// The read point of `as_of` (default: the last durable position).
    fn read_point(&self, ns: &Namespace, as_of: Option<AsOf>) -> Result<ReadPoint> {
        Ok(match as_of {
            None => ReadPoint::at(self.last_seq()),
            Some(at) => self.as_of(ns, at)?.point(),
        })
    }
}

/// The text a block shows in place of a recent turn that reads as an
/// instruction to the agent ([`Engine::held_back`]).
pub const HELD_BACK_TURN: &str = "[turn held back: it reads as an instruction to the agent]";

/// How far below the near-duplicate threshold two memories' cosine may be
/// for them to count as the same attribute of the same subject when one
/// replaces a value of the other ([`Engine::newer_values_first`]): 0.85
/// for multilingual-e5-small, whose unrelated memories sit near 0.80.
pub const SAME_ATTRIBUTE_MARGIN: f32 = 0.10;

/// How much further below [`SAME_ATTRIBUTE_MARGIN`]'s bar a newer memory
/// that states a change ([`states_change`]) may sit from the older memory
/// it replaces, where that older memory is the closest of those ranked
/// above it: 0.80 for multilingual-e5-small. Chosen on the
/// everyday-questions dev split.
pub const CHANGE_MARGIN: f32 = 0.05;

/// Whether `text` says that something changed: an English word of change
/// (`now`, `moved`, `switched`, `joined`, `new`, `quit`, `dropped`, `no
/// longer` …) or a Chinese one (`现在`, `搬到`, `换`, `改`, `跳槽`, `入职`,
/// `新`, `不再` …). A closed class, as the fact signature's word lists are.
fn states_change(text: &str) -> bool {
    const EN: &[&str] = &[
        "now",
        "nowadays",
        "currently",
        "moved",
        "moving",
        "relocated",
        "switched",
        "changed",
        "joined",
        "started",
        "new",
        "quit",
        "left",
        "dropped",
        "became",
        "become",
        "anymore",
        "longer",
        "instead",
        "replaced",
    ];
    const ZH: &[&str] = &[
        "现在", "目前", "如今", "搬到", "搬去", "搬家", "换", "改", "跳槽", "入职", "离职", "辞职", "新", "不再",
        "已经",
    ];
    let t = crate::text::searchable(text);
    if crate::text::mostly_cjk(&t) {
        return ZH.iter().any(|w| t.contains(w));
    }
    use unicode_segmentation::UnicodeSegmentation;
    t.to_lowercase().unicode_words().any(|w| EN.contains(&w))
}

/// Whether `b` gives another value where `a` gives one: in Latin-script
/// text both name something (a capitalised name) or hold a number, and the
/// names or numbers differ ("I live in Hangzhou" / "I moved to Shanghai
/// now"); in Chinese text a content character is replaced on both sides
/// ([`crate::dedup::differing_facts`]). Two unrelated statements that only
/// read alike ("Hates cilantro" / "Has a dog named Max") are not changes.
fn changes_value(a: &str, b: &str) -> bool {
    let (ta, tb) = (crate::text::searchable(a), crate::text::searchable(b));
    if crate::text::mostly_cjk(&ta) && crate::text::mostly_cjk(&tb) {
        return crate::dedup::differing_facts(&ta, &tb)
            .is_some_and(|d| !d.only_in_first.is_empty() && !d.only_in_second.is_empty());
    }
    let (sa, sb) = (crate::dedup::FactSignature::of(&ta), crate::dedup::FactSignature::of(&tb));
    let set =
        |it: &mut dyn Iterator<Item = &str>| it.map(str::to_owned).collect::<std::collections::BTreeSet<String>>();
    let (na, nb) = (set(&mut sa.names()), set(&mut sb.names()));
    let (ma, mb) = (set(&mut sa.numbers()), set(&mut sb.numbers()));
    (!na.is_empty() && !nb.is_empty() && na != nb) || (!ma.is_empty() && !mb.is_empty() && ma != mb)
}

impl Engine {
    /// The recent part's turns, each that reads as an instruction to the
    /// agent (the check that quarantines such a memory, unless the engine's
    /// injection policy is `allow`) with its text replaced by
    /// [`HELD_BACK_TURN`]: the turn keeps its place and time in the block,
    /// its words stay in the log for an audit, and the block never quotes
    /// them to the agent.
    pub(crate) fn held_back(&self, mut turns: Vec<Observation>) -> Vec<Observation> {
        let cfg = self.config();
        if cfg.injection_policy == crate::safety::InjectionPolicy::Allow {
            return turns;
        }
        for t in &mut turns {
            if cfg.injection.check(&t.text).is_some() {
                t.text = HELD_BACK_TURN.to_string();
            }
        }
        turns
    }

    /// Puts a newer value of a fact before an older one it changes, among
    /// `hits` (best first): where a later hit's memory holds in a later
    /// time (event time, else write time) than an earlier hit's, restates
    /// the same attribute of the same subject (the two memories' cosine is
    /// at least the near-duplicate threshold less [`SAME_ATTRIBUTE_MARGIN`])
    /// and gives another value ([`changes_value`]: another city, employer
    /// or number), the newer one moves to the older one's
    /// rank, and counts as relevant ([`super::Grounds::Newer`]) where the
    /// older one does. A newer memory that says it is a change
    /// ([`states_change`]: "Just joined Figma") needs only be closest to
    /// the older one among the hits above it, at [`CHANGE_MARGIN`] below
    /// that bar. "I live in Hangzhou" then "I moved to Shanghai now",
    /// both stored without a slot key, show Shanghai first; nothing is
    /// dropped.
    pub(crate) fn newer_values_first(&self, ns: &Namespace, hits: &mut Vec<Hit>) {
        if hits.len() < 2 {
            return;
        }
        let threshold = self.dedup_threshold() - SAME_ATTRIBUTE_MARGIN;
        let vectors: Vec<Option<Vec<f32>>> = {
            let state = self.shared().state.read();
            let Some(st) = state.ns(ns) else {
                return;
            };
            hits.iter().map(|h| st.vectors.get(h.memory.id.0)).collect()
        };
        let mut order: Vec<usize> = (0..hits.len()).collect();
        // Each later hit moves at most once, before the first older value
        // it changes.
        for j in 1..hits.len() {
            let pos_j = order.iter().position(|&x| x == j).unwrap_or(j);
            let Some(vj) = &vectors[j] else { continue };
            let cos = |i: usize| vectors[i].as_ref().map(|vi| vi.iter().zip(vj).map(|(x, y)| x * y).sum::<f32>());
            let changed = |i: usize| {
                let (a, b) = (&hits[i].memory, &hits[j].memory);
                b.effective_time() > a.effective_time() && changes_value(&a.content, &b.content)
            };
            let mut target = order[..pos_j].iter().position(|&i| cos(i).is_some_and(|c| c >= threshold) && changed(i));
            // A memory that says it is a change ("Just joined Figma",
            // "搬到苏州了") replaces the value of the memory above it that
            // is closest to it, at a lower bar.
            if target.is_none() && states_change(&hits[j].memory.content) {
                let closest = order[..pos_j]
                    .iter()
                    .enumerate()
                    .filter_map(|(k, &i)| cos(i).map(|c| (k, i, c)))
                    .max_by(|a, b| a.2.total_cmp(&b.2));
                if let Some((k, i, c)) = closest {
                    if c >= threshold - CHANGE_MARGIN && changed(i) {
                        target = Some(k);
                    }
                }
            }
            if let Some(t) = target {
                let moved = order.remove(pos_j);
                let older = order[t];
                order.insert(t, moved);
                if hits[j].explain.grounds.is_none() && hits[older].explain.grounds.is_some() {
                    hits[j].explain.grounds = Some(super::Grounds::Newer);
                }
            }
        }
        if order.iter().enumerate().all(|(k, &i)| k == i) {
            return;
        }
        let mut taken: Vec<Option<Hit>> = std::mem::take(hits).into_iter().map(Some).collect();
        *hits = order.into_iter().filter_map(|i| taken[i].take()).collect();
    }
}
