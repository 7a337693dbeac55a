//! Everyday questions: is the `context` block right on the questions agents
//! really ask?
//!
//! Each [`Scenario`] is a fresh store: a few memories (and perhaps turns of
//! the current session) written through the command surface
//! ([`mnemon_api::execute`], `remember` and `observe`), then one question
//! asked by `context` at a reference time. The block is scored, not a
//! ranking:
//!
//! - **needed present**: each memory or turn the answer needs is in the
//!   block (a memory by its id among the block's memories, whole or cut; a
//!   turn by its text), and each `needed_text` string is in the block's
//!   text;
//! - **superseded shown**: a memory that a later memory with the same slot
//!   key replaced appears in the block (should be 0);
//! - **newer first**: where an older value of a keyless changed fact
//!   appears, the newer one appears before it;
//! - **nothing relevant**: for a question nothing stored answers, the
//!   block's relevant part is empty (`memories` = 0).
//!
//! The set (`everyday.json`, embedded; schema in [`EverydaySet`]) holds
//! English and Chinese scenarios of nine kinds (advice questions needing a
//! stored constraint that shares no word with them, changed facts with and
//! without keys, JSON values and mixed scripts, time questions, long
//! memories with the answer near the end, a long current-session turn
//! beside short relevant ones, never-stored subjects with near-miss
//! distractors, questions needing two memories), split into `dev` (tune on
//! it) and `test` (report only).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use mnemon::embed::Embedder;
use mnemon::{Engine, Error, MemoryId, Namespace, Result};
use mnemon_api::{Request, Response};

const EMBEDDED: &str = include_str!("everyday.json");
const EMBEDDED_NAME: &str = "everyday.json (built in)";

/// The scenario file: `{"version": 1, "about": "…", "scenarios": [Scenario]}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EverydaySet {
    /// Schema version, 1.
    pub version: u32,
    /// What the set is, one sentence.
    #[serde(default)]
    pub about: String,
    /// The scenarios.
    pub scenarios: Vec<Scenario>,
}

/// One question over one fresh store.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Unique id, `[a-z0-9-]`.
    pub id: String,
    /// `dev` or `test`.
    pub split: String,
    /// Language of the question: `en` or `zh`.
    pub lang: String,
    /// One of [`KINDS`].
    pub kind: String,
    /// When the question is asked (RFC 3339 with an offset).
    pub reference_time: DateTime<FixedOffset>,
    /// Memories, written in this order.
    #[serde(default)]
    pub memories: Vec<ScenarioMemory>,
    /// Turns of the current session, oldest first.
    #[serde(default)]
    pub turns: Vec<ScenarioTurn>,
    /// The caller's session (required with turns).
    #[serde(default)]
    pub current_session: Option<String>,
    /// The question.
    pub question: String,
    /// Block budget in tokens; default 400.
    #[serde(default)]
    pub budget_tokens: Option<usize>,
    /// Names of the memories and turns the block must hold.
    #[serde(default)]
    pub needed: Vec<String>,
    /// Exact strings the block's text must hold.
    #[serde(default)]
    pub needed_text: Vec<String>,
    /// Names of memories a later memory with the same key replaced: they
    /// must not be in the block.
    #[serde(default)]
    pub superseded: Vec<String>,
    /// Pairs `[newer, older]`: where older is in the block, newer must come
    /// before it.
    #[serde(default)]
    pub newer_first: Vec<[String; 2]>,
    /// Nothing stored answers the question: the relevant part must be empty.
    #[serde(default)]
    pub nothing_relevant: bool,
}

/// A memory of a scenario: `remember`'s fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioMemory {
    /// Name within the scenario.
    pub name: String,
    /// The content, stored verbatim.
    pub content: String,
    /// Kind name (default fact).
    #[serde(default)]
    pub kind: Option<String>,
    /// Slot key.
    #[serde(default)]
    pub key: Option<String>,
    /// When it became true.
    #[serde(default)]
    pub event_time: Option<DateTime<Utc>>,
    /// Names it is about.
    #[serde(default)]
    pub entities: Option<Vec<String>>,
    /// Session it was learned in.
    #[serde(default)]
    pub session: Option<String>,
}

/// A turn of the current session: `observe`'s fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioTurn {
    /// Name within the scenario.
    pub name: String,
    /// user, assistant, tool or system.
    pub role: String,
    /// What was said.
    pub text: String,
    /// When it was said.
    #[serde(default)]
    pub event_time: Option<DateTime<FixedOffset>>,
}

/// The scenario kinds, in report order.
pub const KINDS: [&str; 9] = [
    "advice",
    "changed_keyed",
    "changed_keyless",
    "json_mixed",
    "time",
    "long",
    "recent",
    "never_stored",
    "two_memories",
];

/// Loads the set from `path`, or the built-in one, and checks it: unique
/// ids, known splits, languages and kinds, every name a scenario refers to
/// defined in it, turns only with a current session.
///
/// # Errors
/// [`Error::Io`] reading the file; [`Error::InvalidInput`] naming the
/// scenario and field at fault.
pub fn load_everyday(path: Option<&Path>) -> Result<EverydaySet> {
    let text = match path {
        Some(p) => Cow::Owned(std::fs::read_to_string(p)?),
        None => Cow::Borrowed(EMBEDDED),
    };
    let shown = path.map_or_else(|| EMBEDDED_NAME.to_string(), |p| p.display().to_string());
    let set: EverydaySet =
        serde_json::from_str(&text).map_err(|e| Error::invalid("everyday", format!("{shown}: {e}")))?;
    let bad = |id: &str, what: String| Error::invalid("everyday", format!("{shown}: scenario {id:?}: {what}"));
    let mut ids = std::collections::HashSet::new();
    for s in &set.scenarios {
        if !ids.insert(s.id.as_str()) {
            return Err(bad(&s.id, "duplicate id".into()));
        }
        if !matches!(s.split.as_str(), "dev" | "test") {
            return Err(bad(&s.id, format!("split {:?} is not dev or test", s.split)));
        }
        if !matches!(s.lang.as_str(), "en" | "zh") {
            return Err(bad(&s.id, format!("lang {:?} is not en or zh", s.lang)));
        }
        if !KINDS.contains(&s.kind.as_str()) {
            return Err(bad(&s.id, format!("kind {:?} is not one of {}", s.kind, KINDS.join(", "))));
        }
        if !s.turns.is_empty() && s.current_session.is_none() {
            return Err(bad(&s.id, "turns without current_session".into()));
        }
        let names: Vec<&str> =
            s.memories.iter().map(|m| m.name.as_str()).chain(s.turns.iter().map(|t| t.name.as_str())).collect();
        let refs = s.needed.iter().chain(&s.superseded).chain(s.newer_first.iter().flat_map(|p| p.iter()));
        for r in refs {
            if !names.contains(&r.as_str()) {
                return Err(bad(&s.id, format!("refers to {r:?}, which it does not define")));
            }
        }
    }
    Ok(set)
}

/// How one scenario's block scored.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The scenario's id, split, language and kind.
    pub id: String,
    /// `dev` or `test`.
    pub split: String,
    /// `en` or `zh`.
    pub lang: String,
    /// The scenario kind.
    pub kind: String,
    /// Needed memories, turns and texts.
    pub needed: usize,
    /// Of those, the ones in the block.
    pub found: usize,
    /// Names (or texts) of the needed items missing.
    pub missing: Vec<String>,
    /// Names of superseded keyed memories shown.
    pub superseded_shown: Vec<String>,
    /// `newer_first` pairs checked (the older one shown).
    pub order_checked: usize,
    /// Of those, pairs with the newer first.
    pub order_kept: usize,
    /// Whether nothing stored answers the question.
    pub nothing_relevant: bool,
    /// Entries in the block's relevant part.
    pub relevant_entries: usize,
    /// Whether recall abstained.
    pub abstained: bool,
    /// The block.
    pub block: String,
    /// What `recall` (with `explain`) ranks for the question, best first:
    /// one line per hit with its cosine, normalised BM25, time proximity
    /// and grounds, to read why the block is what it is.
    pub hits: Vec<String>,
}

impl Outcome {
    /// Whether every check of the scenario passed.
    pub fn passed(&self) -> bool {
        self.found == self.needed
            && self.superseded_shown.is_empty()
            && self.order_kept == self.order_checked
            && (!self.nothing_relevant || self.relevant_entries == 0)
    }
}

/// The text of `s` as the block renders a field: whitespace runs as one
/// space, `&` `<` `>` as entities (enough for the set's plain texts).
fn rendered(s: &str) -> String {
    let one: Vec<&str> = s.split_whitespace().collect();
    one.join(" ").replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Where `text` (rendered; its first 60 characters, as a cut entry keeps
/// its opening) occurs in `block`.
fn position(block: &str, text: &str) -> Option<usize> {
    let r = rendered(text);
    let head: String = r.chars().take(60).collect();
    block.find(head.trim_end())
}

fn api(engine: &Engine, op: &'static str, args: serde_json::Value) -> Result<Response> {
    let req = Request::from_op(op, args).map_err(|e| Error::invalid(op, e.to_string()))?;
    mnemon_api::execute(engine, req).map_err(|e| Error::invalid(op, e.to_string()))
}

/// Runs one scenario on a fresh store in `dir` with `embedder`.
///
/// # Errors
/// Any error of opening the store or of a call (a scenario the surface
/// refuses is an error of the set).
pub fn run_scenario(s: &Scenario, dir: &Path, embedder: Arc<dyn Embedder>) -> Result<Outcome> {
    let engine = Engine::builder(dir).embedder(embedder).max_content_bytes(1 << 20).open()?;
    let ns = Namespace::new("everyday")?;
    let mut ids: HashMap<&str, MemoryId> = HashMap::new();
    for m in &s.memories {
        let mut args = json!({"namespace": ns.as_str(), "content": m.content});
        let o = args.as_object_mut().expect("object");
        if let Some(k) = &m.kind {
            o.insert("kind".into(), json!(k));
        }
        if let Some(k) = &m.key {
            o.insert("key".into(), json!(k));
        }
        if let Some(t) = m.event_time {
            o.insert("event_time".into(), json!(t));
        }
        if let Some(e) = &m.entities {
            o.insert("entities".into(), json!(e));
        }
        if let Some(ses) = &m.session {
            o.insert("session".into(), json!(ses));
        }
        let Response::Remember(r) = api(&engine, "remember", args)? else {
            return Err(Error::invalid("remember", "unexpected response"));
        };
        ids.insert(m.name.as_str(), r.id);
    }
    for t in &s.turns {
        let mut args = json!({
            "namespace": ns.as_str(),
            "session": s.current_session.as_deref().unwrap_or_default(),
            "role": t.role,
            "text": t.text,
        });
        if let Some(at) = t.event_time {
            args["event_time"] = json!(at.with_timezone(&Utc));
        }
        api(&engine, "observe", args)?;
    }
    let mut args = json!({
        "namespace": ns.as_str(),
        "query": s.question,
        "budget_tokens": s.budget_tokens.unwrap_or(400),
        "reference_time": s.reference_time,
        "record_access": false,
    });
    if let Some(cur) = &s.current_session {
        args["current_session"] = json!(cur);
    }
    let Response::Context(block) = api(&engine, "context", args)? else {
        return Err(Error::invalid("context", "unexpected response"));
    };
    let mut args = json!({
        "namespace": ns.as_str(),
        "query": s.question,
        "reference_time": s.reference_time,
        "record_access": false,
        "explain": true,
        "abstain_below": -1.0,
    });
    if let Some(cur) = &s.current_session {
        args["current_session"] = json!(cur);
    }
    let Response::Recall(recalled) = api(&engine, "recall", args)? else {
        return Err(Error::invalid("recall", "unexpected response"));
    };
    let hits = recalled
        .hits
        .iter()
        .map(|h| {
            let e = h.explain.as_ref();
            let head: String = h.content.chars().take(70).collect();
            format!(
                "cos {:.3} bm25 {:.2} time {:.2} score {:.3} | {head}",
                e.map_or(0.0, |e| e.similarity),
                e.map_or(0.0, |e| e.lexical_norm),
                e.map_or(0.0, |e| e.time),
                h.score,
            )
        })
        .collect();
    let text = block.text.as_str();
    let content = |name: &str| -> Option<&str> {
        s.memories
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.content.as_str())
            .or_else(|| s.turns.iter().find(|t| t.name == name).map(|t| t.text.as_str()))
    };
    let shown = |name: &str| -> bool {
        match ids.get(name) {
            Some(id) => block.memory_ids.contains(id),
            None => content(name).is_some_and(|c| position(text, c).is_some()),
        }
    };
    let mut missing = Vec::new();
    for n in &s.needed {
        if !shown(n) {
            missing.push(n.clone());
        }
    }
    for t in &s.needed_text {
        if !text.contains(&rendered(t)) {
            missing.push(format!("text {t:?}"));
        }
    }
    let needed = s.needed.len() + s.needed_text.len();
    // A superseded version is never recalled by id (the id names the
    // current version), so it is looked for by its text.
    let superseded_shown: Vec<String> =
        s.superseded.iter().filter(|n| content(n).is_some_and(|c| position(text, c).is_some())).cloned().collect();
    let (mut order_checked, mut order_kept) = (0, 0);
    for [newer, older] in &s.newer_first {
        if let Some(po) = content(older).and_then(|c| position(text, c)) {
            order_checked += 1;
            if content(newer).and_then(|c| position(text, c)).is_some_and(|pn| pn < po) {
                order_kept += 1;
            }
        }
    }
    Ok(Outcome {
        id: s.id.clone(),
        split: s.split.clone(),
        lang: s.lang.clone(),
        kind: s.kind.clone(),
        needed,
        found: needed - missing.len(),
        missing,
        superseded_shown,
        order_checked,
        order_kept,
        nothing_relevant: s.nothing_relevant,
        relevant_entries: block.included,
        abstained: block.abstained,
        block: block.text.clone(),
        hits,
    })
}

/// The figures of a group of outcomes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// Scenarios.
    pub scenarios: usize,
    /// Scenarios that passed every check.
    pub passed: usize,
    /// Needed items, and of those the ones present.
    pub needed: usize,
    /// Needed items present.
    pub found: usize,
    /// Superseded keyed values shown.
    pub superseded_shown: usize,
    /// `newer_first` pairs checked, and kept.
    pub order_checked: usize,
    /// Pairs with the newer first.
    pub order_kept: usize,
    /// Nothing-relevant questions, and of those the ones with an empty
    /// relevant part.
    pub nothing_relevant: usize,
    /// Nothing-relevant questions with an empty relevant part.
    pub empty_when_nothing: usize,
}

impl Figures {
    fn add(&mut self, o: &Outcome) {
        self.scenarios += 1;
        self.passed += usize::from(o.passed());
        self.needed += o.needed;
        self.found += o.found;
        self.superseded_shown += o.superseded_shown.len();
        self.order_checked += o.order_checked;
        self.order_kept += o.order_kept;
        if o.nothing_relevant {
            self.nothing_relevant += 1;
            self.empty_when_nothing += usize::from(o.relevant_entries == 0);
        }
    }

    /// Share of needed items present (1 when none are needed).
    pub fn needed_share(&self) -> f64 {
        share(self.found, self.needed)
    }

    /// Share of nothing-relevant questions with an empty relevant part.
    pub fn empty_share(&self) -> f64 {
        share(self.empty_when_nothing, self.nothing_relevant)
    }
}

fn share(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// Figures by split and language (`dev/en`, …, `dev/all`, `all/all`), and
/// by split and kind (`dev/advice`, …).
pub fn summarise(outcomes: &[Outcome]) -> BTreeMap<String, Figures> {
    let mut out: BTreeMap<String, Figures> = BTreeMap::new();
    for o in outcomes {
        for key in [
            format!("{}/{}", o.split, o.lang),
            format!("{}/all", o.split),
            format!("all/{}", o.lang),
            "all/all".to_string(),
            format!("{}/kind:{}", o.split, o.kind),
        ] {
            out.entry(key).or_default().add(o);
        }
    }
    out
}

/// The figures as a Markdown table, one row per group of [`summarise`].
pub fn render_table(groups: &BTreeMap<String, Figures>) -> String {
    let mut t = String::from(
        "| group | scenarios | passed | needed present | superseded shown | newer first | empty when nothing relevant |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (g, f) in groups {
        t.push_str(&format!(
            "| {g} | {} | {} | {}/{} ({:.3}) | {} | {}/{} | {}/{} ({:.3}) |\n",
            f.scenarios,
            f.passed,
            f.found,
            f.needed,
            f.needed_share(),
            f.superseded_shown,
            f.order_kept,
            f.order_checked,
            f.empty_when_nothing,
            f.nothing_relevant,
            f.empty_share()
        ));
    }
    t
}
