//! The labelled near-duplicate pairs (`tests/fixtures/dedup_pairs.json`: a
//! real turn and a paraphrase of it, or the same turn with one number, name
//! or negation changed) through the engine's real write decision: remember
//! the first text, then the second, in a namespace of their own.
//!
//! Every one-fact change must be stored as a memory of its own (0 false
//! merges), for the hashing embedder always and for all-MiniLM-L6-v2 and
//! multilingual-e5-small when installed (required with
//! `MNEMON_REQUIRE_MODELS=1`). A paraphrase, when the engine takes it for a
//! restatement, must become the new version of the first text, and the
//! engine's decision must equal the library rule
//! ([`mnemon::dedup::is_restatement`] at the embedder's threshold).

mod common;

use std::error::Error as StdError;
use std::sync::Arc;

use mnemon::dedup::{is_restatement, FactSignature};
use mnemon::embed::{EmbedKind, Embedder, EmbedderChoice, HashingEmbedder};
use mnemon::{Engine, ListOptions, Namespace, NewMemory, RememberAction};

type TestResult = Result<(), Box<dyn StdError>>;

struct Pair {
    id: String,
    lang: String,
    paraphrase: bool,
    a: String,
    b: String,
}

fn pairs() -> Vec<Pair> {
    let set: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/dedup_pairs.json")).expect("fixture parses");
    set["pairs"]
        .as_array()
        .expect("pairs")
        .iter()
        .map(|p| Pair {
            id: p["id"].as_str().expect("id").to_string(),
            lang: p["lang"].as_str().expect("lang").to_string(),
            paraphrase: p["label"] == "paraphrase",
            a: p["a"].as_str().expect("a").to_string(),
            b: p["b"].as_str().expect("b").to_string(),
        })
        .collect()
}

fn run_set(embedder: Arc<dyn Embedder>) -> TestResult {
    let dir = tempfile::tempdir()?;
    let threshold = embedder.near_duplicate_threshold();
    let engine = Engine::builder(dir.path()).embedder(embedder.clone()).open()?;
    let pairs = pairs();
    // One batch each; remember takes the vectors, so the decision is the
    // engine's on exactly these embeddings.
    let va = embedder.embed(&pairs.iter().map(|p| p.a.as_str()).collect::<Vec<_>>(), EmbedKind::Passage)?;
    let vb = embedder.embed(&pairs.iter().map(|p| p.b.as_str()).collect::<Vec<_>>(), EmbedKind::Passage)?;
    let mut false_merges = Vec::new();
    let mut merged = [0usize; 2];
    let mut paraphrases = [0usize; 2];
    for (i, p) in pairs.iter().enumerate() {
        let ns = Namespace::new(format!("p{i}"))?;
        let first = engine.remember(&ns, NewMemory::new(&p.a).vector(va[i].clone()))?;
        assert_eq!(first.action, RememberAction::Created, "{}", p.id);
        let second = engine.remember(&ns, NewMemory::new(&p.b).vector(vb[i].clone()))?;
        // The engine compares the new vector with the stored one, whose
        // components the index keeps as f16; a cosine within 1e-5 of the
        // threshold (summation order) is not held to the rule here.
        let stored = |x: f32| half::f16::from_f32(x).to_f32();
        let similarity: f32 = va[i].iter().zip(&vb[i]).map(|(x, y)| stored(*x) * y).sum();
        let borderline = (similarity - threshold).abs() < 1e-5;
        let rule = is_restatement(similarity, threshold, &FactSignature::of(&p.a), &FactSignature::of(&p.b));
        let active = engine.list(&ns, &ListOptions::default());
        match second.action {
            RememberAction::NearDuplicate { old, .. } => {
                assert!(rule || borderline, "{}: the engine merged what the rule keeps apart", p.id);
                assert_eq!(old, first.id, "{}", p.id);
                assert_eq!(active.len(), 1, "{}", p.id);
                let history = engine.history(&ns, second.id)?;
                let texts: Vec<&str> = history.iter().map(|m| m.content.as_str()).collect();
                assert_eq!(texts, [p.a.as_str(), p.b.as_str()], "{}: both texts stay in the version chain", p.id);
                if !p.paraphrase {
                    false_merges.push(p.id.clone());
                }
            }
            RememberAction::Created => {
                assert!(
                    !rule || borderline,
                    "{}: the rule says restatement (cosine {similarity}) but the engine created",
                    p.id
                );
                let texts: Vec<&str> = active.iter().map(|m| m.content.as_str()).collect();
                assert_eq!(texts, [p.a.as_str(), p.b.as_str()], "{}: both stay active", p.id);
            }
            other => panic!("{}: unexpected {other:?}", p.id),
        }
        if p.paraphrase {
            let l = usize::from(p.lang == "zh");
            paraphrases[l] += 1;
            merged[l] += usize::from(matches!(second.action, RememberAction::NearDuplicate { .. }));
        }
    }
    eprintln!(
        "{}: false merges {} of {}; paraphrases merged en {}/{}, zh {}/{}",
        embedder.model_id(),
        false_merges.len(),
        pairs.iter().filter(|p| !p.paraphrase).count(),
        merged[0],
        paraphrases[0],
        merged[1],
        paraphrases[1]
    );
    assert!(false_merges.is_empty(), "{}: changed facts merged: {false_merges:?}", embedder.model_id());
    Ok(())
}

#[test]
fn labelled_pairs_hashing_no_false_merge() -> TestResult {
    run_set(Arc::new(HashingEmbedder::default()))
}

#[test]
fn labelled_pairs_minilm_no_false_merge() -> TestResult {
    match common::models::installed(EmbedderChoice::MiniLm) {
        Some(e) => run_set(e),
        None => Ok(()),
    }
}

#[test]
fn labelled_pairs_e5_no_false_merge() -> TestResult {
    match common::models::installed(EmbedderChoice::E5) {
        Some(e) => run_set(e),
        None => Ok(()),
    }
}

#[test]
fn the_set_has_both_languages_and_halves() {
    let pairs = pairs();
    assert!(pairs.len() >= 300);
    for lang in ["en", "zh"] {
        for label in [true, false] {
            assert!(pairs.iter().filter(|p| p.lang == lang && p.paraphrase == label).count() >= 40);
        }
    }
}
