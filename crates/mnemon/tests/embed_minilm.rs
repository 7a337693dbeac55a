//! all-MiniLM-L6-v2 through candle, checked against published and measured
//! reference values.
//!
//! Needs the model installed (`mnemon model install minilm`) in
//! `$MNEMON_MODELS` or the default models directory. Without it each test
//! prints a SKIPPED notice, or fails when `MNEMON_REQUIRE_MODELS=1` (as in CI).
#![cfg(feature = "neural")]

mod common;

use std::io::Write;
use std::sync::OnceLock;

use mnemon::embed::{
    default_models_dir, is_installed, load_embedder, model_dir, EmbedKind, Embedder, EmbedderChoice, MiniLmEmbedder,
    Precision, MINILM,
};

/// The model with `f32` products: the published network, to float rounding.
fn model() -> Option<&'static MiniLmEmbedder> {
    static MODEL: OnceLock<Option<MiniLmEmbedder>> = OnceLock::new();
    load(&MODEL, Precision::F32)
}

/// The model with int8 products (the default where AVX-512 VNNI exists).
fn model_int8() -> Option<&'static MiniLmEmbedder> {
    static MODEL: OnceLock<Option<MiniLmEmbedder>> = OnceLock::new();
    load(&MODEL, Precision::Int8)
}

fn load(cell: &'static OnceLock<Option<MiniLmEmbedder>>, precision: Precision) -> Option<&'static MiniLmEmbedder> {
    let m = cell.get_or_init(|| {
        let dir = common::models::installed_dir(&MINILM, "all-MiniLM-L6-v2")?;
        Some(MiniLmEmbedder::load_with(&dir, precision).expect("load installed MiniLM"))
    });
    if m.is_none() {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        let _ = writeln!(std::io::stderr(), "SKIPPED {name}: needs all-MiniLM-L6-v2");
    }
    m.as_ref()
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn one(m: &MiniLmEmbedder, t: &str) -> Vec<f32> {
    m.embed(&[t], EmbedKind::Passage).unwrap().remove(0)
}

#[test]
fn identity_and_shape() {
    let Some(m) = model() else { return };
    assert_eq!(m.model_id(), "all-MiniLM-L6-v2@53aa51172d14");
    assert_eq!(m.dim(), 384);
    assert!(m.embed(&[], EmbedKind::Query).unwrap().is_empty());
    for t in ["", "hello", "我喜欢喝偏酸的咖啡"] {
        let v = one(m, t);
        assert_eq!(v.len(), 384);
        let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((n - 1.0).abs() < 1e-5, "{t:?}: norm {n}");
    }
}

/// Published: sentence-transformers' usage documentation (sbert.net,
/// "Usage" page) prints, for all-MiniLM-L6-v2, similarities 0.6660, 0.1046
/// and 0.1411 between these three sentences.
#[test]
fn published_similarities() {
    let Some(m) = model() else { return };
    let s = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."];
    let e = m.embed(&s, EmbedKind::Passage).unwrap();
    let close = |got: f32, want: f32| (got - want).abs() < 5e-4;
    assert!(close(cos(&e[0], &e[1]), 0.6660), "{}", cos(&e[0], &e[1]));
    assert!(close(cos(&e[0], &e[2]), 0.1046), "{}", cos(&e[0], &e[2]));
    assert!(close(cos(&e[1], &e[2]), 0.1411), "{}", cos(&e[1], &e[2]));
}

/// Measured with an independent float64 NumPy implementation of the same
/// network (which reproduces the published values above): cosine 0.75534,
/// and the first five components of "This is an example sentence".
#[test]
fn measured_fixtures() {
    let Some(m) = model() else { return };
    let c = cos(&one(m, "A man is eating food."), &one(m, "A man is eating a piece of bread."));
    assert!((c - 0.75534).abs() < 5e-4, "food/bread cosine {c}");
    let v = one(m, "This is an example sentence");
    let want = [0.067657f32, 0.063496, 0.048713, 0.079305, 0.037448];
    for (i, (g, w)) in v.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-4, "component {i}: got {g}, want {w}");
    }
}

#[test]
fn paraphrase_closer_than_unrelated() {
    let Some(m) = model() else { return };
    let a = one(m, "The new movie is awesome");
    let b = one(m, "The new movie is so great");
    let c = one(m, "The dog plays in the garden");
    assert!(cos(&a, &b) > 0.85, "{}", cos(&a, &b));
    assert!(cos(&a, &c) < 0.2, "{}", cos(&a, &c));
    let q = one(m, "what drink does the user like?");
    let p = one(m, "The user enjoys coffee with a sour taste.");
    let u = one(m, "The meeting is scheduled for Tuesday.");
    assert!(cos(&q, &p) > cos(&q, &u));
}

#[test]
fn batch_preserves_order_and_matches_single() {
    let Some(m) = model() else { return };
    // 45 texts of varied length: crosses the 32-text batch boundary and is
    // reordered internally by length.
    let texts: Vec<String> = (0..45)
        .map(|i| {
            let words = ["alpha", "memory", "coffee", "rain", "agent", "note", "Paris"];
            let n = 1 + (i * 7) % 23;
            (0..n).map(|j| words[(i + j) % words.len()]).collect::<Vec<_>>().join(" ")
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = m.embed(&refs, EmbedKind::Passage).unwrap();
    assert_eq!(batch.len(), refs.len());
    for (t, b) in refs.iter().zip(&batch) {
        let s = one(m, t);
        let max = s.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(max < 1e-5, "{t:?}: batch and single differ by {max}");
    }
}

#[test]
fn long_input_is_truncated() {
    let Some(m) = model() else { return };
    let long = "memory engines store facts for agents and recall them later. ".repeat(100);
    let longer = format!("{long} an entirely different ending about volcanoes");
    let a = one(m, &long);
    let b = one(m, &longer);
    let n: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((n - 1.0).abs() < 1e-5);
    // Everything past 256 word pieces is dropped, so the endings do not matter.
    let max = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(max < 1e-5, "long inputs differ by {max}");
}

#[test]
fn auto_choice_picks_minilm_when_it_is_the_only_model() {
    let Some(_) = model() else { return };
    // A models directory holding MiniLM alone.
    let only = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(model_dir(&MINILM, &default_models_dir()), model_dir(&MINILM, only.path())).unwrap();
    let e = load_embedder(EmbedderChoice::Auto, only.path()).unwrap();
    assert!(e.model_id().starts_with("all-MiniLM-L6-v2@"), "{}", e.model_id());
}

#[test]
fn auto_prefers_e5_but_keeps_the_model_a_store_was_built_with() {
    use mnemon::embed::e5::E5_SMALL;
    use mnemon::embed::load_embedder_for;
    use mnemon::{Engine, Namespace, NewMemory};
    let Some(minilm) = model() else { return };
    let dir = default_models_dir();
    if !is_installed(&E5_SMALL, &dir) {
        assert_ne!(std::env::var("MNEMON_REQUIRE_MODELS").as_deref(), Ok("1"), "e5-small is not installed");
        let _ = writeln!(std::io::stderr(), "SKIPPED: needs e5-small too");
        return;
    }
    let auto = load_embedder(EmbedderChoice::Auto, &dir).unwrap();
    assert!(auto.model_id().starts_with("multilingual-e5-small"), "{}", auto.model_id());

    let data = tempfile::tempdir().unwrap();
    assert_eq!(Engine::recorded_model(data.path().join("none")).unwrap(), None);
    let shared: std::sync::Arc<dyn Embedder> =
        std::sync::Arc::new(MiniLmEmbedder::load(&model_dir(&MINILM, &dir)).unwrap());
    let engine = Engine::builder(data.path()).embedder(shared).open().unwrap();
    engine.remember(&Namespace::new("u").unwrap(), NewMemory::new("I moved to Hangzhou last month")).unwrap();
    engine.close().unwrap();
    let recorded = Engine::recorded_model(data.path()).unwrap();
    assert_eq!(recorded.as_deref(), Some(minilm.model_id()));
    let kept = load_embedder_for(EmbedderChoice::Auto, &dir, recorded.as_deref()).unwrap();
    assert_eq!(kept.model_id(), minilm.model_id());
    let asked = load_embedder_for(EmbedderChoice::E5, &dir, recorded.as_deref()).unwrap();
    assert_eq!(asked.model_id(), auto.model_id());
    // A hashing store stays one under auto; asking for e5 moves it.
    let hashing = load_embedder_for(EmbedderChoice::Auto, &dir, Some("hashing-v1-384")).unwrap();
    assert_eq!(hashing.model_id(), "hashing-v1-384");
    let moved = load_embedder_for(EmbedderChoice::E5, &dir, Some("hashing-v1-384")).unwrap();
    assert_eq!(moved.model_id(), auto.model_id());
    // Reading the recorded model released the lock.
    Engine::open(data.path()).unwrap().close().unwrap();
}

/// Real sentences of both languages and lengths (MiniLM is an English
/// model; the Chinese ones check that nothing breaks, not quality).
const SENTENCES: &[&str] = &[
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "I moved to Lisbon last spring and I still miss the rain in Seattle.",
    "My daughter's piano recital is on Friday at six, please remind me on Thursday.",
    "Caroline went to the LGBTQ support group yesterday and said it was powerful.",
    "The quarterly report is due next Tuesday; Melanie wants the budget figures first.",
    "我下个月要搬到上海，新公司在浦东。",
    "请记住我对花生过敏，点菜的时候不要有花生。",
];

/// Int8 products keep every vector within cosine 0.99 of the `f32`
/// network's, and pairwise similarities within 0.02; a text's vector does
/// not depend on its batch.
#[test]
fn int8_vectors_stay_close_to_f32() {
    let (Some(f), Some(q)) = (model(), model_int8()) else { return };
    assert_eq!((f.precision(), q.precision()), (Precision::F32, Precision::Int8));
    let long = SENTENCES.join(" ").repeat(4);
    let mut texts: Vec<&str> = SENTENCES.to_vec();
    texts.push(&long);
    for kind in [EmbedKind::Passage, EmbedKind::Query] {
        let (a, b) = (f.embed(&texts, kind).unwrap(), q.embed(&texts, kind).unwrap());
        for ((x, y), t) in a.iter().zip(&b).zip(&texts) {
            let c = cos(x, y);
            assert!(c >= 0.99, "{t:?}: cosine {c} between f32 and int8");
        }
        for i in 0..a.len() {
            for j in i + 1..a.len() {
                let d = (cos(&a[i], &a[j]) - cos(&b[i], &b[j])).abs();
                assert!(d < 0.02, "similarity of {i}/{j} moved by {d}");
            }
        }
        for (t, y) in texts.iter().zip(&b) {
            assert_eq!(&q.embed(&[t], kind).unwrap()[0], y, "{t:?}: batch and single differ");
        }
    }
}
