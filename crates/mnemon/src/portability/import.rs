//! Bulk import: validate every record, then write in group commits.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::write::{check_short, pending_memory, Prepared, MAX_SESSION_BYTES};
use crate::engine::{Engine, NewMemory};
use crate::error::{Error, Result};
use crate::event::Observed;
use crate::portability::records::{
    ImportMemory, ImportObservation, ImportRecord, Located, Parsed, Rejection, Unmapped,
};
use crate::projection::normalize_content;
use crate::types::{Namespace, ObservationId, Role, Seq};
use crate::writer::{Op, OpOutcome, RememberAction};

/// Longest observation source reference, in bytes (as `observe` allows).
const MAX_SOURCE_BYTES: usize = 256;
/// Rejections listed in a summary; the count covers all of them. The same
/// cap holds for the unmapped list.
pub const MAX_LISTED_REJECTIONS: usize = 1000;
/// Default records per group commit: large enough that the flush is
/// amortised, small enough that one group's embedding batch stays in cache.
pub const DEFAULT_IMPORT_BATCH: usize = 1000;

/// The shape of the input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportFormat {
    /// One [`ImportRecord`] per line (docs/FORMAT.md, "Import").
    #[default]
    Jsonl,
    /// LoCoMo `locomo10.json`: every turn an observation.
    Locomo,
    /// LongMemEval records: every turn of every haystack session an observation.
    Longmemeval,
    /// The knowledge graph of the MCP reference memory server
    /// (`memory.jsonl`): every observation of an entity, and every
    /// relation, a memory ([`crate::portability::parse_mcp_memory`]).
    McpMemory,
    /// mem0 memories (`get_all()` results, the platform's list, JSON
    /// lines): each a memory; of a file of several users, the records of
    /// the user named like the namespace ([`crate::portability::parse_mem0`]).
    Mem0,
    /// A LangGraph store dump (`Item.dict()` per item): each item a memory
    /// where `MnemonStore` keeps it, the namespace given being the store's
    /// prefix ([`crate::portability::parse_langgraph`]).
    Langgraph,
}

impl ImportFormat {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [ImportFormat; 6] = [
        ImportFormat::Jsonl,
        ImportFormat::Locomo,
        ImportFormat::Longmemeval,
        ImportFormat::McpMemory,
        ImportFormat::Mem0,
        ImportFormat::Langgraph,
    ];

    /// The format's name, as [`std::str::FromStr`] and the request's JSON
    /// spell it (`mcp_memory`; the CLI also takes `mcp-memory`).
    pub fn name(self) -> &'static str {
        match self {
            ImportFormat::Jsonl => "jsonl",
            ImportFormat::Locomo => "locomo",
            ImportFormat::Longmemeval => "longmemeval",
            ImportFormat::McpMemory => "mcp_memory",
            ImportFormat::Mem0 => "mem0",
            ImportFormat::Langgraph => "langgraph",
        }
    }

    /// Reads `text` in this format, for no namespace in particular: mem0
    /// records of every user are kept, LangGraph items go under the
    /// `MnemonStore` prefix `lg`. An import reads with [`Self::parse_for`].
    pub fn parse(self, text: &str) -> Parsed {
        match self {
            ImportFormat::Jsonl => crate::portability::records::parse_jsonl(text),
            ImportFormat::Locomo => crate::portability::chat::parse_locomo(text),
            ImportFormat::Longmemeval => crate::portability::chat::parse_longmemeval(text),
            ImportFormat::McpMemory => crate::portability::mcp_memory::parse_mcp_memory(text),
            ImportFormat::Mem0 => crate::portability::mem0::parse_mem0(text, None),
            ImportFormat::Langgraph => crate::portability::langgraph::parse_langgraph(text, "lg"),
        }
    }

    /// Reads `text` in this format for an import into `ns`: as
    /// [`Self::parse`], except that of a mem0 file of several users only
    /// the records of the user (or agent) named `ns` are kept (the others
    /// are listed as unmapped), and that for a LangGraph dump `ns` is the
    /// `MnemonStore` prefix the items are written under.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `namespace`) for a LangGraph import
    /// whose namespace is not a `MnemonStore` prefix (1–32 characters of
    /// `[A-Za-z0-9_-]`).
    pub fn parse_for(self, text: &str, ns: &Namespace) -> Result<Parsed> {
        self.check_namespace(ns)?;
        Ok(match self {
            ImportFormat::Mem0 => crate::portability::mem0::parse_mem0(text, Some(ns.as_str())),
            ImportFormat::Langgraph => crate::portability::langgraph::parse_langgraph(text, ns.as_str()),
            other => other.parse(text),
        })
    }

    /// Checks that an import in this format can go into `ns` (before the
    /// input is read).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `namespace`) for a LangGraph import
    /// whose namespace is not a `MnemonStore` prefix.
    pub fn check_namespace(self, ns: &Namespace) -> Result<()> {
        if self == ImportFormat::Langgraph && !crate::portability::langgraph::is_store_prefix(ns.as_str()) {
            return Err(Error::invalid(
                "namespace",
                format!(
                    "a LangGraph import's namespace is the MnemonStore prefix its items go under (1–32 characters \
                     of [A-Za-z0-9_-], \"lg\" by default), got {:?}",
                    ns.as_str()
                ),
            ));
        }
        Ok(())
    }
}

impl std::str::FromStr for ImportFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let wanted = s.replace('-', "_");
        ImportFormat::ALL.into_iter().find(|f| f.name() == wanted).ok_or_else(|| {
            let names: Vec<&str> = ImportFormat::ALL.iter().map(|f| f.name()).collect();
            Error::invalid("format", format!("must be one of {}, got {s:?}", names.join(", ")))
        })
    }
}

/// What a bad record does to the import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Report it and import the good records.
    #[default]
    Skip,
    /// Report every bad record and write nothing.
    Abort,
}

impl std::str::FromStr for OnError {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "skip" => Ok(OnError::Skip),
            "abort" => Ok(OnError::Abort),
            _ => Err(Error::invalid("on_error", format!("must be skip or abort, got {s:?}"))),
        }
    }
}

/// Progress of the writing phase: records handled of the total to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportProgress {
    /// Records written or found duplicate so far.
    pub done: u64,
    /// Records to write.
    pub total: u64,
}

/// Called after each group commit of an import.
pub type ImportProgressFn = Arc<dyn Fn(ImportProgress) + Send + Sync>;

/// How to import.
#[derive(Clone, Default)]
pub struct ImportOptions {
    /// Skip bad records or write nothing. Default skip.
    pub on_error: OnError,
    /// Check everything and report, write nothing.
    pub dry_run: bool,
    /// Records per group commit, 1 ..= the engine's `max_batch`; 0 means
    /// [`DEFAULT_IMPORT_BATCH`] (capped at `max_batch`).
    pub batch: usize,
    /// Called after each group commit.
    pub progress: Option<ImportProgressFn>,
}

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("on_error", &self.on_error)
            .field("dry_run", &self.dry_run)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImportSummary {
    /// Records read (good and bad).
    pub read: u64,
    /// Observations written.
    pub observations_written: u64,
    /// Memories written (new memories and new versions).
    pub memories_written: u64,
    /// Records not written because the namespace (or an earlier record of
    /// this import) already holds them.
    pub duplicates: u64,
    /// Records refused.
    pub rejected: u64,
    /// The first refused records (at most 1,000), with line and reason.
    pub rejections: Vec<Rejection>,
    /// Records left out, and parts of records dropped, because mnemon's
    /// model has no place for them (a record type the format does not
    /// define, a relation to a missing entity, a record of another user, a
    /// field with no home); only imports from other systems have any. Not
    /// errors: they neither count as rejected nor abort an import.
    pub unmapped: u64,
    /// The first of them (at most 1,000), with line, record and reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmapped_list: Vec<Unmapped>,
    /// Personal data replaced by placeholders in what was written: kind →
    /// count (never values).
    pub redactions: BTreeMap<String, usize>,
    /// Memories quarantined as injected instructions.
    pub quarantined: u64,
    /// True when nothing was written because a record was bad and the
    /// import was asked to abort.
    pub aborted: bool,
    /// True for a dry run (nothing written; the counts say what would be).
    pub dry_run: bool,
    /// Last log position after the import.
    pub last_seq: Seq,
}

impl ImportSummary {
    fn unmap(&mut self, u: Unmapped) {
        self.unmapped += 1;
        if self.unmapped_list.len() < MAX_LISTED_REJECTIONS {
            self.unmapped_list.push(u);
        }
    }

    fn reject(&mut self, r: Rejection) {
        self.rejected += 1;
        if self.rejections.len() < MAX_LISTED_REJECTIONS {
            self.rejections.push(r);
        }
    }
}

type ObsIdentity = (String, Role, String, Option<i64>, Option<String>);
type MemIdentity = (String, Option<String>, Option<String>, Option<i64>);

/// A checked observation, ready for the writer.
struct ObsPlan {
    event: Observed,
    redactions: BTreeMap<String, usize>,
}

/// A checked memory, ready for the writer once its sources have ids.
struct MemPlan {
    line: u64,
    at: String,
    memory: NewMemory,
    prepared: Prepared,
    /// Resolved sources: ids already in the store, or indexes into the
    /// observations this import writes.
    sources: Vec<SourceRef>,
}

#[derive(Clone, Copy)]
enum SourceRef {
    Stored(ObservationId),
    Planned(usize),
}

impl Engine {
    /// Imports `parsed` (see [`ImportFormat::parse_for`]) into `ns` (a
    /// record that names its own namespace, as a LangGraph item does, into
    /// that one): every record is checked first, then observations and
    /// memories are written in group commits of `opts.batch` (per
    /// namespace, observations first, so memories can cite them; each kind
    /// in input order). What the reader could not map is listed in the
    /// summary's `unmapped_list`.
    ///
    /// The two guarantees:
    ///
    /// * **Nothing half-written.** Every record is read and checked against the
    ///   engine's input rules and the store's state (sources resolved, safety
    ///   stage run) before anything is written. With [`OnError::Abort`] one bad
    ///   record means nothing is written at all; with [`OnError::Skip`] the bad
    ///   records are reported and each good one is written exactly once.
    ///   (A failure of the disk while writing stops the import with the error,
    ///   like any write; what was acknowledged before stays.)
    /// * **Idempotent.** A record whose identity is already in the namespace is
    ///   a duplicate and is not written again, so running the same import twice
    ///   writes nothing the second time. An observation's identity is (session,
    ///   role, text after redaction, time, source); a memory's is (content
    ///   after redaction, normalised as exact duplicates are, slot key, session,
    ///   time), matched against every version the namespace holds — active,
    ///   superseded or archived — so a keyed update that was later replaced is
    ///   not written again either. Forgotten items are gone from the store, so
    ///   importing them again writes them again.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a batch size above `max_batch`;
    /// [`Error::Poisoned`] / [`Error::Closed`] / [`Error::Embedder`] /
    /// storage errors from a write (what was acknowledged before stays).
    /// Bad records are not errors: they are listed in the summary.
    pub fn import(&self, ns: &Namespace, parsed: Parsed, opts: &ImportOptions) -> Result<ImportSummary> {
        let max = self.config().max_batch;
        let batch = match opts.batch {
            0 => DEFAULT_IMPORT_BATCH.min(max),
            n if n > max => return Err(Error::invalid("batch", format!("{n} records, at most {max} allowed"))),
            n => n,
        };
        let mut sum = ImportSummary { read: parsed.read(), dry_run: opts.dry_run, ..ImportSummary::default() };
        for r in parsed.rejected {
            sum.reject(r);
        }
        for u in parsed.unmapped {
            sum.unmap(u);
        }
        // Records go to the namespace they name (LangGraph items), else to
        // `ns`; every group is checked before any is written.
        let mut groups: Vec<(Namespace, Vec<Located>)> = Vec::new();
        let mut group_of: HashMap<Namespace, usize> = HashMap::new();
        for r in parsed.records {
            let target = r.namespace.clone().unwrap_or_else(|| ns.clone());
            let i = *group_of.entry(target.clone()).or_insert_with(|| {
                groups.push((target, Vec::new()));
                groups.len() - 1
            });
            if let Some((_, g)) = groups.get_mut(i) {
                g.push(r);
            }
        }
        let mut plans = Vec::with_capacity(groups.len());
        for (target, records) in groups {
            let (obs, mems) = self.plan_import(&target, records, &mut sum)?;
            plans.push((target, obs, mems));
        }
        sum.rejections.sort_by_key(|r| r.line);
        let n_obs: usize = plans.iter().map(|(_, o, _)| o.len()).sum();
        let n_mems: usize = plans.iter().map(|(_, _, m)| m.len()).sum();
        if opts.on_error == OnError::Abort && sum.rejected > 0 {
            sum.aborted = true;
            sum.last_seq = self.shared().state.read().visible;
            return Ok(sum);
        }
        if opts.dry_run {
            sum.observations_written = n_obs as u64;
            sum.memories_written = n_mems as u64;
            sum.last_seq = self.shared().state.read().visible;
            return Ok(sum);
        }
        let total = (n_obs + n_mems) as u64;
        let mut done = 0u64;
        let tick = |done: u64| {
            if let Some(p) = &opts.progress {
                p(ImportProgress { done, total });
            }
        };
        tick(0);
        for (target, obs, mems) in plans {
            self.write_group(&target, obs, mems, batch, &mut sum, &mut done, &tick)?;
        }
        sum.rejections.sort_by_key(|r| r.line);
        sum.last_seq = self.shared().state.read().visible;
        Ok(sum)
    }

    /// The writing phase for one namespace: observations, then memories
    /// citing them, in group commits of `batch`.
    #[allow(clippy::too_many_arguments)]
    fn write_group(
        &self,
        ns: &Namespace,
        obs_plans: Vec<ObsPlan>,
        mem_plans: Vec<MemPlan>,
        batch: usize,
        sum: &mut ImportSummary,
        done: &mut u64,
        tick: &dyn Fn(u64),
    ) -> Result<()> {
        let mut obs_ids = Vec::with_capacity(obs_plans.len());
        let mut obs_plans = obs_plans.into_iter().peekable();
        while obs_plans.peek().is_some() {
            let chunk: Vec<ObsPlan> = obs_plans.by_ref().take(batch).collect();
            let n = chunk.len() as u64;
            let mut ops = Vec::with_capacity(chunk.len());
            for p in chunk {
                add_counts(&mut sum.redactions, &p.redactions);
                ops.push(Op::Observe(p.event));
            }
            for r in self.run(ns, ops)? {
                match r? {
                    OpOutcome::Observed(id) => obs_ids.push(id),
                    other => return Err(Error::Storage(format!("unexpected outcome {other:?}").into())),
                }
            }
            sum.observations_written += n;
            *done += n;
            tick(*done);
        }

        let threshold = self.dedup_threshold();
        let mut mem_plans = mem_plans.into_iter().peekable();
        let mut chunks: Vec<Vec<MemPlan>> = Vec::new();
        while mem_plans.peek().is_some() {
            let chunk: Vec<MemPlan> = mem_plans.by_ref().take(batch).collect();
            chunks.push(
                chunk
                    .into_iter()
                    .map(|mut p| {
                        let ids = p.sources.iter().map(|s| match *s {
                            SourceRef::Stored(id) => id,
                            SourceRef::Planned(i) => obs_ids.get(i).copied().unwrap_or(ObservationId(0)),
                        });
                        p.memory = std::mem::take(&mut p.memory).sources(ids.collect::<Vec<_>>());
                        p
                    })
                    .collect(),
            );
        }
        // The next chunk is embedded while this one is written, so a remote
        // provider (or the model's threads) is kept busy through the group
        // commits. A provider that is down does not stop the import: its
        // memories are written without vectors and embedded when it
        // answers again (deferred embedding).
        // Per memory: its vector, `None` to embed it later, or why the
        // embedder refused its text (the record is rejected, the rest of
        // the chunk goes on).
        type Vectors = Vec<std::result::Result<Option<Vec<f32>>, String>>;
        let embed = |chunk: &[MemPlan]| -> Result<Vectors> {
            if !self.embedder().available() {
                return Ok(chunk.iter().map(|_| Ok(None)).collect());
            }
            let pairs: Vec<(&NewMemory, &Prepared)> = chunk.iter().map(|p| (&p.memory, &p.prepared)).collect();
            match self.vectors_for(&pairs) {
                Ok(v) => Ok(v.into_iter().map(|v| Ok(Some(v))).collect()),
                Err(Error::ProviderUnavailable { .. }) => Ok(chunk.iter().map(|_| Ok(None)).collect()),
                // One text the embedder refuses (one past a provider's
                // context): each alone, so only that record is rejected.
                Err(Error::Embedder(_)) if chunk.len() > 1 => Ok(pairs
                    .iter()
                    .map(|pair| match self.vectors_for(std::slice::from_ref(pair)) {
                        Ok(mut v) => Ok(v.pop()),
                        Err(Error::ProviderUnavailable { .. }) => Ok(None),
                        Err(e) => Err(e.to_string()),
                    })
                    .collect()),
                Err(e) => Err(e),
            }
        };
        std::thread::scope(|scope| -> Result<()> {
            let mut next = chunks.first().map(|c| scope.spawn(move || embed(c)));
            for (i, chunk) in chunks.iter().enumerate() {
                let vectors = match next.take() {
                    Some(h) => h.join().map_err(|_| Error::Embedder("the embedding thread panicked".into()))??,
                    None => Vec::new(),
                };
                next = chunks.get(i + 1).map(|c| scope.spawn(move || embed(c)));
                let n = chunk.len() as u64;
                if vectors.len() != chunk.len() {
                    return Err(Error::Embedder("too few vectors".into()));
                }
                let mut ops = Vec::with_capacity(chunk.len());
                let mut meta = Vec::with_capacity(chunk.len());
                for (p, v) in chunk.iter().zip(vectors) {
                    let vector = match v {
                        Ok(Some(v)) => Some(v),
                        // A caller's vector needs no provider.
                        Ok(None) => p.memory.vector.clone(),
                        Err(reason) => {
                            sum.reject(Rejection { line: p.line, at: p.at.clone(), reason });
                            continue;
                        }
                    };
                    ops.push(Op::Remember {
                        mem: pending_memory(&p.memory, &p.prepared),
                        vector,
                        dedup: p.memory.dedup,
                        threshold,
                    });
                    meta.push((p.line, p.at.clone(), &p.prepared));
                }
                for (r, (line, at, prepared)) in self.run(ns, ops)?.into_iter().zip(meta) {
                    match r {
                        Ok(OpOutcome::Remembered {
                            action: RememberAction::Duplicate | RememberAction::Unchanged,
                            ..
                        }) => {
                            sum.duplicates += 1;
                        }
                        Ok(OpOutcome::Remembered { .. }) => {
                            sum.memories_written += 1;
                            add_counts(&mut sum.redactions, &prepared.redactions);
                            sum.quarantined += u64::from(prepared.quarantine.is_some());
                        }
                        Ok(other) => return Err(Error::Storage(format!("unexpected outcome {other:?}").into())),
                        Err(e @ (Error::Poisoned(_) | Error::Closed | Error::Io(_) | Error::Storage(_))) => {
                            return Err(e)
                        }
                        Err(e) => sum.reject(Rejection { line, at, reason: e.to_string() }),
                    }
                }
                *done += n;
                tick(*done);
            }
            Ok(())
        })
    }

    /// The checking phase: every record against the input rules, the
    /// safety stage and the namespace's state; duplicates counted;
    /// rejections recorded in `sum`.
    fn plan_import(
        &self,
        ns: &Namespace,
        records: Vec<Located>,
        sum: &mut ImportSummary,
    ) -> Result<(Vec<ObsPlan>, Vec<MemPlan>)> {
        // The file's own records; what the namespace holds is looked up
        // per record through its indexes (`stored_*`), never read whole.
        let mut obs_seen: HashSet<ObsIdentity> = HashSet::new();
        let mut by_source: HashMap<String, Vec<SourceRef>> = HashMap::new();
        let mut mem_seen: HashSet<MemIdentity> = HashSet::new();
        let mut obs_plans: Vec<ObsPlan> = Vec::new();
        let mut memories: Vec<(u64, String, ImportMemory)> = Vec::new();
        // Observations first: memories may cite one that comes later in the file.
        for Located { line, at, record, .. } in records {
            match record {
                ImportRecord::Memory(m) => memories.push((line, at, m)),
                ImportRecord::Observation(o) => match self.check_observation(o) {
                    Err(e) => sum.reject(Rejection { line, at, reason: e.to_string() }),
                    Ok(plan) => {
                        let e = &plan.event;
                        let id: ObsIdentity = (
                            crate::canonical_id(&e.session).into_owned(),
                            e.role,
                            e.text.clone(),
                            e.event_time.map(|t| t.timestamp_micros()),
                            id_form(&e.source),
                        );
                        if self.stored_observation(ns, &id) || !obs_seen.insert(id) {
                            sum.duplicates += 1;
                            continue;
                        }
                        if let Some(s) = &e.source {
                            by_source.entry(s.clone()).or_default().push(SourceRef::Planned(obs_plans.len()));
                        }
                        obs_plans.push(plan);
                    }
                },
            }
        }
        let mut mem_plans = Vec::with_capacity(memories.len());
        for (line, at, m) in memories {
            let sources = |s: &str| {
                let mut refs = self.stored_sources(ns, s);
                refs.extend(by_source.get(s).into_iter().flatten().copied());
                refs
            };
            match self.check_import_memory(m, &sources) {
                Err(e) => sum.reject(Rejection { line, at, reason: e.to_string() }),
                Ok((memory, prepared, sources)) => {
                    let id: MemIdentity = (
                        normalize_content(&prepared.text),
                        id_form(&memory.key),
                        id_form(&memory.session),
                        memory.event_time.map(|t| t.timestamp_micros()),
                    );
                    if self.stored_memory(ns, &id) || !mem_seen.insert(id) {
                        sum.duplicates += 1;
                        continue;
                    }
                    mem_plans.push(MemPlan { line, at, memory, prepared, sources });
                }
            }
        }
        Ok((obs_plans, mem_plans))
    }

    /// Whether the namespace holds an observation with identity `id`.
    fn stored_observation(&self, ns: &Namespace, id: &ObsIdentity) -> bool {
        let state = self.shared().state.read();
        let Some(st) = state.ns(ns) else {
            return false;
        };
        let (session, role, text, time, source) = id;
        let found = st.observations_with_text(text).any(|o| {
            o.role == *role
                && o.event_time.map(|t| t.timestamp_micros()) == *time
                && crate::canonical_id(&o.session) == session.as_str()
                && id_form(&o.source) == *source
        });
        found
    }

    /// The stored observations whose source reference is `source`, ids
    /// ascending.
    fn stored_sources(&self, ns: &Namespace, source: &str) -> Vec<SourceRef> {
        let state = self.shared().state.read();
        state
            .ns(ns)
            .map(|st| st.observations_with_source(source).map(|o| SourceRef::Stored(o.id)).collect())
            .unwrap_or_default()
    }

    /// Whether the namespace holds a memory version (any status) with
    /// identity `id`.
    fn stored_memory(&self, ns: &Namespace, id: &MemIdentity) -> bool {
        let state = self.shared().state.read();
        let Some(st) = state.ns(ns) else {
            return false;
        };
        let (norm, key, session, time) = id;
        let found = st.versions_with_text(norm).filter_map(|v| st.memories.get(&v)).any(|m| {
            id_form(&m.key) == *key
                && id_form(&m.session) == *session
                && m.event_time.map(|t| t.timestamp_micros()) == *time
        });
        found
    }

    fn check_observation(&self, o: ImportObservation) -> Result<ObsPlan> {
        self.check_text("text", &o.text)?;
        check_short("session", &o.session, MAX_SESSION_BYTES, false)?;
        if let Some(s) = &o.source {
            check_short("source", s, MAX_SOURCE_BYTES, false)?;
            self.refuse_personal_identifier("source", s, None)?;
        }
        self.refuse_personal_identifier("session", &o.session, None)?;
        let p = self.prepare_text(&o.text, None, false)?;
        Ok(ObsPlan {
            event: Observed {
                session: o.session,
                role: o.role.unwrap_or(Role::User),
                text: p.text,
                event_time: o.time,
                source: o.source,
            },
            redactions: p.redactions,
        })
    }

    fn check_import_memory(
        &self,
        m: ImportMemory,
        by_source: &dyn Fn(&str) -> Vec<SourceRef>,
    ) -> Result<(NewMemory, Prepared, Vec<SourceRef>)> {
        let mut sources = Vec::new();
        for s in &m.sources {
            let refs = by_source(s);
            if refs.is_empty() {
                return Err(Error::invalid(
                    "sources",
                    format!("{s:?} is the source of no observation in this import or the namespace"),
                ));
            }
            sources.extend(refs);
        }
        let mut n = NewMemory::new(m.content);
        if let Some(k) = m.kind {
            n = n.kind(k.parse()?);
        }
        n.tier = m.tier;
        n.importance = m.importance;
        n.entities = m.entities;
        n.key = m.key;
        n.session = m.session;
        n.event_time = m.time;
        n.source_ref = m.source_ref;
        n.vector = m.vector;
        let prepared = self.check_memory(&n)?;
        Ok((n, prepared, sources))
    }
}

fn add_counts(total: &mut BTreeMap<String, usize>, add: &BTreeMap<String, usize>) {
    for (k, v) in add {
        *total.entry(k.clone()).or_default() += v;
    }
}

/// An identifier as import identities compare it: in its canonical form
/// ([`crate::canonical_id`]), so a record whose session, source or key is
/// written in another Unicode form is the same record.
fn id_form(s: &Option<String>) -> Option<String> {
    s.as_deref().map(|s| crate::canonical_id(s).into_owned())
}
