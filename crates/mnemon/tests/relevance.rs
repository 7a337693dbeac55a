//! Which recalled memories count as relevant, and what the block then
//! holds: standing constraints for advice questions, the span a question
//! names, relations the store never mentions, memories about someone else,
//! newer values stored without a key, excerpts of long memories, and
//! recall and `context` agreeing on abstention. The hashing embedder
//! keeps cosines near 0 for texts that share no word, so every ground
//! other than meaning is what puts a memory in the block here.

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use std::sync::Arc;

use mnemon::embed::HashingEmbedder;

#[path = "common/models.rs"]
mod models;
use mnemon::recall::{Abstain, Grounds};
use mnemon::{ContextOptions, Engine, Kind, Namespace, NewMemory, RecallOptions};

type R = Result<(), Box<dyn std::error::Error>>;

fn open(dir: &std::path::Path) -> mnemon::Result<(Engine, Namespace)> {
    let engine = Engine::builder(dir.join("store")).embedder(Arc::new(HashingEmbedder::default())).open()?;
    Ok((engine, Namespace::new("u1")?))
}

fn asked_at() -> DateTime<FixedOffset> {
    FixedOffset::east_opt(8 * 3600).expect("offset").with_ymd_and_hms(2026, 6, 10, 19, 0, 0).single().expect("time")
}

fn context(engine: &Engine, ns: &Namespace, q: &str) -> mnemon::Result<mnemon::recall::ContextBlock> {
    let recall = RecallOptions { reference_time: Some(asked_at()), record_access: false, ..RecallOptions::default() };
    engine.context(ns, q, &ContextOptions { recall, budget_tokens: 400, ..ContextOptions::default() })
}

fn relevant_lines(block: &str) -> Vec<&str> {
    block.lines().skip_while(|l| !l.starts_with("## Relevant")).skip(1).take_while(|l| l.starts_with("- ")).collect()
}

#[test]
fn an_advice_question_gets_the_standing_constraints_that_share_no_word_with_it() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    for text in ["Hates cilantro", "Allergic to peanuts", "Works as a nurse at St Mary's", "我对海鲜过敏"] {
        engine.remember(&ns, NewMemory::new(text))?;
    }
    for q in ["What should I cook for dinner tonight?", "Can you recommend a Thai restaurant?", "今晚吃什么？"] {
        let block = context(&engine, &ns, q)?;
        let lines = relevant_lines(&block.text);
        for needed in ["Hates cilantro", "Allergic to peanuts", "我对海鲜过敏"] {
            assert!(lines.iter().any(|l| l.ends_with(needed)), "{q}: {needed} missing from\n{}", block.text);
        }
        assert!(!block.abstained, "{q}");
    }
    // Asked as a question about what is stored, the same store holds no
    // answer: recall abstains, and the block's relevant part is empty.
    let block = context(&engine, &ns, "When is the quarterly tax deadline?")?;
    assert!(block.abstained && block.included == 0, "{}", block.text);
    Ok(())
}

#[test]
fn a_question_that_names_only_a_span_is_answered_by_the_span() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    let day = |d: u32| Utc.with_ymd_and_hms(2026, 6, d, 12, 0, 0).single().expect("day");
    engine.remember(
        &ns,
        NewMemory::new("Hiked the Dragon's Back trail with Lena").event_time(day(2)).kind(Kind::Episode),
    )?;
    engine.remember(&ns, NewMemory::new("去医院做了体检").event_time(day(4)).kind(Kind::Episode))?;
    engine.remember(
        &ns,
        NewMemory::new("Repainted the bedroom walls sage green")
            .event_time(Utc.with_ymd_and_hms(2026, 4, 1, 12, 0, 0).single().expect("day"))
            .kind(Kind::Episode),
    )?;
    for q in ["What did I do last week?", "上周我做了什么？"] {
        let block = context(&engine, &ns, q)?;
        assert!(block.query_time.is_some(), "{q}");
        let lines = relevant_lines(&block.text);
        assert!(lines.iter().any(|l| l.contains("Dragon's Back")), "{q}:\n{}", block.text);
        assert!(lines.iter().any(|l| l.contains("体检")), "{q}:\n{}", block.text);
        // The April memory is not from the span and has no other ground:
        // it comes after the two that are.
        let at = |needle: &str| lines.iter().position(|l| l.contains(needle));
        assert!(at("bedroom").is_none_or(|b| b > at("Dragon's Back").unwrap() && b > at("体检").unwrap()), "{q}");
    }
    Ok(())
}

#[test]
fn a_memory_from_the_span_about_someone_else_does_not_answer() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    let at = |y: i32, m: u32, d: u32| Utc.with_ymd_and_hms(y, m, d, 12, 0, 0).single().expect("day");
    // Last year (2025, asked in June 2026): the father's gift.
    engine.remember(
        &ns,
        NewMemory::new("Gave Dad a set of golf lessons for his birthday")
            .event_time(at(2025, 9, 14))
            .kind(Kind::Episode),
    )?;
    engine.remember(&ns, NewMemory::new("Mom lives in Leeds"))?;
    let floors = engine.embedder().context_floor();
    let opts = RecallOptions {
        abstain: Some(floors),
        reference_time: Some(asked_at()),
        record_access: false,
        ..RecallOptions::default()
    };
    let golf = |q: &str| -> mnemon::Result<Option<Grounds>> {
        let hits = engine.recall(&ns, q, &opts)?;
        Ok(hits.iter().find(|h| h.memory.content.contains("golf")).and_then(|h| h.explain.grounds))
    };
    // From the span, but about the father: no answer to the mother's gift.
    assert_eq!(golf("What did I get Mom for her birthday last year?")?, None);
    // Asked about the father, or about the span alone, it answers.
    assert!(golf("What did I get Dad for his birthday last year?")?.is_some());
    assert!(golf("What did I do last year?")?.is_some());
    Ok(())
}

#[test]
fn a_relation_the_store_never_names_grounds_nothing() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    engine.remember(&ns, NewMemory::new("Brother Jake's birthday is October 3"))?;
    engine.remember(&ns, NewMemory::new("表姐在广州当英语老师"))?;
    for q in ["When is my sister's birthday?", "我表妹在哪工作？"] {
        let block = context(&engine, &ns, q)?;
        assert!(block.abstained && block.included == 0, "{q}:\n{}", block.text);
        assert!(!block.unknown_names.is_empty(), "{q}");
    }
    // The brother's birthday is found by its words.
    let block = context(&engine, &ns, "When is my brother's birthday?")?;
    assert!(relevant_lines(&block.text).iter().any(|l| l.contains("October 3")), "{}", block.text);
    Ok(())
}

#[test]
fn recall_and_context_agree_and_each_hit_says_why() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    engine.remember(&ns, NewMemory::new("Hates cilantro"))?;
    engine.remember(&ns, NewMemory::new("Parks in lot C at the office"))?;
    let floors = engine.embedder().context_floor();
    let opts = RecallOptions { abstain: Some(floors), record_access: false, ..RecallOptions::default() };
    let hits = engine.recall(&ns, "What should I cook tonight?", &opts)?;
    let standing: Vec<_> = hits.iter().filter(|h| h.explain.grounds == Some(Grounds::Standing)).collect();
    assert_eq!(standing.len(), 1, "{hits:?}");
    assert_eq!(standing[0].memory.content, "Hates cilantro");
    for h in &hits {
        assert!((0.0..=1.0).contains(&h.score), "{}", h.score);
    }
    // Unrelated: both abstain.
    let q = "Which football club does Marco support?";
    assert!(engine.recall(&ns, q, &opts)?.is_empty());
    assert!(context(&engine, &ns, q)?.abstained);
    // Floors at -1 never abstain, whatever the query names.
    let never = RecallOptions { abstain: Some(Abstain::NEVER), ..opts };
    assert_eq!(engine.recall(&ns, "When is my sister's birthday?", &never)?.len(), 2);
    Ok(())
}

#[test]
fn a_long_memory_is_quoted_by_the_passage_that_answers() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    let mut transcript = String::from("Platform sync notes. ");
    for i in 0..60 {
        transcript
            .push_str(&format!("Item {i}: the team reviewed dashboards, on-call pages and sprint tickets in detail. "));
    }
    transcript
        .push_str("Decision: the billing database will migrate to PostgreSQL next quarter, and Mei owns the rollout.");
    engine.remember(&ns, NewMemory::new(transcript.clone()).kind(Kind::Episode))?;
    engine.remember(&ns, NewMemory::new("Prefers standing desks"))?;
    let block = context(&engine, &ns, "Which database will billing migrate to?")?;
    assert_eq!(block.excerpts, 1, "{}", block.text);
    let line = relevant_lines(&block.text).into_iter().find(|l| l.contains("excerpt)")).expect("an excerpt entry");
    assert!(line.contains("PostgreSQL"), "{line}");
    // The passage ends the memory: no mark after it; one before it.
    assert!(line.ends_with("owns the rollout.") && line.contains("excerpt) … "), "{line}");
    assert!(block.tokens <= 400);
    Ok(())
}

#[test]
fn a_long_memory_is_quoted_by_the_passages_that_name_the_topic_and_settle_it() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    // The topic is named early; the decision comes far later, in a
    // passage that shares few of the question's words.
    let mut notes = String::from("Weekly sync. We must settle the analytics migration today. ");
    for i in 0..40 {
        notes
            .push_str(&format!("Item {i}: the team reviewed dashboards, on-call pages and sprint tickets in detail. "));
    }
    notes.push_str("Dana closed the last item: we go with ClickHouse for the analytics store, starting with events. ");
    for i in 0..10 {
        notes.push_str(&format!("Note {i}: lunch orders, parking passes and holiday rotas were collected. "));
    }
    engine.remember(&ns, NewMemory::new(notes).kind(Kind::Episode))?;
    let block = context(&engine, &ns, "What did we choose for the analytics migration?")?;
    assert_eq!(block.excerpts, 1, "{}", block.text);
    let line = relevant_lines(&block.text).into_iter().find(|l| l.contains("excerpt)")).expect("an excerpt entry");
    assert!(line.contains("ClickHouse"), "{line}");
    // Two passages apart: marked between them and after the last.
    assert!(line.contains(" … ") && line.ends_with(" …"), "{line}");
    assert!(block.tokens <= 400);
    Ok(())
}

#[test]
fn a_hit_about_someone_else_does_not_answer() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = open(dir.path())?;
    for text in [
        "In the planning meeting Lena said the launch should slip a week",
        "Mark is the new backend hire",
        "Son Eli went to Camp Tecumseh for two weeks in July",
        "Daughter Ruby takes ballet on Wednesdays",
        "Landlord is Mr. Zhou; rent goes to him on the 5th",
    ] {
        engine.remember(&ns, NewMemory::new(text))?;
    }
    let floors = engine.embedder().context_floor();
    let opts = RecallOptions { abstain: Some(floors), record_access: false, ..RecallOptions::default() };
    let grounds = |q: &str, about: &str| -> mnemon::Result<Option<Grounds>> {
        let hits = engine.recall(&ns, q, &opts)?;
        Ok(hits.iter().find(|h| h.memory.content.contains(about)).and_then(|h| h.explain.grounds))
    };
    // Lena's words do not answer what Mark said, nor the son's camp which
    // camp the daughter went to, whatever words they share.
    assert_eq!(grounds("What did Mark say about the launch in the planning meeting?", "Lena said")?, None);
    assert_eq!(grounds("Which summer camp did my daughter go to?", "Camp Tecumseh")?, None);
    // Asked about Lena, or the son, they do.
    assert!(grounds("What did Lena say about the launch in the planning meeting?", "Lena said")?.is_some());
    assert!(grounds("Which camp did my son go to?", "Camp Tecumseh")?.is_some());
    // A relation named in the other language is the same person.
    assert_eq!(grounds("我的房东是谁？", "Mr. Zhou")?, Some(Grounds::Words));
    let block = context(&engine, &ns, "我的房东是谁？")?;
    assert!(relevant_lines(&block.text)[0].contains("Mr. Zhou"), "{}", block.text);
    Ok(())
}

#[test]
fn a_newer_memory_that_says_it_changed_comes_before_the_value_it_replaces() -> R {
    // Whether two memories state the same attribute is read from a
    // model's vectors; the hashing embedder has none to read.
    let Some(e5) = models::installed(mnemon::embed::EmbedderChoice::E5) else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path().join("store")).embedder(e5).open()?;
    let ns = Namespace::new("u1")?;
    let at = |y, m, d| Utc.with_ymd_and_hms(y, m, d, 9, 0, 0).single().expect("time");
    engine
        .remember(&ns, NewMemory::new("Works at Accenture as a technology consultant").event_time(at(2024, 2, 10)))?;
    engine.remember(
        &ns,
        NewMemory::new("Just joined Figma as a design engineer; first week went great").event_time(at(2026, 5, 4)),
    )?;
    engine.remember(&ns, NewMemory::new("Lives in Oakland near Lake Merritt"))?;
    engine.remember(&ns, NewMemory::new("Has a sister in Portland"))?;
    let block = context(&engine, &ns, "Where do I work?")?;
    let lines = relevant_lines(&block.text);
    let (new, old) = (
        lines.iter().position(|l| l.contains("Figma")).expect("newer value shown"),
        lines.iter().position(|l| l.contains("Accenture")).expect("older value kept"),
    );
    assert!(new < old, "{}", block.text);
    Ok(())
}
