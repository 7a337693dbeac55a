//! LongMemEval loader (`longmemeval_s_498.jsonl.gz`, also the oracle JSON).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use serde::Deserialize;

use super::{bad_record, json_error, Doc, Query, Split, Unit};
use mnemon::portability::parse_longmemeval_date;
use mnemon::Namespace;
use mnemon::{Error, Result};

#[derive(Deserialize)]
struct Record {
    question_id: String,
    question_type: String,
    question: String,
    question_date: String,
    haystack_dates: Vec<String>,
    haystack_session_ids: Vec<String>,
    haystack_sessions: Vec<Vec<Turn>>,
}

#[derive(Deserialize)]
struct Turn {
    role: String,
    content: String,
    #[serde(default)]
    has_answer: Option<bool>,
}

/// Reads the records of a LongMemEval file — JSON lines, or one JSON
/// document holding an array of records or a single record; gzip when the
/// name ends in `.gz` — and hands each to `each`, in file order.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read (or the gzip stream is
/// corrupt); [`Error::InvalidInput`] (field `"file"`, naming the line, or
/// `document`) when a record does not parse; whatever `each` returns.
pub(crate) fn read_records<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    let file = File::open(path).map_err(|e| mnemon::Error::io_at(path, e))?;
    let mut reader: Box<dyn BufRead> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(BufReader::new(MultiGzDecoder::new(file)))
    } else {
        Box::new(BufReader::new(file))
    };
    let mut line = String::new();
    let mut line_no = 0usize;
    let mut first = true;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        line_no += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if first && (trimmed.starts_with('[') || trimmed == "{") {
            // One JSON document (an array of records, or a single record).
            let mut rest = String::new();
            reader.read_to_string(&mut rest)?;
            let whole = format!("{line}{rest}");
            let records: Vec<T> = if trimmed.starts_with('[') {
                serde_json::from_str(&whole).map_err(|e| json_error(path, "document", &e))?
            } else {
                vec![serde_json::from_str(&whole).map_err(|e| json_error(path, "document", &e))?]
            };
            for r in records {
                each(r)?;
            }
            return Ok(());
        }
        first = false;
        each(serde_json::from_str(trimmed).map_err(|e| json_error(path, &format!("line {line_no}"), &e))?)?;
    }
}

/// Loads LongMemEval: one [`Unit`] per question (name `lme:<question_id>`),
/// holding that question's own haystack, as the official
/// `src/retrieval/run_retrieval.py` builds a corpus per question.
///
/// - Docs: **user turns only** (the official setting), in haystack order; id
///   `"<session_id>#<i>"` with `i` the 1-based index over all turns of the
///   session (the official turn id is `<session_id>_<i>`); a session id that
///   repeats within one haystack (13 S questions, never gold) gets
///   `"<session_id>~<n>#<i>"` for its n-th occurrence but keeps its session.
///   Session = session id, time = the session's `haystack_dates` entry,
///   speaker `"user"`. User turns with empty content (9 in S, none gold) are
///   skipped.
/// - Query: the question, `time` = `question_date`, category =
///   `question_type`, `abstention` for ids ending in `_abs`; gold = user turns
///   with `has_answer: true`, gold sessions = the sessions holding them (the
///   official `correct_docs`; an answer session without such a turn is not
///   gold).
/// - Split: ids listed in `dev_ids` (one per line, e.g.
///   `longmemeval_s_dev100_ids.txt`) are dev, the rest test; with no list,
///   every unit is test.
///
/// Reads gzip when the name ends in `.gz`; the content may be JSON lines or
/// one JSON array of records (the oracle file).
///
/// # Errors
/// [`Error::Io`] when a file cannot be read (or the gzip stream is corrupt);
/// [`Error::InvalidInput`] (field `"file"`, naming the file and the line or
/// question) when a record does not parse, its haystack lists differ in
/// length, a date does not parse, or a dev id is not in the file.
pub fn load_longmemeval(path: &Path, dev_ids: Option<&Path>) -> Result<Vec<Unit>> {
    let dev: HashSet<String> = match dev_ids {
        None => HashSet::new(),
        Some(p) => {
            std::fs::read_to_string(p)?.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
        }
    };
    let mut units = Vec::new();
    read_records(path, |r: Record| {
        units.push(to_unit(path, r, &dev)?);
        Ok(())
    })?;

    if let Some(p) = dev_ids {
        let have: HashSet<&str> = units.iter().filter_map(|u| u.name.strip_prefix("lme:")).collect();
        let mut missing: Vec<&String> = dev.iter().filter(|id| !have.contains(id.as_str())).collect();
        missing.sort();
        if let Some(id) = missing.first() {
            return Err(Error::invalid(
                "file",
                format!(
                    "{}: dev id {id:?} ({} missing in all) is not a question of {}",
                    p.display(),
                    missing.len(),
                    path.display()
                ),
            ));
        }
    }
    Ok(units)
}

fn to_unit(path: &Path, r: Record, dev: &HashSet<String>) -> Result<Unit> {
    let rec = format!("question {}", r.question_id);
    let n = r.haystack_sessions.len();
    if r.haystack_session_ids.len() != n || r.haystack_dates.len() != n {
        return Err(bad_record(
            path,
            &rec,
            format!(
                "haystack lists differ in length: {} sessions, {} ids, {} dates",
                n,
                r.haystack_session_ids.len(),
                r.haystack_dates.len()
            ),
        ));
    }
    let qtime = parse_longmemeval_date(&r.question_date)
        .ok_or_else(|| bad_record(path, &rec, format!("unparseable question_date {:?}", r.question_date)))?;

    let mut docs = Vec::new();
    let mut gold = Vec::new();
    let mut gold_sessions: Vec<String> = Vec::new();
    let mut occurrences: HashMap<&str, usize> = HashMap::new();
    for ((sid, date), turns) in r.haystack_session_ids.iter().zip(&r.haystack_dates).zip(&r.haystack_sessions) {
        let time = parse_longmemeval_date(date)
            .ok_or_else(|| bad_record(path, &rec, format!("session {sid}: unparseable date {date:?}")))?;
        let occ = occurrences.entry(sid.as_str()).or_insert(0);
        *occ += 1;
        let prefix = if *occ == 1 { sid.clone() } else { format!("{sid}~{occ}") };
        for (i, t) in turns.iter().enumerate() {
            if t.role != "user" {
                continue;
            }
            let is_gold = t.has_answer == Some(true);
            if t.content.trim().is_empty() && !is_gold {
                continue;
            }
            let id = format!("{prefix}#{}", i + 1);
            if is_gold {
                gold.push(id.clone());
                if !gold_sessions.contains(sid) {
                    gold_sessions.push(sid.clone());
                }
            }
            docs.push(Doc {
                id,
                text: t.content.clone(),
                session: sid.clone(),
                time: Some(time),
                speaker: Some("user".into()),
            });
        }
    }

    let split = if dev.contains(&r.question_id) { Split::Dev } else { Split::Test };
    let name = format!("lme:{}", r.question_id);
    Namespace::new(name.as_str()).map_err(|e| bad_record(path, &rec, e))?;
    let query = Query {
        abstention: r.question_id.ends_with("_abs"),
        id: r.question_id,
        text: r.question,
        gold,
        gold_sessions,
        category: Some(r.question_type),
        split,
        time: Some(qtime),
        gold_dropped: Vec::new(),
        gold_repaired: false,
    };
    Ok(Unit { name, split, docs, queries: vec![query] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn eval_longmemeval_dates_parse() {
        let t = parse_longmemeval_date("2023/05/30 (Tue) 23:40");
        assert_eq!(t, Some(Utc.with_ymd_and_hms(2023, 5, 30, 23, 40, 0).unwrap()));
        assert!(parse_longmemeval_date("2023/05/30 (Tue)").is_none());
        assert!(parse_longmemeval_date("30 May 2023").is_none());
    }
}
