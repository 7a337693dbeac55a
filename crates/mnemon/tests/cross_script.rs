//! A store holding memories in two scripts (Chinese and English): recall
//! corrects a multilingual embedder's same-language bias for questions
//! written in CJK (`Weights::cross_script`, `Embedder::cross_script_offset`),
//! finds the other script's memories even when the query's own script fills
//! every candidate slot, and keeps the raw cosine in the explanation.

mod common;

use std::sync::Arc;

use mnemon::embed::{EmbedderChoice, HashingEmbedder};
use mnemon::{recall::Weights, Engine, Namespace, NewMemory, RecallOptions};

type R = Result<(), Box<dyn std::error::Error>>;

const ZH: &[&str] = &[
    "我对海鲜过敏，吃了虾身上就会起疹子。",
    "我早餐一般是一杯热豆浆加一个水煮蛋。",
    "我哥哥在深圳做软件工程师。",
    "我一般晚上十一点前就睡觉。",
    "我每个月给爸妈转两千块钱生活费。",
    "我大学在复旦读的统计学专业。",
    "我们公司今年的年会在三亚办。",
    "我开的是一辆白色的特斯拉。",
];

/// Chinese memories that all share words with the question below, so that
/// they take every candidate slot of a small pool.
const ZH_ALLERGIES: &[&str] = &[
    "我对花粉过敏，春天总是打喷嚏。",
    "我对猫毛过敏，去朋友家要先吃药。",
    "我女儿对牛奶过敏。",
    "我对什么都不挑食，就是怕辣。",
    "我吃药以后容易犯困。",
];

const EN: &[&str] = &[
    "I'm allergic to penicillin; I found out after a bad rash in college.",
    "My sister Lena lives in Vancouver and works as a nurse.",
    "Our dog Biscuit is terrified of thunderstorms.",
];

#[test]
fn the_other_scripts_memories_are_candidates_and_the_offset_is_applied() -> R {
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path()).embedder(Arc::new(HashingEmbedder::new(384)?)).open()?;
    let ns = Namespace::new("mixed")?;
    for t in ZH_ALLERGIES.iter().chain(EN) {
        engine.remember(&ns, NewMemory::new(*t))?;
    }
    let q = "我对什么药过敏？";
    // Three candidates per index: the Chinese memories fill them.
    let base = RecallOptions { top_k: 5, candidates: 3, record_access: false, ..RecallOptions::default() };
    let plain = RecallOptions { weights: Weights { cross_script: Some(0.0), ..Weights::default() }, ..base.clone() };
    let hits = engine.recall(&ns, q, &plain)?;
    assert!(hits.iter().all(|h| !EN.contains(&h.memory.content.as_str())), "{hits:#?}");
    // With an offset, a second search among the English memories makes
    // them candidates, and they gain the offset (the cosine shown is raw).
    let shifted = RecallOptions { weights: Weights { cross_script: Some(0.5), ..Weights::default() }, ..base };
    let hits = engine.recall(&ns, q, &shifted)?;
    let english: Vec<_> = hits.iter().filter(|h| EN.contains(&h.memory.content.as_str())).collect();
    assert!(!english.is_empty(), "{hits:#?}");
    for h in english {
        let unshifted = engine.recall(&ns, q, &RecallOptions { top_k: 50, candidates: 50, ..plain.clone() })?;
        let raw = unshifted.iter().find(|u| u.memory.id == h.memory.id).map(|u| u.explain.similarity);
        assert_eq!(Some(h.explain.similarity), raw, "the explanation keeps the raw cosine");
        assert_eq!(h.explain.script_offset, 0.5, "and states the offset added to it");
    }
    // A memory in the query's script gets none.
    for h in hits.iter().filter(|h| !EN.contains(&h.memory.content.as_str())) {
        assert_eq!(h.explain.script_offset, 0.0, "{h:#?}");
    }
    // The hashing embedder states no offset: the default leaves scores as
    // they were.
    let default = RecallOptions { top_k: 5, candidates: 3, record_access: false, ..RecallOptions::default() };
    let a: Vec<_> = engine.recall(&ns, q, &default)?.iter().map(|h| (h.memory.id, h.score)).collect();
    let b: Vec<_> = engine.recall(&ns, q, &plain)?.iter().map(|h| (h.memory.id, h.score)).collect();
    assert_eq!(a, b);
    Ok(())
}

/// multilingual-e5-small: a Chinese question finds the English answer that
/// its own script's memories used to crowd out, and an English question
/// over the same store keeps its answer first.
#[test]
fn e5_finds_english_answers_to_chinese_questions() -> R {
    let Some(e5) = common::models::installed(EmbedderChoice::E5) else {
        return Ok(());
    };
    assert_eq!(e5.cross_script_offset(false), 0.0);
    assert!(e5.cross_script_offset(true) > 0.0);
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path()).embedder(e5).open()?;
    let ns = Namespace::new("mixed")?;
    for t in ZH.iter().chain(EN) {
        engine.remember(&ns, NewMemory::new(*t))?;
    }
    let opts = RecallOptions { top_k: 3, record_access: false, ..RecallOptions::default() };
    let top = |q: &str, o: &RecallOptions| -> mnemon::Result<Vec<String>> {
        Ok(engine.recall(&ns, q, o)?.into_iter().map(|h| h.memory.content).collect())
    };
    let q = "我对什么药过敏？";
    let off = RecallOptions { weights: Weights { cross_script: Some(0.0), ..Weights::default() }, ..opts.clone() };
    assert!(!top(q, &off)?.contains(&EN[0].to_string()), "without the offset the Chinese memories crowd it out");
    assert!(top(q, &opts)?.contains(&EN[0].to_string()), "{:?}", top(q, &opts)?);
    assert_eq!(top("我哥哥做什么工作？", &opts)?[0], ZH[2]);
    assert_eq!(top("What is my dog afraid of?", &opts)?[0], EN[2]);
    Ok(())
}
