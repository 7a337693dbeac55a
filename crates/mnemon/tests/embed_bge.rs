//! bge-small-en-v1.5 through our own encoder, checked against the vectors
//! onnxruntime computes from the same ONNX file
//! (`tests/fixtures/bge/reference.json`, made by `make_reference.py` there).
//!
//! Needs the model installed (`mnemon model install bge-small-en`) in
//! `$MNEMON_MODELS` or the default models directory. Without it each test
//! prints a SKIPPED notice, or fails when `MNEMON_REQUIRE_MODELS=1` (as in CI).
#![cfg(feature = "neural")]

mod common;

use std::io::Write;
use std::sync::OnceLock;

use mnemon::embed::bge::{BgeEmbedder, BGE_MAX_TOKENS};
use mnemon::embed::{default_models_dir, load_embedder, EmbedKind, Embedder, EmbedderChoice, Precision, BGE_SMALL_EN};
use serde_json::Value;

fn load(cell: &'static OnceLock<Option<BgeEmbedder>>, precision: Precision) -> Option<&'static BgeEmbedder> {
    let m = cell.get_or_init(|| {
        let dir = common::models::installed_dir(&BGE_SMALL_EN, "bge-small-en-v1.5")?;
        Some(BgeEmbedder::load_with(&dir, precision).expect("load installed bge-small-en"))
    });
    if m.is_none() {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        let _ = writeln!(std::io::stderr(), "SKIPPED {name}: needs bge-small-en-v1.5");
    }
    m.as_ref()
}

/// The model with `f32` products.
fn model() -> Option<&'static BgeEmbedder> {
    static MODEL: OnceLock<Option<BgeEmbedder>> = OnceLock::new();
    load(&MODEL, Precision::F32)
}

/// The model with int8 products (the default where AVX-512 VNNI exists).
fn model_int8() -> Option<&'static BgeEmbedder> {
    static MODEL: OnceLock<Option<BgeEmbedder>> = OnceLock::new();
    load(&MODEL, Precision::Int8)
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// (kind, text, token count, reference vector) from the fixture.
fn references() -> Vec<(EmbedKind, String, usize, Vec<f32>)> {
    let raw = include_str!("fixtures/bge/reference.json");
    let doc: Value = serde_json::from_str(raw).unwrap();
    assert_eq!(doc["model_sha256"], BGE_SMALL_EN.files[0].2);
    doc["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let kind = if t["kind"] == "query" { EmbedKind::Query } else { EmbedKind::Passage };
            let v = t["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            (kind, t["text"].as_str().unwrap().to_string(), t["tokens"].as_u64().unwrap() as usize, v)
        })
        .collect()
}

/// Our encoder's vectors against onnxruntime's on the same file: cosine at
/// least 0.99 with either arithmetic (onnxruntime quantises activations per
/// tensor, we keep them `f32` or quantise them per row), the query with the
/// instruction prefix, the same token ids.
#[test]
fn vectors_match_onnxruntime() {
    for m in [model(), model_int8()].into_iter().flatten() {
        for (kind, text, tokens, want) in references() {
            assert_eq!(m.token_ids(&text, kind).unwrap().len(), tokens, "{text}");
            let got = m.embed(&[&text], kind).unwrap().remove(0);
            assert_eq!(got.len(), 384);
            let c = cos(&got, &want);
            let _ = writeln!(std::io::stderr(), "{:?} {kind:?} {text:?}: cosine {c:.5}", m.precision());
            assert!(c >= 0.99, "{:?} {kind:?} {text:?}: cosine {c} with onnxruntime", m.precision());
        }
    }
}

/// A query is embedded with the instruction prefix, a passage without:
/// the two vectors of one text differ, and the question finds its answer.
#[test]
fn queries_and_passages() {
    let Some(m) = model() else { return };
    let q = "Where does Anna live now?";
    let (qv, pv) = (m.embed(&[q], EmbedKind::Query).unwrap(), m.embed(&[q], EmbedKind::Passage).unwrap());
    assert!(cos(&qv[0], &pv[0]) < 0.99);
    let passages = [
        "My sister Anna moved to Lisbon last spring and works as a nurse.",
        "The quarterly report is due on Friday; remind me on Thursday.",
        "I prefer oat milk in my coffee.",
    ];
    let ps = m.embed(&passages, EmbedKind::Passage).unwrap();
    let scores: Vec<f32> = ps.iter().map(|p| cos(&qv[0], p)).collect();
    assert!(scores[0] > scores[1] && scores[0] > scores[2], "{scores:?}");
    // Batched or alone, the same vectors.
    for (p, v) in passages.iter().zip(&ps) {
        assert!(cos(&m.embed(&[p], EmbedKind::Passage).unwrap()[0], v) > 0.99999);
    }
}

/// Long texts are cut at 512 word pieces; the empty text still gets
/// `[CLS] [SEP]` and a unit vector.
#[test]
fn long_and_empty_texts() {
    let Some(m) = model() else { return };
    let long = "memory ".repeat(2000);
    assert_eq!(m.token_ids(&long, EmbedKind::Query).unwrap().len(), BGE_MAX_TOKENS);
    let vs = m.embed(&[&long, ""], EmbedKind::Passage).unwrap();
    for v in vs {
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
}

/// The product's loader finds it by name and records its id.
#[test]
fn loads_by_name() {
    if model().is_none() {
        return;
    }
    let e = load_embedder(EmbedderChoice::BgeSmallEn, &default_models_dir()).unwrap();
    assert_eq!(e.model_id(), "bge-small-en-v1.5@6c9c6101a956");
    assert_eq!(e.dim(), 384);
}
