//! Loader tests on the small fixtures in `tests/fixtures/eval/`.

use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use mnemon::Error;
use mnemon_eval::{load_locomo, load_longmemeval, load_madial, Dataset, Split, Unit};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval").join(name)
}

fn ids(unit: &Unit) -> Vec<&str> {
    unit.docs.iter().map(|d| d.id.as_str()).collect()
}

fn invalid_reason(e: Error) -> String {
    match e {
        Error::InvalidInput { field, reason } => {
            assert_eq!(field, "file");
            reason
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

#[test]
fn locomo_fixture_units_docs_and_queries() {
    let units = load_locomo(&fixture("locomo_mini.json")).unwrap();
    assert_eq!(units.len(), 2);
    let (a, b) = (&units[0], &units[1]);
    assert_eq!((a.name.as_str(), a.split), ("locomo:conv-26", Split::Dev));
    assert_eq!((b.name.as_str(), b.split), ("locomo:conv-44", Split::Test));

    // Two sessions; the date-time of the missing session 3 is ignored.
    assert_eq!(ids(a), ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]);
    let photo = &a.docs[2];
    assert_eq!(photo.text, "Caroline: Look at my new puppy! [shares a photo of a puppy on a beach]");
    assert_eq!(photo.session, "session_1");
    assert_eq!(photo.speaker.as_deref(), Some("Caroline"));
    assert_eq!(photo.time, Some(Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap()));
    assert_eq!(a.docs[3].text, "Melanie: I ran a charity race for mental health.");
    assert_eq!(a.docs[3].session, "session_2");
    assert_eq!(a.docs[3].time, Some(Utc.with_ymd_and_hms(2023, 6, 19, 10, 4, 0).unwrap()));

    let q = &a.queries;
    assert_eq!(q.len(), 7);
    assert_eq!(q[0].id, "conv-26/q0");
    assert_eq!(q[0].text, "When did Caroline go to the support group?");
    assert_eq!(q[0].category.as_deref(), Some("temporal"));
    assert_eq!(q[0].gold, ["D1:1"]);
    assert!(!q[0].gold_repaired && q[0].gold_dropped.is_empty());
    // Integer answer does not matter; category 4.
    assert_eq!(q[1].category.as_deref(), Some("single-hop"));
    // "D2:1; D1:2" is split.
    assert_eq!(q[2].gold, ["D2:1", "D1:2"]);
    assert!(q[2].gold_repaired);
    assert_eq!(q[2].category.as_deref(), Some("multi-hop"));
    // "D:2:02" is rewritten.
    assert_eq!(q[3].gold, ["D2:2"]);
    assert!(q[3].gold_repaired);
    // Empty evidence stays empty.
    assert!(q[4].gold.is_empty());
    assert_eq!(q[4].category.as_deref(), Some("open-domain"));
    // "D" (malformed) and "D9:9" (absent) are dropped.
    assert_eq!(q[5].gold, ["D1:3"]);
    assert_eq!(q[5].gold_dropped, ["D", "D9:9"]);
    assert!(!q[5].gold_repaired);
    // Category 5 with only adversarial_answer.
    assert_eq!(q[6].category.as_deref(), Some("adversarial"));
    assert!(q.iter().all(|x| x.split == Split::Dev && !x.abstention && x.gold_sessions.is_empty()));

    assert_eq!(ids(b), ["D1:1", "D1:2"]);
    assert_eq!(b.queries.len(), 2);
    assert!(b.queries.iter().all(|x| x.split == Split::Test));
}

#[test]
fn locomo_malformed_files_name_file_and_record() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.json");
    std::fs::write(&p, "[{\"sample_id\": \"conv-1\", ").unwrap();
    let r = invalid_reason(load_locomo(&p).unwrap_err());
    assert!(r.contains("bad.json"), "{r}");

    std::fs::write(
        &p,
        r#"[{"sample_id": "conv-1", "conversation": {"session_1": [
            {"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}, "qa": []}]"#,
    )
    .unwrap();
    let r = invalid_reason(load_locomo(&p).unwrap_err());
    assert!(r.contains("conv-1") && r.contains("session_1_date_time"), "{r}");

    std::fs::write(
        &p,
        r#"[{"sample_id": "conv-1", "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]},
            "qa": [{"question": "q", "evidence": ["D1:1"]}]}]"#,
    )
    .unwrap();
    let r = invalid_reason(load_locomo(&p).unwrap_err());
    assert!(r.contains("qa 0") && r.contains("category"), "{r}");

    let missing = dir.path().join("nope.json");
    assert!(matches!(load_locomo(&missing), Err(Error::Io(_))));
}

#[test]
fn longmemeval_fixture_gz() {
    let units = load_longmemeval(&fixture("longmemeval_mini.jsonl.gz"), Some(&fixture("longmemeval_mini_dev_ids.txt")))
        .unwrap();
    let names: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["lme:q1", "lme:q2", "lme:q3_abs", "lme:q4"]);
    let splits: Vec<Split> = units.iter().map(|u| u.split).collect();
    assert_eq!(splits, [Split::Dev, Split::Test, Split::Test, Split::Test]);

    let q1 = &units[0];
    // User turns only; 1-based index over all turns; empty turn skipped;
    // the repeated session gets an occurrence mark but keeps its session.
    assert_eq!(ids(q1), ["s_a#1", "answer_x1#1", "answer_x1#3", "s_b#3", "answer_x2#1", "s_a~2#1", "answer_x3#2"]);
    assert_eq!(q1.docs[5].session, "s_a");
    assert_eq!(q1.docs[5].time, Some(Utc.with_ymd_and_hms(2023, 5, 5, 9, 0, 0).unwrap()));
    assert_eq!(q1.docs[1].text, "My sister and I visited Lisbon last spring.");
    assert_eq!(q1.docs[1].speaker.as_deref(), Some("user"));
    assert_eq!(q1.queries.len(), 1);
    let q = &q1.queries[0];
    assert_eq!(q.id, "q1");
    assert_eq!(q.text, "Which city did I visit with my sister?");
    assert_eq!(q.category.as_deref(), Some("multi-session"));
    assert_eq!(q.time, Some(Utc.with_ymd_and_hms(2023, 5, 30, 10, 18, 0).unwrap()));
    // Gold = user has_answer turns; answer_x2 (assistant-side evidence only) is not gold.
    assert_eq!(q.gold, ["answer_x1#1", "answer_x3#2"]);
    assert_eq!(q.gold_sessions, ["answer_x1", "answer_x3"]);
    assert!(!q.abstention);

    assert!(units[2].queries[0].abstention);
    assert!(units[3].queries[0].gold.is_empty());
    assert_eq!(units[3].queries[0].category.as_deref(), Some("single-session-assistant"));
}

#[test]
fn longmemeval_plain_json_array_and_no_dev_list() {
    let gz = load_longmemeval(&fixture("longmemeval_mini.jsonl.gz"), None).unwrap();
    assert!(gz.iter().all(|u| u.split == Split::Test));
    let arr = load_longmemeval(&fixture("longmemeval_mini.json"), None).unwrap();
    assert_eq!(gz, arr);
    // Dataset::load dispatches to the same loader.
    let via = Dataset::LongMemEval.load(&fixture("longmemeval_mini.json"), None).unwrap();
    assert_eq!(via, arr);
}

#[test]
fn longmemeval_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ids = dir.path().join("dev.txt");
    std::fs::write(&ids, "q1\nnot_there\n").unwrap();
    let r = invalid_reason(load_longmemeval(&fixture("longmemeval_mini.jsonl.gz"), Some(&ids)).unwrap_err());
    assert!(r.contains("not_there"), "{r}");

    let p = dir.path().join("bad.jsonl");
    let good = std::fs::read_to_string(fixture("longmemeval_mini.json")).unwrap();
    let first: serde_json::Value = serde_json::from_str::<Vec<serde_json::Value>>(&good).unwrap().remove(0);
    std::fs::write(&p, format!("{first}\n{{\"question_id\": \"x\"}}\n")).unwrap();
    let r = invalid_reason(load_longmemeval(&p, None).unwrap_err());
    assert!(r.contains("bad.jsonl") && r.contains("line 2"), "{r}");

    let mut broken = first.clone();
    broken["haystack_dates"] = serde_json::json!(["2023/05/01 (Mon) 09:00"]);
    std::fs::write(&p, format!("{broken}\n")).unwrap();
    let r = invalid_reason(load_longmemeval(&p, None).unwrap_err());
    assert!(r.contains("question q1") && r.contains("differ in length"), "{r}");
}

#[test]
fn madial_fixture_dir_and_file() {
    let units = load_madial(&fixture("madial")).unwrap();
    let by_file = load_madial(&fixture("madial/mini-memory.json")).unwrap();
    assert_eq!(units, by_file);
    let names: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["madial:user-1:dev", "madial:user-2:test"]);

    let bart = &units[0];
    assert_eq!(bart.split, Split::Dev);
    assert_eq!(ids(bart), ["1", "2", "3"]);
    assert_eq!(bart.docs[0].text, "Bart danced at the Christmas party.（活动类，开心）");
    // Each memory is its own episode.
    assert_eq!(bart.docs[0].session, "1");
    assert_eq!(bart.docs[0].time, Some(Utc.with_ymd_and_hms(2023, 12, 25, 0, 0, 0).unwrap()));
    assert_eq!(bart.docs[0].speaker.as_deref(), Some("Bart"));
    // Dialogues 0 and 2 (even positions) are dev.
    let qids: Vec<&str> = bart.queries.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(qids, ["0", "2"]);
    assert_eq!(
        bart.queries[0].text,
        "<Bart>:\"I will dance at the new year party!\"\n<Assistant>:\"Great!\"\n<Bart>:\"Maybe I get ice cream after.\""
    );
    assert_eq!(bart.queries[0].gold, ["1", "3"]);
    // The data gives no time for a dialogue.
    assert!(bart.queries.iter().all(|q| q.time.is_none()));
    // 99 is no memory of user 1.
    assert_eq!(bart.queries[1].gold, ["2"]);
    assert_eq!(bart.queries[1].gold_dropped, ["99"]);

    let lisa = &units[1];
    assert_eq!(lisa.split, Split::Test);
    assert_eq!(ids(lisa), ["4", "5"]);
    assert_eq!(lisa.docs[1].speaker.as_deref(), Some("Lisa"));
    // The leading space of " <BOD>" does not leak into the query.
    assert!(lisa.queries[0].text.starts_with("<Lisa>:"));
}

#[test]
fn madial_errors() {
    let dir = tempfile::tempdir().unwrap();
    let r = invalid_reason(load_madial(dir.path()).unwrap_err());
    assert!(r.contains("found 0 and 0"), "{r}");
    std::fs::write(dir.path().join("x-memory.json"), "{\"1\": {\"event\": \"e\", \"user-id\": 1}}\n").unwrap();
    std::fs::write(
        dir.path().join("x-dialogue.json"),
        "{\"dialogue\": [\"<BOD>\\n\"], \"test-turn\": [1], \"relevant-id\": [1], \"user-id\": 1, \"id\": 0}\n",
    )
    .unwrap();
    let r = invalid_reason(load_madial(dir.path()).unwrap_err());
    assert!(r.contains("x-dialogue.json") && r.contains("dialogue 0"), "{r}");
}
