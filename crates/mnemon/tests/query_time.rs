//! Time expressions in a query ("two months ago", "yesterday", "上周六",
//! "in March") favour the memories from the span they name, read relative to
//! the question's reference time, an `as_of` view's time, or the clock.

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use mnemon::embed::HashingEmbedder;
use mnemon::{recall::Weights, AsOf, Engine, Namespace, NewMemory, RecallOptions};

type R = Result<(), Box<dyn std::error::Error>>;

fn at(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 10, 0, 0).single().expect("valid date")
}

/// A diary of episodes, each with the time it happened.
const DIARY: &[(&str, (i32, u32, u32))] = &[
    ("Visited the British museum with Rachel and saw the Rosetta Stone.", (2023, 1, 28)),
    ("Visited the Louvre museum and queued for hours to see the Mona Lisa.", (2023, 3, 10)),
    ("周六和朋友去了上海博物馆看青铜器展。", (2023, 3, 25)),
    ("Baked sourdough bread for the first time; the crust was too dark.", (2023, 3, 31)),
    ("Bought a new road bike for the spring races.", (2022, 12, 20)),
    ("Cooked a mushroom risotto for my partner on Valentine's day.", (2023, 2, 14)),
    ("Visited the science museum with my nephew.", (2022, 6, 5)),
];

fn diary(dir: &std::path::Path) -> Result<(Engine, Namespace), Box<dyn std::error::Error>> {
    let engine = Engine::builder(dir).embedder(Arc::new(HashingEmbedder::new(384)?)).open()?;
    let ns = Namespace::new("diary")?;
    for (text, (y, m, d)) in DIARY {
        engine.remember(&ns, NewMemory::new(*text).event_time(at(*y, *m, *d)))?;
    }
    Ok((engine, ns))
}

fn asked(reference: DateTime<Utc>) -> RecallOptions {
    RecallOptions {
        top_k: 3,
        record_access: false,
        reference_time: Some(reference.fixed_offset()),
        ..RecallOptions::default()
    }
}

fn first(engine: &Engine, ns: &Namespace, q: &str, opts: &RecallOptions) -> Result<String, mnemon::Error> {
    Ok(engine.recall(ns, q, opts)?.into_iter().next().map(|h| h.memory.content).unwrap_or_default())
}

#[test]
fn memories_from_the_named_span_rank_first() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = diary(dir.path())?;
    // Saturday 1 April 2023.
    let opts = asked(at(2023, 4, 1));
    let q = "Which museum did I visit two months ago?";
    let hits = engine.recall(&ns, q, &opts)?;
    assert_eq!(hits[0].memory.content, DIARY[0].0, "{hits:#?}");
    assert_eq!(hits[0].explain.time, 1.0);
    assert!(hits.iter().skip(1).all(|h| h.explain.time < 1.0));
    // The same question without the time term ranks by text alone: the
    // Louvre and the science museum match "visited" and "museum" as well.
    let plain = RecallOptions { weights: Weights { time: 0.0, ..Weights::default() }, ..opts.clone() };
    let hits = engine.recall(&ns, q, &plain)?;
    assert!(hits.iter().all(|h| h.explain.time == 0.0));
    assert_ne!(hits[0].memory.content, DIARY[0].0, "{hits:#?}");
    assert_eq!(plain.query_time(q), None);

    assert_eq!(first(&engine, &ns, "What did I bake yesterday?", &opts)?, DIARY[3].0);
    assert_eq!(first(&engine, &ns, "上周六我去了哪个博物馆？", &opts)?, DIARY[2].0);
    assert_eq!(first(&engine, &ns, "What did I cook for my partner last month?", &asked(at(2023, 3, 20)))?, DIARY[5].0);
    // Two museum visits match the words alike; "in March" picks the one
    // from March (the Chinese entry is March too, but the hashing embedder
    // does not read across languages).
    let march = engine.recall(&ns, "Which museum did I visit in March?", &opts)?;
    assert_eq!(march[0].memory.content, DIARY[1].0, "{march:#?}");
    assert_eq!(march[0].explain.time, 1.0);
    Ok(())
}

#[test]
fn the_reference_is_the_question_time_then_the_views_time_then_the_clock() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = diary(dir.path())?;
    let q = "Which museum did I visit last month?";
    // Asked in February 2023: last month is January (the British Museum).
    let span = asked(at(2023, 2, 20)).query_time(q).expect("a span");
    assert_eq!(
        (span.from, span.to),
        (Utc.with_ymd_and_hms(2023, 1, 1, 0, 0, 0).unwrap(), Utc.with_ymd_and_hms(2023, 2, 1, 0, 0, 0).unwrap())
    );
    assert_eq!(span.phrase, "last month");
    // A valid-time view of 20 February reads "last month" the same way.
    let view = RecallOptions {
        top_k: 3,
        record_access: false,
        as_of: Some(AsOf::ValidTime(at(2023, 2, 20))),
        ..RecallOptions::default()
    };
    assert_eq!(view.query_time(q), Some(span.clone()));
    assert_eq!(first(&engine, &ns, q, &view)?, DIARY[0].0);
    // An explicit reference time wins over the view's.
    let both = RecallOptions { reference_time: Some(at(2023, 4, 1).fixed_offset()), ..view };
    assert_eq!(both.query_time(q).map(|t| t.from), Some(Utc.with_ymd_and_hms(2023, 3, 1, 0, 0, 0).unwrap()));
    // Without either, the clock: last month is before now.
    let now = RecallOptions::default().query_time(q).expect("a span");
    assert!(now.to <= Utc::now() && now.to > Utc::now() - chrono::Duration::days(32));
    Ok(())
}

#[test]
fn a_query_without_a_time_is_scored_as_before() -> R {
    let dir = tempfile::tempdir()?;
    let (engine, ns) = diary(dir.path())?;
    let opts = asked(at(2023, 4, 1));
    for q in [
        "Which museum did I visit?",
        "What did I bake for the first time?",
        "我去了哪个博物馆",
        "May I ask about bikes?",
    ] {
        assert_eq!(opts.query_time(q), None, "{q}");
        let with = engine.recall(&ns, q, &opts)?;
        let without = engine.recall(
            &ns,
            q,
            &RecallOptions { weights: Weights { time: 0.0, ..Weights::default() }, ..opts.clone() },
        )?;
        let ids = |h: &[mnemon::Hit]| h.iter().map(|h| (h.memory.id, h.score)).collect::<Vec<_>>();
        assert_eq!(ids(&with), ids(&without), "{q}");
    }
    Ok(())
}

/// The block's dates are days at the reference time's offset, the days its
/// time expressions are read in: an episode at 22:30 UTC on 14 June is
/// written 15 June for a question asked at +08:00, and 14 June in UTC
/// (no reference time) or at -05:00; a turn's date follows the same
/// offset.
#[test]
fn block_dates_are_days_at_the_reference_offset() -> R {
    use chrono::FixedOffset;
    use mnemon::{ContextOptions, NewObservation, Role};
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path()).embedder(Arc::new(HashingEmbedder::new(384)?)).open()?;
    let ns = Namespace::new("tz")?;
    let late = Utc.with_ymd_and_hms(2026, 6, 14, 22, 30, 0).single().expect("valid");
    engine.remember(&ns, NewMemory::new("Went to the night market with Mei in Taipei.").event_time(late))?;
    engine.observe(
        &ns,
        NewObservation::new("s1", Role::User, "We ate stinky tofu at the night market.").event_time(late),
    )?;
    let block = |offset: Option<FixedOffset>| -> Result<String, mnemon::Error> {
        let mut opts = ContextOptions::default();
        opts.recall.reference_time =
            offset.map(|o| Utc.with_ymd_and_hms(2026, 6, 16, 2, 0, 0).unwrap().with_timezone(&o));
        opts.recall.current_session = Some("s1".into());
        opts.recall.abstain = Some(mnemon::recall::Abstain::NEVER);
        Ok(engine.context(&ns, "night market in Taipei", &opts)?.text)
    };
    let east = block(FixedOffset::east_opt(8 * 3600))?;
    assert_eq!(east.matches("- [2026-06-15] (").count(), 2, "{east}");
    assert!(east.contains("- [2026-06-15] (user)"), "{east}");
    assert!(!east.contains("2026-06-14"), "{east}");
    for other in [block(None)?, block(FixedOffset::west_opt(5 * 3600))?] {
        assert_eq!(other.matches("- [2026-06-14] (").count(), 2, "{other}");
        assert!(other.contains("- [2026-06-14] (user)"), "{other}");
        assert!(!other.contains("2026-06-15"), "{other}");
    }
    Ok(())
}
