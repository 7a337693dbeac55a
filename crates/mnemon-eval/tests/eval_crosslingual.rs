//! The built-in cross-lingual recall set: its shape, the loader's checks on
//! malformed files, and a whole run with the engine (hashing embedder) as
//! the backend.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use mnemon::embed::HashingEmbedder;
use mnemon::{DedupMode, Engine, Error, Kind, MemoryId, Namespace, NewMemory, RecallOptions, Tier};
use mnemon_eval::{load_crosslingual, run, Backend, Dataset, Doc, RunOptions, Split, Unit};

fn embedded() -> Vec<Unit> {
    load_crosslingual(None).expect("embedded set loads")
}

fn lang(id: &str) -> &str {
    id.split('-').next().unwrap_or("")
}

#[test]
fn embedded_set_shape() {
    let units = embedded();
    assert_eq!(units.len(), 2);
    let (dev, test) = (&units[0], &units[1]);
    assert_eq!((dev.name.as_str(), dev.split), ("xling:dev", Split::Dev));
    assert_eq!((test.name.as_str(), test.split), ("xling:test", Split::Test));
    assert_eq!((dev.queries.len(), test.queries.len()), (80, 80));
    for u in &units {
        Namespace::new(u.name.as_str()).expect("unit name is a namespace");
        // Both units hold every memory: 40 English, 40 Chinese, distinct ids.
        assert_eq!(u.docs.len(), 80);
        assert_eq!(u.docs.iter().filter(|d| lang(&d.id) == "en").count(), 40);
        assert_eq!(u.docs.iter().filter(|d| lang(&d.id) == "zh").count(), 40);
        let cjk = |t: &str| t.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        for d in &u.docs {
            assert_eq!(cjk(&d.text), lang(&d.id) == "zh", "{}: {}", d.id, d.text);
        }
        let mut ids: Vec<&str> = u.docs.iter().map(|d| d.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 80);
        assert_eq!(u.docs, units[0].docs);
    }

    // 160 queries, two per memory: one in the other language, one in its
    // own, labelled with their direction.
    let queries: Vec<_> = units.iter().flat_map(|u| &u.queries).collect();
    assert_eq!(queries.len(), 160);
    let docs: HashMap<&str, &Doc> = units[0].docs.iter().map(|d| (d.id.as_str(), d)).collect();
    let mut answered = Vec::new();
    for q in &queries {
        assert_eq!(q.gold.len(), 1, "{}", q.id);
        let g = q.gold[0].as_str();
        assert!(docs.contains_key(g), "{}: gold {g}", q.id);
        let q_lang = if q.id.starts_with("q-zh-") || q.id.starts_with("q-zz-") { "zh" } else { "en" };
        let same = q.id.starts_with("q-ee-") || q.id.starts_with("q-zz-");
        assert_eq!(q_lang == lang(g), same, "{}: gold {g}", q.id);
        assert_eq!(q.category.as_deref(), Some(format!("{q_lang}→{}", lang(g)).as_str()));
        answered.push((g, same));
    }
    answered.sort_unstable();
    answered.dedup();
    assert_eq!(answered.len(), 160, "every memory is asked about once in each language");
    for u in &units {
        for dir in ["zh→en", "en→zh", "en→en", "zh→zh"] {
            assert_eq!(u.queries.iter().filter(|q| q.category.as_deref() == Some(dir)).count(), 20);
        }
    }

    // The file path and the dataset name reach the same units.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/crosslingual.json");
    assert_eq!(load_crosslingual(Some(&path)).unwrap(), units);
    assert_eq!(Dataset::Crosslingual.load(&path, None).unwrap(), units);
    assert_eq!(Dataset::Crosslingual.load_or_embedded(None, None).unwrap(), units);
    for name in ["crosslingual", "xling", "XLING"] {
        assert_eq!(name.parse::<Dataset>().unwrap(), Dataset::Crosslingual);
    }
    assert_eq!(Dataset::Crosslingual.to_string(), "crosslingual");
    assert_eq!(Dataset::Crosslingual.default_k_values(), [1, 3, 5, 10]);
    assert_eq!(Dataset::Crosslingual.default_retrieve_depth(), 10);
}

#[test]
fn other_datasets_need_a_path() {
    for d in [Dataset::Locomo, Dataset::LongMemEval, Dataset::MADial] {
        assert!(!d.is_embedded());
        match d.load_or_embedded(None, None) {
            Err(Error::InvalidInput { field: "path", .. }) => {}
            other => panic!("{d}: {other:?}"),
        }
    }
    assert!(Dataset::Crosslingual.is_embedded());
    let e = "nope".parse::<Dataset>().unwrap_err();
    assert!(e.to_string().contains("crosslingual"), "{e}");
}

/// Writes `json` to a temporary file and loads it; returns the error reason.
fn reason(json: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("set.json");
    std::fs::write(&p, json).unwrap();
    match load_crosslingual(Some(&p)) {
        Err(Error::InvalidInput { field: "file", reason }) => {
            assert!(reason.contains("set.json"), "names the file: {reason}");
            reason
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

const MEMS: &str = r#"[{"id":"en-1","lang":"en","text":"I like tea."},{"id":"zh-1","lang":"zh","text":"我喜欢猫。"}]"#;

fn with(memories: &str, queries: &str) -> String {
    format!(r#"{{"memories":{memories},"queries":{queries}}}"#)
}

#[test]
fn malformed_files_are_rejected() {
    let q = r#"[{"id":"q1","lang":"zh","text":"我喜欢喝什么？","gold":["en-1"]}]"#;
    // Well-formed: one query, one unit (dev).
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ok.json");
    std::fs::write(&p, with(MEMS, q)).unwrap();
    let units = load_crosslingual(Some(&p)).unwrap();
    assert_eq!(units.len(), 1);
    assert_eq!(units[0].name, "xling:dev");

    let dup = r#"[{"id":"en-1","lang":"en","text":"I like tea."},{"id":"en-1","lang":"en","text":"I run."}]"#;
    assert!(reason(&with(dup, q)).contains("duplicate memory id \"en-1\""));

    let unknown = r#"[{"id":"q1","lang":"zh","text":"我喜欢喝什么？","gold":["en-9"]}]"#;
    assert!(reason(&with(MEMS, unknown)).contains("gold id \"en-9\" is not a memory"));

    let bad_lang = r#"[{"id":"en-1","lang":"fr","text":"J'aime le thé."}]"#;
    assert!(reason(&with(bad_lang, "[]")).contains("lang \"fr\""));
    let bad_q_lang = r#"[{"id":"q1","lang":"de","text":"Was trinke ich?","gold":["en-1"]}]"#;
    assert!(reason(&with(MEMS, bad_q_lang)).contains("lang \"de\""));

    // Gold in the query's own language is a same-language question; gold in
    // both languages is refused.
    let same_lang = r#"[{"id":"q1","lang":"en","text":"What do I drink?","gold":["en-1"]}]"#;
    std::fs::write(&p, with(MEMS, same_lang)).unwrap();
    assert_eq!(load_crosslingual(Some(&p)).unwrap()[0].queries[0].category.as_deref(), Some("en→en"));
    let mixed = r#"[{"id":"q1","lang":"en","text":"What do I like?","gold":["en-1","zh-1"]}]"#;
    assert!(reason(&with(MEMS, mixed)).contains("another gold in"));

    let empty_text = r#"[{"id":"en-1","lang":"en","text":"  "}]"#;
    assert!(reason(&with(empty_text, "[]")).contains("empty text"));
    let no_gold = r#"[{"id":"q1","lang":"zh","text":"我喜欢喝什么？","gold":[]}]"#;
    assert!(reason(&with(MEMS, no_gold)).contains("no gold"));
    let twice = r#"[{"id":"q1","lang":"zh","text":"我喜欢喝什么？","gold":["en-1","en-1"]}]"#;
    assert!(reason(&with(MEMS, twice)).contains("repeats"));
    let dup_q = format!("[{},{}]", &q[1..q.len() - 1], &q[1..q.len() - 1]);
    assert!(reason(&with(MEMS, &dup_q)).contains("duplicate query id"));
    assert!(reason(&with("[]", "[]")).contains("no memories"));
    assert!(reason(r#"{"memories":[],"queries":[],"extra":1}"#).contains("extra"));
    assert!(reason("not json").contains("top level"));

    // A missing file is an I/O error.
    assert!(matches!(load_crosslingual(Some(&dir.path().join("absent.json"))), Err(Error::Io(_))));
}

/// The engine as a backend: one namespace per unit, each doc an episode
/// memory embedded by the engine's own (hashing) embedder.
struct EngineBackend {
    engine: Engine,
    ids: HashMap<String, HashMap<MemoryId, String>>,
}

impl Backend for EngineBackend {
    fn ingest(&mut self, unit: &str, docs: &[Doc]) -> mnemon::Result<()> {
        let ns = Namespace::new(unit)?;
        let batch = docs
            .iter()
            .map(|d| {
                NewMemory::new(d.text.clone())
                    .kind(Kind::Episode)
                    .tier(Tier::LongTerm)
                    .session(d.session.clone())
                    .source_ref(d.id.clone())
                    .dedup(DedupMode::Off)
            })
            .collect();
        let mut map = HashMap::new();
        for (d, r) in docs.iter().zip(self.engine.remember_batch(&ns, batch)?) {
            map.insert(r?.id, d.id.clone());
        }
        self.ids.insert(unit.to_string(), map);
        Ok(())
    }

    fn search(&mut self, unit: &str, query: &str, k: usize) -> mnemon::Result<Vec<String>> {
        let ns = Namespace::new(unit)?;
        let opts = RecallOptions { top_k: k, record_access: false, ..RecallOptions::default() };
        let hits = self.engine.recall(&ns, query, &opts)?;
        let map = &self.ids[unit];
        Ok(hits.iter().filter_map(|h| map.get(&h.memory.id).cloned()).collect())
    }
}

#[test]
fn runs_end_to_end_with_the_hashing_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder(dir.path()).embedder(Arc::new(HashingEmbedder::default())).open().unwrap();
    let mut backend = EngineBackend { engine, ids: HashMap::new() };
    let units = embedded();
    let opts = RunOptions { record_queries: true, ..RunOptions::for_dataset(Dataset::Crosslingual) };
    let report = run(Dataset::Crosslingual, &units, &mut backend, &opts).unwrap();

    assert_eq!(report.k_values, [1, 3, 5, 10]);
    let names: Vec<&str> = report.splits.iter().map(|s| s.split.as_str()).collect();
    assert_eq!(names, ["dev", "test", "all"]);
    for s in &report.splits {
        // Each split's unit holds all 80 memories; "all" counts both units.
        let (n, docs) = if s.split == "all" { (160, 160) } else { (80, 80) };
        assert_eq!((s.counts.queries, s.counts.scored, s.counts.docs), (n, n, docs));
        let tables: Vec<&str> = s.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(tables, ["recall", "mrr"]);
        for t in &s.tables {
            let rows: Vec<(&str, usize)> = t.rows.iter().map(|r| (r.group.as_str(), r.n)).collect();
            assert_eq!(rows, [("zh→en", n / 4), ("en→zh", n / 4), ("en→en", n / 4), ("zh→zh", n / 4), ("overall", n)]);
            for r in &t.rows {
                assert!(r.values.iter().all(|v| (0.0..=1.0).contains(v)), "{r:?}");
                // Recall@k grows with k; MRR@k too.
                assert!(r.values.windows(2).all(|w| w[0] <= w[1] + 1e-12), "{r:?}");
            }
        }
    }
    let recs = report.queries.as_ref().unwrap();
    assert_eq!(recs.len(), 160);
    assert!(recs.iter().all(|r| r.retrieved.len() <= 10 && r.excluded.is_none()));
    let text = report.render_table();
    assert!(text.contains("zh→en") && text.contains("en→zh"), "{text}");
    backend.engine.close().unwrap();
}
