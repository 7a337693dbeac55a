//! Retrieval evaluation on three public long-term-memory benchmarks and a
//! small cross-lingual set shipped with the crate.
//!
//! - **LoCoMo** (Maharana et al., ACL 2024): evidence recall@k over dialog
//!   turns and over sessions, per question category.
//! - **LongMemEval_S** (Wu et al., ICLR 2025): recall_any / recall_all /
//!   ndcg_any @k at session and turn level over a per-question haystack.
//! - **MADial-Bench zh** (NAACL 2025): memory recall@k and MRR@k for a
//!   dialogue prefix against the user's memories.
//! - **Cross-lingual** (`crosslingual.json`, embedded): one user's 40 English
//!   and 40 Chinese memories, each asked about by one question in the other
//!   language; recall@k and MRR@k per direction (`zh→en`, `en→zh`). Schema:
//!   `{"memories": [{"id", "lang", "text"}], "queries": [{"id", "lang",
//!   "text", "gold": [memory ids]}]}`, `lang` ∈ {`en`, `zh`}; see
//!   [`load_crosslingual`].
//!
//! Loaders ([`load_locomo`], [`load_longmemeval`], [`load_madial`],
//! [`load_crosslingual`]) turn the files into [`Unit`]s: a namespace's worth
//! of [`Doc`]s plus the [`Query`]s asked against it. [`run`] ingests each
//! unit into a [`Backend`], asks its queries, scores the rankings with the
//! official metrics ([`metrics`]) and returns a [`Report`] (JSON via serde,
//! text via [`Report::render_table`]).
//!
//! Unit names are valid [`mnemon::Namespace`] names (`locomo:conv-26`,
//! `lme:001be529`, `madial:user-1:dev`, `xling:dev`), so a backend may use
//! them directly.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use mnemon::{Error, Result};

mod answers;
mod crosslingual;
pub mod everyday;
mod locomo;
mod longmemeval;
mod madial;
pub mod metrics;
mod progress;
mod report;
mod run;
mod sample;
mod vectors;

pub use answers::{answer_present, answer_word_recall, load_longmemeval_answers, normalize_answer, ANSWER_STOP_WORDS};
pub use crosslingual::load_crosslingual;
pub use locomo::{clean_evidence, load_locomo, CleanedEvidence};
pub use longmemeval::load_longmemeval;
pub use madial::load_madial;
pub use report::{Counts, IngestStats, LatencyStats, MetricTable, QueryRecord, Report, SplitReport, TableRow};
pub use run::{run, RunOptions, LOCOMO_SESSION_K};
pub use sample::select_units;
pub use vectors::{
    encode_record as encode_vector_record, parse_records as parse_vector_records, VectorCache, VectorKey,
};

/// One retrievable unit handed to the backend (a dialog turn or a memory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Doc {
    /// Id unique within its [`Unit`]; what [`Backend::search`] returns.
    /// LoCoMo: the `dia_id` (`"D3:7"`). LongMemEval: `"<session_id>#<i>"`
    /// with `i` the 1-based index over all turns of the session (user and
    /// assistant, as the official turn ids count); a session id repeated in
    /// one haystack gets `"<session_id>~<n>#<i>"` for its n-th (≥ 2)
    /// occurrence. MADial: the memory id (`"17"`). Cross-lingual: the memory
    /// id (`"en-01"`).
    pub id: String,
    /// The text to index. LoCoMo: `"<speaker>: <text>"`, plus
    /// `" [shares <blip_caption>]"` for image turns. LongMemEval: the user
    /// turn's content. MADial: `"<event>（<scene>，<emotion>）"`.
    /// Cross-lingual: the memory's text.
    pub text: String,
    /// The session the doc belongs to. LoCoMo: `"session_<n>"`. LongMemEval:
    /// the haystack session id (shared by repeated occurrences). MADial and
    /// cross-lingual: the memory id (each memory its own episode).
    pub session: String,
    /// When it was said or happened (session date; the benchmarks give local
    /// times without a zone, read as UTC). `None` when the data has none.
    pub time: Option<DateTime<Utc>>,
    /// Who said it: the LoCoMo speaker name, `"user"` for LongMemEval, the
    /// MADial user's name when the dialogues reveal it.
    pub speaker: Option<String>,
}

/// Which split a unit or query belongs to (fixed in `SPLITS.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// For tuning.
    Dev,
    /// For reported figures only.
    Test,
}

impl Split {
    /// `"dev"` or `"test"`.
    pub fn name(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Test => "test",
        }
    }
}

/// Which units [`run`] evaluates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitFilter {
    /// Dev units only.
    Dev,
    /// Test units only.
    Test,
    /// Both.
    #[default]
    All,
}

impl SplitFilter {
    /// Whether a unit of split `s` passes the filter.
    pub fn admits(self, s: Split) -> bool {
        match self {
            SplitFilter::All => true,
            SplitFilter::Dev => s == Split::Dev,
            SplitFilter::Test => s == Split::Test,
        }
    }
}

impl FromStr for SplitFilter {
    type Err = Error;

    /// Parses `dev`, `test` or `all` (case-insensitive).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `"split"`) for anything else.
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "dev" => Ok(SplitFilter::Dev),
            "test" => Ok(SplitFilter::Test),
            "all" => Ok(SplitFilter::All),
            other => Err(Error::invalid("split", format!("{other:?}: expected dev, test or all"))),
        }
    }
}

/// One question asked against a unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// Id unique within the dataset. LoCoMo: `"<sample_id>/q<index>"` (0-based
    /// index into the sample's `qa` list). LongMemEval: the `question_id`.
    /// MADial: the dialogue `id`. Cross-lingual: the query `id`.
    pub id: String,
    /// The query text handed to [`Backend::search`].
    pub text: String,
    /// Gold doc ids at the scored unit, distinct, in data order. LoCoMo: the
    /// cleaned evidence dia_ids. LongMemEval: user turns with
    /// `has_answer: true`. MADial: `relevant-id`. Cross-lingual: `gold`.
    pub gold: Vec<String>,
    /// LongMemEval only: gold sessions (haystack sessions holding a gold
    /// turn, the official `correct_docs` after turn→session mapping). Empty
    /// for the other datasets.
    pub gold_sessions: Vec<String>,
    /// Category the metrics are broken down by. LoCoMo: `multi-hop`,
    /// `temporal`, `open-domain`, `single-hop`, `adversarial` (or
    /// `category-<n>` for an unknown code). LongMemEval: `question_type`.
    /// MADial: `None`. Cross-lingual: the direction, `zh→en`, `en→zh`,
    /// `en→en` or `zh→zh`.
    pub category: Option<String>,
    /// The query's split (always its unit's split).
    pub split: Split,
    /// When the question is asked, the reference for its time expressions:
    /// LongMemEval `question_date`, LoCoMo the last session's date; `None`
    /// for MADial and the cross-lingual set (the engine backend then scores
    /// no time term, so figures do not depend on the day of the run).
    pub time: Option<DateTime<Utc>>,
    /// LongMemEval abstention question (`question_id` ending in `_abs`);
    /// left out of every mean, as the official code does.
    pub abstention: bool,
    /// Raw gold ids the loader dropped: malformed (`"D"`) or naming no doc
    /// of the unit (LoCoMo `D10:19` in conv-42).
    pub gold_dropped: Vec<String>,
    /// Whether the loader had to rewrite or split a raw gold id
    /// (`"D8:6; D9:17"`, `"D:11:26"`, `"D30:05"`).
    pub gold_repaired: bool,
}

/// Docs and queries that live in one namespace: a LoCoMo sample, a
/// LongMemEval question with its haystack, a MADial user (one unit per user
/// and split, each holding all of the user's memories), a cross-lingual
/// split (each holding all memories).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// Namespace-safe name (`[A-Za-z0-9_.:@-]`), unique within the dataset.
    pub name: String,
    /// The unit's split.
    pub split: Split,
    /// All docs, in conversation order; ids unique.
    pub docs: Vec<Doc>,
    /// Queries asked against the docs.
    pub queries: Vec<Query>,
}

/// What the engine implements to be evaluated.
pub trait Backend {
    /// Called once per unit with all its docs (in conversation order);
    /// returns when they are ingested and searchable.
    ///
    /// # Errors
    /// Any error aborts the run and is returned by [`run`].
    fn ingest(&mut self, unit: &str, docs: &[Doc]) -> Result<()>;

    /// Returns doc ids, best first, at most `k`. Ids that are not docs of the
    /// unit are ignored (and counted); repeated ids count once, at their
    /// first position.
    ///
    /// # Errors
    /// Any error aborts the run and is returned by [`run`].
    fn search(&mut self, unit: &str, query: &str, k: usize) -> Result<Vec<String>>;

    /// [`Backend::search`] for a query asked at `time` ([`Query::time`]),
    /// which a backend that reads time expressions resolves them against.
    /// The default ignores the time.
    ///
    /// # Errors
    /// As [`Backend::search`].
    fn search_at(&mut self, unit: &str, query: &str, k: usize, time: Option<DateTime<Utc>>) -> Result<Vec<String>> {
        let _ = time;
        self.search(unit, query, k)
    }

    /// Optional: called after a unit's queries are scored, to free it.
    ///
    /// # Errors
    /// Any error aborts the run and is returned by [`run`].
    fn finish_unit(&mut self, _unit: &str) -> Result<()> {
        Ok(())
    }
}

/// The benchmark a set of units comes from; selects the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dataset {
    /// LoCoMo (`locomo10.json`).
    #[serde(rename = "locomo")]
    Locomo,
    /// LongMemEval_S (`longmemeval_s_498.jsonl.gz`).
    #[serde(rename = "longmemeval")]
    LongMemEval,
    /// MADial-Bench zh (`madial-bench-zh/`).
    #[serde(rename = "madial")]
    MADial,
    /// The embedded cross-lingual set (`crosslingual.json`).
    #[serde(rename = "crosslingual")]
    Crosslingual,
}

impl Dataset {
    /// Short name: `locomo`, `longmemeval`, `madial`, `crosslingual`.
    pub fn name(self) -> &'static str {
        match self {
            Dataset::Locomo => "locomo",
            Dataset::LongMemEval => "longmemeval",
            Dataset::MADial => "madial",
            Dataset::Crosslingual => "crosslingual",
        }
    }

    /// The cut-offs the official scripts report: LoCoMo {1, 5, 10, 25, 50},
    /// LongMemEval {1, 3, 5, 10, 30, 50}, MADial {1, 3, 5, 10}; the
    /// cross-lingual set uses MADial's.
    pub fn default_k_values(self) -> Vec<usize> {
        match self {
            Dataset::Locomo => vec![1, 5, 10, 25, 50],
            Dataset::LongMemEval => vec![1, 3, 5, 10, 30, 50],
            Dataset::MADial | Dataset::Crosslingual => vec![1, 3, 5, 10],
        }
    }

    /// How many ids [`run`] asks the backend for by default: 50 for LoCoMo,
    /// 10 for MADial and the cross-lingual set, and 1000 for LongMemEval (more than the ~245 user turns
    /// of an S haystack, so sessions can be ranked to depth 50 from turns).
    pub fn default_retrieve_depth(self) -> usize {
        match self {
            Dataset::Locomo => 50,
            Dataset::LongMemEval => 1000,
            Dataset::MADial | Dataset::Crosslingual => 10,
        }
    }

    /// Loads the dataset's units from `path` with the matching loader;
    /// `dev_ids` is used by LongMemEval only.
    ///
    /// # Errors
    /// As the loader: [`Error::Io`] when a file cannot be read,
    /// [`Error::InvalidInput`] when one is malformed.
    pub fn load(self, path: &Path, dev_ids: Option<&Path>) -> Result<Vec<Unit>> {
        match self {
            Dataset::Locomo => load_locomo(path),
            Dataset::LongMemEval => load_longmemeval(path, dev_ids),
            Dataset::MADial => load_madial(path),
            Dataset::Crosslingual => load_crosslingual(Some(path)),
        }
    }

    /// Whether the crate ships the dataset, so it loads without a path
    /// (only the cross-lingual set).
    pub fn is_embedded(self) -> bool {
        self == Dataset::Crosslingual
    }

    /// As [`Dataset::load`] when `path` is given; without one, loads the
    /// embedded copy of a dataset the crate ships ([`Dataset::is_embedded`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `"path"`) when `path` is `None` for a
    /// dataset that is not embedded; otherwise as [`Dataset::load`].
    pub fn load_or_embedded(self, path: Option<&Path>, dev_ids: Option<&Path>) -> Result<Vec<Unit>> {
        match (path, self) {
            (Some(p), _) => self.load(p, dev_ids),
            (None, Dataset::Crosslingual) => load_crosslingual(None),
            (None, _) => Err(Error::invalid(
                "path",
                format!("{self} needs its data file or directory (only crosslingual is built in)"),
            )),
        }
    }
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dataset {
    type Err = Error;

    /// Parses `locomo`, `longmemeval` (or `lme`), `madial`, `crosslingual`
    /// (or `xling`) (case-insensitive).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `"dataset"`) for anything else.
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "locomo" => Ok(Dataset::Locomo),
            "longmemeval" | "lme" | "longmemeval_s" => Ok(Dataset::LongMemEval),
            "madial" | "madial-bench" | "madial-bench-zh" => Ok(Dataset::MADial),
            "crosslingual" | "xling" | "cross-lingual" => Ok(Dataset::Crosslingual),
            other => Err(Error::invalid(
                "dataset",
                format!("{other:?}: expected locomo, longmemeval, madial or crosslingual"),
            )),
        }
    }
}

/// Maps a serde_json error to [`Error::InvalidInput`] naming the file and
/// the record.
pub(crate) fn json_error(path: &Path, record: &str, e: &serde_json::Error) -> Error {
    Error::invalid("file", format!("{}: {record}: {e}", path.display()))
}

/// [`Error::InvalidInput`] naming the file and the offending record.
pub(crate) fn bad_record(path: &Path, record: &str, reason: impl fmt::Display) -> Error {
    Error::invalid("file", format!("{}: {record}: {reason}", path.display()))
}
