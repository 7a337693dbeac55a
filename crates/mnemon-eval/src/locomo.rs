//! LoCoMo loader (`locomo10.json`, snap-research/LoCoMo `data/locomo10.json`).

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::{bad_record, json_error, Doc, Query, Split, Unit};
use mnemon::portability::parse_locomo_date;
use mnemon::Namespace;
use mnemon::Result;

/// Dev samples per `SPLITS.md`; every other sample is test.
const DEV_SAMPLES: [&str; 5] = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"];

/// Category codes as the official `task_eval/evaluation.py` maps them.
fn category_name(code: u64) -> String {
    match code {
        1 => "multi-hop".into(),
        2 => "temporal".into(),
        3 => "open-domain".into(),
        4 => "single-hop".into(),
        5 => "adversarial".into(),
        n => format!("category-{n}"),
    }
}

/// Loads `locomo10.json`: one [`Unit`] per sample (name `locomo:<sample_id>`),
/// docs = every turn of every `session_<n>` in session order (id = `dia_id`,
/// text `"<speaker>: <text>"` plus `" [shares <blip_caption>]"` for image
/// turns, session `"session_<n>"`, time from `session_<n>_date_time`), one
/// [`Query`] per `qa` item with the evidence cleaned by [`clean_evidence`],
/// asked at the last session's date (the reference for "last year").
///
/// Split: samples conv-26, -30, -41, -42, -43 are dev, the rest test
/// (`SPLITS.md`). Date-time keys without a session (conv-26 has them for
/// sessions 20–35) are ignored, as the official code iterates sessions.
///
/// # Errors
/// [`mnemon::Error::Io`] when the file cannot be read;
/// [`mnemon::Error::InvalidInput`] (field `"file"`, naming the file and the
/// sample / session / turn / QA item) when it is not JSON, a required field
/// is missing or of the wrong type, a session date cannot be parsed, or a
/// `dia_id` repeats within a sample.
pub fn load_locomo(path: &Path) -> Result<Vec<Unit>> {
    let bytes = std::fs::read(path).map_err(|e| mnemon::Error::io_at(path, e))?;
    let root: Value = serde_json::from_slice(&bytes).map_err(|e| json_error(path, "document", &e))?;
    let samples = root.as_array().ok_or_else(|| bad_record(path, "document", "expected a JSON array of samples"))?;
    samples.iter().enumerate().map(|(i, s)| load_sample(path, i, s)).collect()
}

fn str_field<'a>(v: &'a Value, key: &str, path: &Path, rec: &str) -> Result<&'a str> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| bad_record(path, rec, format!("missing or non-string {key:?}")))
}

fn load_sample(path: &Path, index: usize, sample: &Value) -> Result<Unit> {
    let rec = format!("sample {index}");
    let sample_id = str_field(sample, "sample_id", path, &rec)?;
    let rec = format!("sample {index} ({sample_id})");
    let conv = sample
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or_else(|| bad_record(path, &rec, "missing \"conversation\" object"))?;

    let mut session_nums: Vec<u32> = conv
        .iter()
        .filter(|(_, v)| v.is_array())
        .filter_map(|(k, _)| k.strip_prefix("session_")?.parse().ok())
        .collect();
    session_nums.sort_unstable();

    let mut docs = Vec::new();
    let mut seen = HashSet::new();
    for n in session_nums {
        let srec = format!("{rec} session_{n}");
        let date_key = format!("session_{n}_date_time");
        let date_str = conv
            .get(&date_key)
            .and_then(Value::as_str)
            .ok_or_else(|| bad_record(path, &srec, format!("missing {date_key:?}")))?;
        let time = parse_locomo_date(date_str)
            .ok_or_else(|| bad_record(path, &srec, format!("unparseable date {date_str:?}")))?;
        let turns = conv.get(&format!("session_{n}")).and_then(Value::as_array);
        for (t, turn) in turns.into_iter().flatten().enumerate() {
            let trec = format!("{srec} turn {t}");
            let speaker = str_field(turn, "speaker", path, &trec)?;
            let dia_id = str_field(turn, "dia_id", path, &trec)?;
            let text = str_field(turn, "text", path, &trec)?;
            let mut doc_text = format!("{speaker}: {}", text.trim());
            if let Some(cap) = turn.get("blip_caption").and_then(Value::as_str) {
                if !cap.trim().is_empty() {
                    doc_text.push_str(&format!(" [shares {}]", cap.trim()));
                }
            }
            if !seen.insert(dia_id.to_string()) {
                return Err(bad_record(path, &trec, format!("duplicate dia_id {dia_id:?}")));
            }
            docs.push(Doc {
                id: dia_id.to_string(),
                text: doc_text,
                session: format!("session_{n}"),
                time: Some(time),
                speaker: Some(speaker.to_string()),
            });
        }
    }

    // The questions are asked after the conversation: at its last
    // session's date, the reference for "recently" or "last year".
    let asked = docs.iter().filter_map(|d| d.time).max();
    let split = if DEV_SAMPLES.contains(&sample_id) { Split::Dev } else { Split::Test };
    let qa = sample.get("qa").and_then(Value::as_array).ok_or_else(|| bad_record(path, &rec, "missing \"qa\" list"))?;
    let mut queries = Vec::with_capacity(qa.len());
    for (q, item) in qa.iter().enumerate() {
        let qrec = format!("{rec} qa {q}");
        let question = str_field(item, "question", path, &qrec)?;
        let code = item
            .get("category")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad_record(path, &qrec, "missing or non-integer \"category\""))?;
        let raw: Vec<&str> = match item.get("evidence") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|e| e.as_str().ok_or_else(|| bad_record(path, &qrec, "non-string evidence id")))
                .collect::<Result<_>>()?,
            Some(_) => return Err(bad_record(path, &qrec, "\"evidence\" is not a list")),
        };
        let cleaned = clean_evidence(&raw, &seen);
        queries.push(Query {
            id: format!("{sample_id}/q{q}"),
            text: question.to_string(),
            gold: cleaned.ids,
            gold_sessions: Vec::new(),
            category: Some(category_name(code)),
            split,
            time: asked,
            abstention: false,
            gold_dropped: cleaned.dropped,
            gold_repaired: cleaned.repaired,
        });
    }

    let name = format!("locomo:{sample_id}");
    Namespace::new(name.as_str()).map_err(|e| bad_record(path, &rec, e))?;
    Ok(Unit { name, split, docs, queries })
}

/// Evidence ids after cleaning (see [`clean_evidence`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanedEvidence {
    /// Normalised `D<session>:<turn>` ids present in the conversation,
    /// distinct, in data order.
    pub ids: Vec<String>,
    /// Raw pieces dropped: malformed (`"D"`) or naming no turn of the
    /// conversation (conv-42 `D10:19`, conv-47 `D4:36`).
    pub dropped: Vec<String>,
    /// Whether some raw id was split, rewritten or repeated.
    pub repaired: bool,
}

/// Cleans LoCoMo evidence ids as `PROVENANCE.md` prescribes.
///
/// Each raw string is split on `;`, `,` and whitespace (`"D8:6; D9:17"`,
/// `"D9:1 D4:4 D4:6"`); each piece is normalised to `D<a>:<b>` with the
/// numbers stripped of leading zeros, also accepting a stray colon after the
/// `D` (`"D:11:26"` → `D11:26`, `"D30:05"` → `D30:5`). Pieces that do not
/// parse (`"D"`) or that are not in `known` (the conversation's dia_ids) are
/// dropped and listed. Repeats are kept once (the official code would count a
/// repeated id twice in the denominator; one QA item in conv-50 is affected).
pub fn clean_evidence<S: AsRef<str>>(raw: &[S], known: &HashSet<String>) -> CleanedEvidence {
    let mut out = CleanedEvidence::default();
    for r in raw {
        let r = r.as_ref();
        let pieces: Vec<&str> =
            r.split(|c: char| c == ';' || c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()).collect();
        if pieces.len() != 1 || pieces.first() != Some(&r) {
            out.repaired = true;
        }
        if pieces.is_empty() {
            out.dropped.push(r.to_string());
        }
        for p in pieces {
            match normalize_dia_id(p) {
                None => out.dropped.push(p.to_string()),
                Some(id) => {
                    if id != p {
                        out.repaired = true;
                    }
                    if !known.contains(&id) {
                        out.dropped.push(p.to_string());
                    } else if out.ids.contains(&id) {
                        out.repaired = true;
                    } else {
                        out.ids.push(id);
                    }
                }
            }
        }
    }
    out
}

fn normalize_dia_id(p: &str) -> Option<String> {
    let rest = p.strip_prefix('D')?;
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let (a, b) = rest.split_once(':')?;
    let num = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    Some(format!("D{}:{}", num(a)?, num(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn known(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn eval_locomo_dates_parse() {
        let t = parse_locomo_date("1:56 pm on 8 May, 2023");
        assert_eq!(t, Some(Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap()));
        let t = parse_locomo_date("12:09 am on 13 September, 2023");
        assert_eq!(t, Some(Utc.with_ymd_and_hms(2023, 9, 13, 0, 9, 0).unwrap()));
        let t = parse_locomo_date("10:04 am on 19 December, 2023");
        assert_eq!(t, Some(Utc.with_ymd_and_hms(2023, 12, 19, 10, 4, 0).unwrap()));
        assert_eq!(parse_locomo_date("yesterday"), None);
    }

    #[test]
    fn eval_locomo_evidence_cleaning() {
        let k = known(&["D8:6", "D9:17", "D11:26", "D30:5", "D9:1", "D4:4", "D4:6", "D1:3"]);
        let c = clean_evidence(&["D8:6; D9:17"], &k);
        assert_eq!(c.ids, vec!["D8:6", "D9:17"]);
        assert!(c.repaired && c.dropped.is_empty());
        let c = clean_evidence(&["D9:1 D4:4 D4:6"], &k);
        assert_eq!(c.ids, vec!["D9:1", "D4:4", "D4:6"]);
        assert!(c.repaired);
        let c = clean_evidence(&["D:11:26", "D30:05"], &k);
        assert_eq!(c.ids, vec!["D11:26", "D30:5"]);
        assert!(c.repaired);
        let c = clean_evidence(&["D1:3", "D", "D10:19"], &k);
        assert_eq!(c.ids, vec!["D1:3"]);
        assert_eq!(c.dropped, vec!["D", "D10:19"]);
        assert!(!c.repaired);
        let c = clean_evidence(&["D1:3", "D1:3"], &k);
        assert_eq!(c.ids, vec!["D1:3"]);
        assert!(c.repaired);
        let c = clean_evidence::<&str>(&[], &k);
        assert_eq!(c, CleanedEvidence::default());
        assert_eq!(normalize_dia_id("D+1:2"), None);
        assert_eq!(normalize_dia_id("X1:2"), None);
    }
}
