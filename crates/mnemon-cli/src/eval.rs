//! `mnemon eval`: recall quality on public benchmarks, with the engine as
//! the backend (one namespace per unit, every doc an episode memory).

use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Args;
use mnemon::embed::{EmbedKind, Embedder};
use mnemon::{
    recall::RecallMode, recall::Weights, DedupMode, Engine, Kind, MemoryId, Namespace, NewMemory, RecallOptions,
    Result, Tier,
};
use mnemon_eval::{self as eval, Backend, Dataset, Doc, RunOptions, SplitFilter, VectorCache};

use crate::commands::load_embedder;
use crate::Cli;

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// locomo, longmemeval, madial, crosslingual or everyday.
    dataset: String,
    /// The data file (LoCoMo JSON, LongMemEval .jsonl.gz, cross-lingual
    /// or everyday JSON) or directory (MADial). Required except for
    /// crosslingual and everyday, which use the sets built into mnemon when
    /// it is left out.
    path: Option<PathBuf>,
    /// dev, test or all (splits from SPLITS.md); dev and test are always
    /// reported apart as well.
    #[arg(long, default_value = "all")]
    split: String,
    /// dense, lexical or hybrid; comma-separated to compare in one run.
    /// `hybrid@0.6` sets the cosine weight of that run.
    #[arg(long, default_value = "hybrid")]
    mode: String,
    /// Embed each doc together with this many preceding docs of its session
    /// (the text stored and searched lexically stays the doc alone).
    #[arg(long, default_value_t = 0)]
    context_docs: usize,
    /// LongMemEval dev question ids (default: longmemeval_s_dev100_ids.txt next to PATH).
    #[arg(long)]
    dev_ids: Option<PathBuf>,
    /// Evaluate at most N units (samples / questions / users), spread over
    /// the set: of the units the split admits, those at positions ⌊i·M/N⌋
    /// (M of them, i = 0..N), in data order. When these leave a question
    /// category unasked (LoCoMo category, LongMemEval question type;
    /// abstention questions not counted), a chosen unit whose categories
    /// the others ask too is swapped for the nearest unit that asks it, so
    /// with N at least the number of categories every one is asked. The
    /// report lists the units chosen. (everyday: the first N scenarios.)
    #[arg(long)]
    limit: Option<usize>,
    /// Write every figure as JSON to this file, rewritten (atomically) as
    /// each mode finishes, so a run stopped part-way keeps the modes done.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Weight of cosine in the hybrid score (0–1).
    #[arg(long)]
    dense_weight: Option<f32>,
    /// How hybrid recall scales cosine: auto (the embedder's choice), raw or minmax.
    #[arg(long, default_value = "auto")]
    similarity_norm: String,
    /// Weight of the session score in every mode (0–1; default the engine's,
    /// 0.5): a hit's score is blended with the mean of the best two scores of
    /// its session among the candidates.
    #[arg(long)]
    session_weight: Option<f32>,
    /// Weight of time proximity (0–1; default the engine's): memories from
    /// the span of time a question names ("two weeks ago", "in March"),
    /// read relative to when it is asked (LongMemEval `question_date`),
    /// score up to this much more.
    #[arg(long)]
    time_weight: Option<f32>,
    /// Added to the cosine of memories written in another script than the
    /// question (CJK against not) before fusion, for questions in either
    /// script (-1–1; default the embedder's: 0 except for
    /// multilingual-e5-small on Chinese questions).
    #[arg(long, allow_hyphen_values = true)]
    cross_script_offset: Option<f32>,
    /// Abstain as `context` does: return nothing for a query when its top
    /// 10 hits do not reach the floors. `auto`: the embedder's context
    /// floors; `B` or `B,N`: no hit with a cosine of at least B, or (N) the
    /// query names something the unit never mentions and no hit reaches N.
    /// Queries that return nothing are counted per kind (answerable,
    /// unanswerable, unrelated). Not applied in lexical mode, which has no
    /// cosine; the report says so for that mode.
    #[arg(long, value_name = "auto|B[,N]")]
    abstain: Option<String>,
    /// Also ask each unit up to 50 questions of the unit before it, which
    /// nothing in it answers, and count those that return nothing.
    #[arg(long)]
    unrelated: bool,
    /// Write every query's hits with their score parts (cosine, raw BM25,
    /// fused score) as JSON lines to this file, one line per query and mode.
    #[arg(long, value_name = "FILE")]
    explain_out: Option<PathBuf>,
    /// Hits asked of the engine per query (default: the data set's, 50 for
    /// LoCoMo, 1000 for LongMemEval, 10 for MADial and crosslingual); at
    /// least the largest k.
    #[arg(long)]
    depth: Option<usize>,
    /// Keep vectors in DIR (one file per model, text digests only) so a
    /// later run embeds only texts it has not seen.
    #[arg(long, value_name = "DIR")]
    vector_cache: Option<PathBuf>,
    /// LongMemEval only: instead of recall metrics, render the `context`
    /// block of BUDGET tokens for every knowledge-update and
    /// single-session-preference question (abstention questions left out),
    /// once with the profile part at its default share and once with it
    /// off (same budget), and report how many blocks hold the reference
    /// answer. Each user turn is also run through the rule extractor
    /// (`mnemon::rule_extract`) as it is ingested, so that slot-keyed
    /// memories, the profile's entries, exist.
    #[arg(long, value_name = "BUDGET")]
    context_block: Option<usize>,
    /// No progress. Otherwise progress goes to standard error: a bar on a
    /// terminal, else (under nohup, or redirected) a line per tenth of the
    /// units or per 30 s with the mode, units done, elapsed time and ETA.
    #[arg(long)]
    quiet: bool,
}

/// The engine as an evaluation backend.
struct EngineBackend {
    engine: Engine,
    embedder: Arc<dyn Embedder>,
    opts: RecallOptions,
    /// `--abstain`: the floors the top 10 hits must reach.
    abstain: Option<mnemon::recall::Abstain>,
    ids: HashMap<String, HashMap<MemoryId, String>>,
    embed_secs: f64,
    write_secs: f64,
    docs: usize,
    query_embed_secs: f64,
    context_tokens: Vec<usize>,
    /// Vectors by text, shared by the modes of one run so each text is
    /// embedded once (passages and queries kept apart).
    cache: Arc<Mutex<VectorCache>>,
    context_docs: usize,
    /// Where `--explain-out` lines go, with the mode they are for.
    explain: Option<(String, Arc<Mutex<std::io::BufWriter<std::fs::File>>>)>,
}

impl EngineBackend {
    /// A backend over `engine` with nothing measured yet, no abstention and
    /// no explain output.
    fn new(
        engine: Engine,
        embedder: Arc<dyn Embedder>,
        opts: RecallOptions,
        cache: Arc<Mutex<VectorCache>>,
        context_docs: usize,
    ) -> Self {
        EngineBackend {
            engine,
            embedder,
            opts,
            abstain: None,
            ids: HashMap::new(),
            embed_secs: 0.0,
            write_secs: 0.0,
            docs: 0,
            query_embed_secs: 0.0,
            context_tokens: Vec::new(),
            cache,
            context_docs,
            explain: None,
        }
    }

    fn passages(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut cache = self.cache.lock().map_err(|_| mnemon::Error::Storage("cache lock".into()))?;
        let mut missing: Vec<&str> =
            texts.iter().copied().filter(|t| cache.get(EmbedKind::Passage, t).is_none()).collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let t0 = Instant::now();
            let vs = self.embedder.embed(&missing, EmbedKind::Passage)?;
            self.embed_secs += t0.elapsed().as_secs_f64();
            for (t, v) in missing.into_iter().zip(vs) {
                cache.put(EmbedKind::Passage, t, v)?;
            }
            cache.flush()?;
        }
        Ok(texts.iter().map(|t| cache.get(EmbedKind::Passage, t).cloned().unwrap_or_default()).collect())
    }

    fn query_vector(&mut self, q: &str) -> Result<Vec<f32>> {
        let mut cache = self.cache.lock().map_err(|_| mnemon::Error::Storage("cache lock".into()))?;
        if let Some(v) = cache.get(EmbedKind::Query, q) {
            return Ok(v.clone());
        }
        let t0 = Instant::now();
        let v = self.embedder.embed(&[q], EmbedKind::Query)?.pop().unwrap_or_default();
        self.query_embed_secs += t0.elapsed().as_secs_f64();
        cache.put(EmbedKind::Query, q, v.clone())?;
        Ok(v)
    }
}

fn ns_for(unit: &str) -> Result<Namespace> {
    let clean: String = unit
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "_.:@-".contains(c) { c } else { '_' })
        .take(128)
        .collect();
    Namespace::new(clean)
}

impl Backend for EngineBackend {
    fn ingest(&mut self, unit: &str, docs: &[Doc]) -> Result<()> {
        let ns = ns_for(unit)?;
        let mut map = HashMap::new();
        // Sessions are stored under opaque names (`s0`, `s1`, … in order of
        // first appearance): the data sets' own ids are sometimes all digits
        // (LongMemEval `08921633`), which the identifier rules refuse as
        // possible phone numbers.
        let mut sessions: HashMap<&str, String> = HashMap::new();
        for d in docs {
            let n = sessions.len();
            sessions.entry(d.session.as_str()).or_insert_with(|| format!("s{n}"));
        }
        let embed_texts: Vec<String> = (0..docs.len())
            .map(|i| {
                let first = i.saturating_sub(self.context_docs);
                let ctx: Vec<&str> =
                    (first..i).filter(|&j| docs[j].session == docs[i].session).map(|j| docs[j].text.as_str()).collect();
                if ctx.is_empty() {
                    docs[i].text.clone()
                } else {
                    format!("{}\n{}", ctx.join("\n"), docs[i].text)
                }
            })
            .collect();
        for (ci, chunk) in docs.chunks(512).enumerate() {
            let texts: Vec<&str> = embed_texts[ci * 512..ci * 512 + chunk.len()].iter().map(String::as_str).collect();
            let vectors = self.passages(&texts)?;
            let batch: Vec<NewMemory> = chunk
                .iter()
                .zip(vectors)
                .enumerate()
                .map(|(k, (d, v))| {
                    // Benchmark files hold a few control characters
                    // (LongMemEval_S: 13 user turns) that the input rules
                    // refuse; clean them rather than fail the run.
                    let mut m = NewMemory::new(mnemon::text::scrub(&d.text))
                        .kind(Kind::Episode)
                        .tier(Tier::LongTerm)
                        .session(sessions[d.session.as_str()].clone())
                        .source_ref(format!("doc{}", ci * 512 + k))
                        .dedup(DedupMode::Off);
                    // A text with nothing the embedder reads (the hashing
                    // embedder on a turn of only emoji or punctuation) has a
                    // zero vector, which the engine refuses from a caller:
                    // the engine then embeds the text itself, as any write
                    // without a vector.
                    if v.iter().any(|x| *x != 0.0) {
                        m = m.vector(v);
                    }
                    if let Some(t) = d.time {
                        m = m.event_time(t);
                    }
                    m
                })
                .collect();
            let t1 = Instant::now();
            let results = self.engine.remember_batch(&ns, batch)?;
            self.write_secs += t1.elapsed().as_secs_f64();
            for (d, r) in chunk.iter().zip(results) {
                map.insert(r?.id, d.id.clone());
            }
        }
        self.docs += docs.len();
        self.ids.insert(unit.to_string(), map);
        Ok(())
    }

    fn search(&mut self, unit: &str, query: &str, k: usize) -> Result<Vec<String>> {
        self.search_at(unit, query, k, None)
    }

    fn search_at(&mut self, unit: &str, query: &str, k: usize, time: Option<DateTime<Utc>>) -> Result<Vec<String>> {
        let ns = ns_for(unit)?;
        let query: String = mnemon::text::scrub(query).chars().take(4000).collect();
        let mut opts = RecallOptions {
            top_k: k.clamp(1, 1000),
            reference_time: time.map(|t| t.fixed_offset()),
            ..self.opts.clone()
        };
        // A question with no known time gets no time term: read against
        // the day of the run, the figures would change with it.
        if time.is_none() {
            opts.weights.time = 0.0;
        }
        let mut hits = if opts.mode == RecallMode::Lexical {
            self.engine.recall_with_vector(&ns, &query, &[], &opts)?
        } else {
            let qv = self.query_vector(&query)?;
            self.engine.recall_with_vector(&ns, &query, &qv, &opts)?
        };
        if let Some(a) = self.abstain.filter(|_| opts.mode != RecallMode::Lexical) {
            let top = hits.len().min(10);
            if a.abstains(&query, &mut hits[..top], || self.engine.unknown_names(&ns, &query)) {
                hits.clear();
            }
        }
        if let Some((mode, out)) = &self.explain {
            let map = self.ids.get(unit);
            let rows: Vec<_> = hits
                .iter()
                .filter_map(|h| {
                    let id = map.and_then(|m| m.get(&h.memory.id))?;
                    Some(serde_json::json!([id, h.explain.similarity, h.explain.lexical, h.score]))
                })
                .collect();
            let query_idf = hits.first().map_or(0.0, |h| h.explain.query_idf);
            let line =
                serde_json::json!({"mode": mode, "unit": unit, "query": query, "query_idf": query_idf, "hits": rows});
            let mut out = out.lock().map_err(|_| mnemon::Error::Storage("explain lock".into()))?;
            writeln!(out, "{line}")?;
        }
        let top10: Vec<_> = hits.iter().take(10).cloned().collect();
        self.context_tokens.push(mnemon::render_context(&top10, usize::MAX).tokens);
        let map = self.ids.get(unit);
        Ok(hits.iter().filter_map(|h| map.and_then(|m| m.get(&h.memory.id)).cloned()).collect())
    }

    fn finish_unit(&mut self, unit: &str) -> Result<()> {
        self.ids.remove(unit);
        Ok(())
    }
}

/// `B` or `B,N` of `--abstain`: cosine floors in -1..=1 (N defaults to B).
fn parse_floors(v: &str) -> Result<mnemon::recall::Abstain> {
    let bad = || mnemon::Error::invalid("abstain", format!("{v:?}: expected auto, B or B,N with cosines in -1..=1"));
    let mut parts = v.split(',').map(|p| p.trim().parse::<f32>().ok().filter(|f| (-1.0..=1.0).contains(f)));
    let below = parts.next().flatten().ok_or_else(bad)?;
    let unknown_name_below = match parts.next() {
        None => below,
        Some(n) => n.ok_or_else(bad)?,
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(mnemon::recall::Abstain { below, unknown_name_below })
}

pub fn run(cli: &Cli, args: &EvalArgs) -> Result<()> {
    if args.dataset == "everyday" {
        return everyday(cli, args);
    }
    let dataset: Dataset = args.dataset.parse()?;
    let split: SplitFilter = args.split.parse()?;
    let dev_ids = match (&args.dev_ids, dataset) {
        (Some(p), _) => Some(p.clone()),
        (None, Dataset::LongMemEval) => args
            .path
            .as_deref()
            .and_then(|p| p.parent())
            .map(|d| d.join("longmemeval_s_dev100_ids.txt"))
            .filter(|p| p.exists()),
        _ => None,
    };
    let t_load = Instant::now();
    let units = dataset.load_or_embedded(args.path.as_deref(), dev_ids.as_deref())?;
    let source = match &args.path {
        Some(p) => p.display().to_string(),
        None => format!("the built-in {dataset} set"),
    };
    eprintln!("loaded {} units from {source} in {:.1}s", units.len(), t_load.elapsed().as_secs_f64());
    let embedder = load_embedder(cli)?;
    eprintln!("embedder: {}", mnemon::embed::describe(embedder.as_ref()));
    let cache = match &args.vector_cache {
        Some(dir) => {
            let c = VectorCache::open(dir, embedder.model_id())?;
            if let Some(p) = c.path() {
                eprintln!("vector cache: {} ({} vectors)", p.display(), c.loaded);
                if c.torn_tail_bytes > 0 {
                    eprintln!(
                        "warning: vector cache: skipped a torn last record ({} bytes, from a run stopped mid-write)",
                        c.torn_tail_bytes
                    );
                }
            }
            c
        }
        None => VectorCache::in_memory(),
    };
    let cache = Arc::new(Mutex::new(cache));
    if let Some(budget) = args.context_block {
        return context_block(cli, args, &units, split, budget, embedder, cache);
    }
    let mut all = serde_json::Map::new();
    let explain_file = match &args.explain_out {
        Some(p) => Some(Arc::new(Mutex::new(std::io::BufWriter::new(std::fs::File::create(p)?)))),
        None => None,
    };
    for spec in args.mode.split(',') {
        let spec = spec.trim();
        let (mode_str, weight) = match spec.split_once('@') {
            Some((m, w)) => (
                m,
                Some(w.parse::<f32>().map_err(|_| mnemon::Error::invalid("mode", format!("bad weight in {spec:?}")))?),
            ),
            None => (spec, args.dense_weight),
        };
        let mode: RecallMode = mode_str.parse()?;
        // BM25 alone needs no model: the store gets the hashing embedder's
        // vectors (cheap, never consulted) instead of the model's.
        let (run_embedder, run_cache, run_model): (Arc<dyn Embedder>, _, String) = if mode == RecallMode::Lexical {
            let h: Arc<dyn Embedder> = Arc::new(mnemon::embed::HashingEmbedder::default());
            (h, Arc::new(Mutex::new(VectorCache::in_memory())), "none (BM25 only)".to_string())
        } else {
            (embedder.clone(), cache.clone(), embedder.model_id().to_string())
        };
        let dir = tempfile::tempdir()?;
        let engine = Engine::builder(dir.path().join("store"))
            .embedder(run_embedder.clone())
            .max_content_bytes(1 << 20)
            .open()?;
        let mut weights = Weights { similarity_norm: args.similarity_norm.parse()?, ..Weights::default() };
        if let Some(w) = weight {
            if !(0.0..=1.0).contains(&w) {
                return Err(mnemon::Error::invalid("dense_weight", "must be in 0..=1"));
            }
            weights.dense = w;
        }
        if let Some(w) = args.session_weight {
            if !(0.0..=1.0).contains(&w) {
                return Err(mnemon::Error::invalid("session_weight", "must be in 0..=1"));
            }
            weights.session = w;
        }
        if let Some(o) = args.cross_script_offset {
            if !(-1.0..=1.0).contains(&o) {
                return Err(mnemon::Error::invalid("cross_script_offset", "must be in -1..=1"));
            }
            weights.cross_script = Some(o);
        }
        if let Some(w) = args.time_weight {
            if !(0.0..=1.0).contains(&w) {
                return Err(mnemon::Error::invalid("time_weight", "must be in 0..=1"));
            }
            weights.time = w;
        }
        let opts = RecallOptions { mode, weights, record_access: false, ..RecallOptions::default() };
        let mut backend = EngineBackend {
            abstain: match args.abstain.as_deref() {
                None => None,
                Some("auto") => Some(run_embedder.context_floor()),
                Some(v) => Some(parse_floors(v)?),
            },
            explain: explain_file.clone().map(|f| (spec.to_string(), f)),
            ..EngineBackend::new(engine, run_embedder.clone(), opts, run_cache, args.context_docs)
        };
        let mut ropts = RunOptions::for_dataset(dataset);
        ropts.limit = args.limit;
        ropts.split = split;
        if let Some(d) = args.depth {
            ropts.retrieve_depth = d;
        }
        ropts.progress = !args.quiet;
        ropts.label = spec.to_string();
        // With --explain-out, the JSON also holds each query's gold, in the
        // same order as the explain lines.
        ropts.record_queries = args.explain_out.is_some();
        ropts.unrelated = args.unrelated;
        let report = eval::run(dataset, &units, &mut backend, &ropts)?;
        // With --json, standard output carries only the JSON document
        // (printed at the end); the tables go to standard error.
        let say = |text: &str| if cli.json { eprintln!("{text}") } else { println!("{text}") };
        say(&format!("\n### {} — mode {spec} — embedder {run_model}\n", dataset));
        say(&report.render_table());
        // `--abstain` works on cosines; lexical mode has none and never
        // abstains. Say so rather than let that mode's figures differ
        // silently from the others'.
        let abstain_note = match (&args.abstain, mode) {
            (None, _) => None,
            (Some(_), RecallMode::Lexical) => Some("not applied to lexical mode (no cosine)".to_string()),
            (Some(_), _) => backend.abstain.map(|a| {
                format!(
                    "applied (top-10 cosine floor {}, {} when the query names something the unit never mentions)",
                    a.below, a.unknown_name_below
                )
            }),
        };
        let abstain_applied = args.abstain.is_some() && mode != RecallMode::Lexical;
        if let Some(note) = &abstain_note {
            say(&format!("abstention: {note}"));
        }
        let docs = backend.docs.max(1) as f64;
        let ingest_all = backend.embed_secs + backend.write_secs;
        let mut toks = backend.context_tokens.clone();
        toks.sort_unstable();
        let median_tokens = toks.get(toks.len() / 2).copied().unwrap_or(0);
        say(&format!(
            "ingest: {} docs; {:.0} docs/s with embedding ({:.1}s), {:.0} docs/s without ({:.1}s write only); \
             query embedding {:.1}s total; rendered context at top-10: median {median_tokens} tokens",
            backend.docs,
            docs / ingest_all.max(1e-9),
            ingest_all,
            docs / backend.write_secs.max(1e-9),
            backend.write_secs,
            backend.query_embed_secs,
        ));
        let mut entry = serde_json::to_value(&report).map_err(|e| mnemon::Error::Storage(e.to_string().into()))?;
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(
                "engine".into(),
                serde_json::json!({
                    "embedder": run_model,
                    "docs": backend.docs,
                    "embed_seconds": backend.embed_secs,
                    "write_seconds": backend.write_secs,
                    "docs_per_second_with_embedding": docs / ingest_all.max(1e-9),
                    "docs_per_second_without_embedding": docs / backend.write_secs.max(1e-9),
                    "query_embed_seconds": backend.query_embed_secs,
                    "context_tokens_top10_median": median_tokens,
                    "dense_weight": weights.dense,
                    "session_weight": weights.session,
                    "time_weight": weights.time,
                    "cross_script_offset": match weights.cross_script {
                        Some(o) => serde_json::json!({"cjk_query": o, "other_query": o}),
                        None => serde_json::json!({
                            "cjk_query": embedder.cross_script_offset(true),
                            "other_query": embedder.cross_script_offset(false),
                        }),
                    },
                    "abstain": backend.abstain,
                    "abstain_applied": abstain_applied,
                    "abstain_note": abstain_note,
                    "similarity_norm": match weights.similarity_norm {
                        mnemon::recall::SimilarityNorm::Auto => embedder.similarity_norm(),
                        n => n,
                    },
                }),
            );
        }
        all.insert(spec.to_string(), entry);
        if let Some(f) = &explain_file {
            f.lock().map_err(|_| mnemon::Error::Storage("explain lock".into()))?.flush()?;
        }
        backend.engine.close()?;
        if let Some(out) = &args.out {
            let text = serde_json::to_string_pretty(&serde_json::Value::Object(all.clone()))
                .map_err(|e| mnemon::Error::Storage(e.to_string().into()))?;
            write_atomically(out, &text)?;
        }
    }
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(all))
        .map_err(|e| mnemon::Error::Storage(e.to_string().into()))?;
    if let Some(out) = &args.out {
        eprintln!("wrote {}", out.display());
    }
    if cli.json {
        println!("{text}");
    }
    Ok(())
}

/// Writes `text` to `path` through a temporary file in the same directory
/// and a rename, so a reader (or a run killed meanwhile) sees the old file
/// or the new one, never half of one.
fn write_atomically(path: &std::path::Path, text: &str) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| mnemon::Error::from(e.error))?;
    Ok(())
}

/// One question's blocks, profile on and off.
struct BlockOutcome {
    category: String,
    on: mnemon::ContextBlock,
    off: mnemon::ContextBlock,
    answer: String,
}

/// `--context-block`: the share of LongMemEval knowledge-update and
/// single-session-preference questions whose answer is in the `context`
/// block, profile part on against off.
fn context_block(
    cli: &Cli,
    args: &EvalArgs,
    units: &[eval::Unit],
    split: SplitFilter,
    budget: usize,
    embedder: Arc<dyn Embedder>,
    cache: Arc<Mutex<VectorCache>>,
) -> Result<()> {
    const CATEGORIES: [&str; 2] = ["knowledge-update", "single-session-preference"];
    let path = match (&args.path, args.dataset.parse::<Dataset>()?) {
        (Some(p), Dataset::LongMemEval) => p.clone(),
        _ => return Err(mnemon::Error::invalid("context_block", "needs the longmemeval data file")),
    };
    if budget == 0 {
        return Err(mnemon::Error::invalid("context_block", "the budget must be at least 1"));
    }
    let answers = eval::load_longmemeval_answers(&path)?;
    let dir = tempfile::tempdir()?;
    let engine =
        Engine::builder(dir.path().join("store")).embedder(embedder.clone()).max_content_bytes(1 << 20).open()?;
    let mut backend = EngineBackend::new(
        engine,
        embedder.clone(),
        RecallOptions { record_access: false, ..RecallOptions::default() },
        cache,
        args.context_docs,
    );
    let asked = units.iter().filter(|u| {
        u.queries.iter().any(|q| !q.abstention && q.category.as_deref().is_some_and(|c| CATEGORIES.contains(&c)))
    });
    let chosen: Vec<&eval::Unit> = eval::select_units(asked, split, args.limit);
    let mut outcomes = Vec::new();
    let mut extracted = 0usize;
    let mut keyed = 0usize;
    for (i, unit) in chosen.iter().enumerate() {
        if !args.quiet {
            eprint!("\r{}/{} {}", i + 1, chosen.len(), unit.name);
        }
        backend.ingest(&unit.name, &unit.docs)?;
        let ns = ns_for(&unit.name)?;
        // The rule extractor over the user turns, in conversation order, as
        // `observe_with_rules` runs it: a later "my X is Y" supersedes the
        // earlier value of its key.
        for d in &unit.docs {
            for c in mnemon::rule_extract(&mnemon::text::scrub(&d.text)) {
                let mut m = NewMemory::new(c.content).kind(c.kind).tier(Tier::LongTerm).importance(c.importance);
                if let Some(k) = c.key {
                    m = m.key(k);
                    keyed += 1;
                }
                if let Some(t) = d.time {
                    m = m.event_time(t);
                }
                // A candidate the engine refuses (an identifier rule, a
                // length) is left out, as the extractor's own caller does.
                if backend.engine.remember(&ns, m).is_ok() {
                    extracted += 1;
                }
            }
        }
        for q in &unit.queries {
            let Some(category) = q.category.clone().filter(|c| !q.abstention && CATEGORIES.contains(&c.as_str()))
            else {
                continue;
            };
            let query: String = mnemon::text::scrub(&q.text).chars().take(4000).collect();
            let opts = |profile: f32| mnemon::ContextOptions {
                recall: RecallOptions { record_access: false, ..RecallOptions::default() },
                budget_tokens: budget,
                shares: mnemon::recall::PartShares { profile, ..mnemon::recall::PartShares::default() },
            };
            let on = backend.engine.context(&ns, &query, &opts(mnemon::recall::DEFAULT_PROFILE_SHARE))?;
            let off = backend.engine.context(&ns, &query, &opts(0.0))?;
            let answer = answers.get(&q.id).cloned().unwrap_or_default();
            outcomes.push(BlockOutcome { category, on, off, answer });
        }
        backend.finish_unit(&unit.name)?;
    }
    if !args.quiet {
        eprintln!();
    }
    let say = |text: &str| if cli.json { eprintln!("{text}") } else { println!("{text}") };
    say(&format!(
        "\n### longmemeval — context block of {budget} tokens, profile on (share {}) vs off — embedder {}\n",
        mnemon::recall::DEFAULT_PROFILE_SHARE,
        embedder.model_id()
    ));
    say(&format!("{} questions; rule extractor: {extracted} memories, {keyed} of them slot-keyed\n", outcomes.len()));
    say("| category | n | answer in block (on) | (off) | on only | off only | answer words (on) | (off) | profile entries | abstained |");
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut rows = Vec::new();
    for cat in CATEGORIES.iter().copied().chain(["all"]) {
        let xs: Vec<&BlockOutcome> = outcomes.iter().filter(|o| cat == "all" || o.category == cat).collect();
        if xs.is_empty() {
            continue;
        }
        let n = xs.len() as f64;
        let present = |b: &mnemon::ContextBlock, a: &str| eval::answer_present(a, &b.text);
        let on = xs.iter().filter(|o| present(&o.on, &o.answer)).count();
        let off = xs.iter().filter(|o| present(&o.off, &o.answer)).count();
        let on_only = xs.iter().filter(|o| present(&o.on, &o.answer) && !present(&o.off, &o.answer)).count();
        let off_only = xs.iter().filter(|o| !present(&o.on, &o.answer) && present(&o.off, &o.answer)).count();
        let words = |f: &dyn Fn(&BlockOutcome) -> &mnemon::ContextBlock| {
            let v: Vec<f64> = xs.iter().filter_map(|o| eval::answer_word_recall(&o.answer, &f(o).text)).collect();
            v.iter().sum::<f64>() / (v.len().max(1) as f64)
        };
        let (w_on, w_off) = (words(&|o| &o.on), words(&|o| &o.off));
        let profile = xs.iter().map(|o| o.on.profile).sum::<usize>() as f64 / n;
        let abstained = xs.iter().filter(|o| o.on.abstained).count();
        say(&format!(
            "| {cat} | {} | {:.3} ({on}) | {:.3} ({off}) | {on_only} | {off_only} | {w_on:.3} | {w_off:.3} | {profile:.1} | {abstained} |",
            xs.len(),
            on as f64 / n,
            off as f64 / n,
        ));
        rows.push(serde_json::json!({
            "category": cat, "questions": xs.len(), "answer_in_block_on": on, "answer_in_block_off": off,
            "on_only": on_only, "off_only": off_only, "answer_word_recall_on": w_on, "answer_word_recall_off": w_off,
            "mean_profile_entries": profile, "abstained": abstained,
        }));
    }
    let doc = serde_json::json!({
        "budget_tokens": budget,
        "profile_share": mnemon::recall::DEFAULT_PROFILE_SHARE,
        "embedder": embedder.model_id(),
        "extracted_memories": extracted,
        "slot_keyed": keyed,
        "rows": rows,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| mnemon::Error::Storage(e.to_string().into()))?;
    if let Some(out) = &args.out {
        write_atomically(out, &text)?;
        eprintln!("wrote {}", out.display());
    }
    if cli.json {
        println!("{text}");
    }
    backend.engine.close()
}

/// `mnemon eval everyday`: every scenario of the everyday-questions set on a
/// fresh store, scored on its `context` block ([`mnemon_eval::everyday`]).
/// Prints a table by split, language and kind, and the failed dev
/// scenarios with their blocks (test scenarios are counted only);
/// `--out` gets the figures and every outcome as JSON.
fn everyday(cli: &Cli, args: &EvalArgs) -> Result<()> {
    use mnemon_eval::everyday as ev;
    let split: SplitFilter = args.split.parse()?;
    let set = ev::load_everyday(args.path.as_deref())?;
    let embedder = load_embedder(cli)?;
    eprintln!("embedder: {}", mnemon::embed::describe(embedder.as_ref()));
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let chosen: Vec<&ev::Scenario> = set
        .scenarios
        .iter()
        .filter(|s| match split {
            SplitFilter::Dev => s.split == "dev",
            SplitFilter::Test => s.split == "test",
            SplitFilter::All => true,
        })
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
    for (i, s) in chosen.iter().enumerate() {
        let dir = tempfile::tempdir()?;
        let o = ev::run_scenario(s, &dir.path().join("store"), embedder.clone())?;
        if !args.quiet {
            eprintln!("[{}/{}] {} {}", i + 1, chosen.len(), o.id, if o.passed() { "ok" } else { "FAILED" });
        }
        outcomes.push(o);
    }
    for o in outcomes.iter().filter(|o| o.split == "dev" && !o.passed()) {
        let s = chosen.iter().find(|s| s.id == o.id).expect("ran it");
        println!("## {} ({}): {}", o.id, o.kind, s.question);
        if !o.missing.is_empty() {
            println!("missing: {}", o.missing.join(", "));
        }
        if !o.superseded_shown.is_empty() {
            println!("superseded shown: {}", o.superseded_shown.join(", "));
        }
        if o.order_kept < o.order_checked {
            println!("older value first");
        }
        if o.nothing_relevant && o.relevant_entries > 0 {
            println!("nothing relevant, yet {} relevant entries", o.relevant_entries);
        }
        println!("{}", o.block);
        println!("recall:");
        for h in &o.hits {
            println!("  {h}");
        }
        println!();
    }
    let groups = ev::summarise(&outcomes);
    println!("{}", ev::render_table(&groups));
    eprintln!("{} scenarios in {:.1}s", outcomes.len(), started.elapsed().as_secs_f64());
    if let Some(p) = &args.out {
        let v = serde_json::json!({
            "embedder": embedder.model_id(),
            "figures": groups,
            "outcomes": outcomes,
        });
        std::fs::write(p, serde_json::to_string_pretty(&v).map_err(|e| mnemon::Error::invalid("out", e.to_string()))?)?;
    }
    Ok(())
}
