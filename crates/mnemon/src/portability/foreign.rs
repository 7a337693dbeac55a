//! What the readers of other systems' exports share: one JSON document or
//! JSON lines, memories built from their parts, times read leniently.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::{Map, Value};

use crate::portability::records::{within_line, ImportMemory, Rejection, Unmapped};

/// One JSON value of the input and where it is.
pub(crate) struct Item {
    /// 1-based line (0 inside a JSON document, where `at` says where).
    pub line: u64,
    /// `results[3]` inside a document; empty for JSON lines.
    pub at: String,
    /// The document list it came from (`"relations"`), if any.
    pub list: Option<&'static str>,
    /// The value.
    pub value: Value,
}

/// Reads `text` as one JSON document or as JSON lines. A document that is
/// an array gives its elements; an object holding any of `lists` as arrays
/// gives their elements, list by list (the rest of it is ignored); another
/// object is one record. Text that is not one JSON value is read as JSON
/// lines, each non-blank line one value; a line that is not JSON is a
/// rejection. Never panics.
pub(crate) fn read_items(text: &str, lists: &[&'static str]) -> (Vec<Item>, Vec<Rejection>) {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut items = Vec::new();
    let mut rejected = Vec::new();
    let trimmed = text.trim_start();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(values)) => {
            for (i, value) in values.into_iter().enumerate() {
                items.push(Item { line: 0, at: format!("[{i}]"), list: None, value });
            }
        }
        Ok(Value::Object(mut map)) if lists.iter().any(|k| map.get(*k).is_some_and(Value::is_array)) => {
            for key in lists {
                if let Some(Value::Array(values)) = map.remove(*key) {
                    for (i, value) in values.into_iter().enumerate() {
                        items.push(Item { line: 0, at: format!("{key}[{i}]"), list: Some(key), value });
                    }
                }
            }
        }
        Ok(value) => {
            let line = text[..text.len() - trimmed.len()].matches('\n').count() as u64 + 1;
            items.push(Item { line, at: String::new(), list: None, value });
        }
        Err(e) if is_document(trimmed) => rejected.push(Rejection {
            line: e.line() as u64,
            at: String::new(),
            reason: format!("not a JSON document: {}", crate::error::plain_json_words(&e.to_string())),
        }),
        Err(_) => lines(text, &mut items, &mut rejected),
    }
    (items, rejected)
}

/// True when `text`, which is not one JSON value, was meant as one: an
/// array, or an object whose first two lines are not JSON values of their
/// own (JSON lines with a damaged first line are read line by line).
fn is_document(trimmed: &str) -> bool {
    if trimmed.starts_with('[') {
        return true;
    }
    let json = |l: &str| serde_json::from_str::<Value>(l.trim()).is_ok();
    let mut first = trimmed.lines().filter(|l| !l.trim().is_empty()).take(2);
    trimmed.starts_with('{') && !first.any(json)
}

fn lines(text: &str, items: &mut Vec<Item>, rejected: &mut Vec<Rejection>) {
    for line in super::records::json_lines(text) {
        let (line_no, line) = match line {
            Ok(l) => l,
            Err(r) => {
                rejected.push(r);
                continue;
            }
        };
        match serde_json::from_str::<Value>(line) {
            Ok(value) => items.push(Item { line: line_no, at: String::new(), list: None, value }),
            Err(e) => rejected.push(Rejection { line: line_no, at: String::new(), reason: within_line(line, &e) }),
        }
    }
}

/// The memory that states a graph relation: `"<from> <relation> <to>"`,
/// about both ends (`entities`: `from`, and `to` when it differs).
pub(crate) fn relation_memory(from: &str, relation: &str, to: &str) -> ImportMemory {
    let mut m = memory(format!("{from} {relation} {to}"));
    let mut entities = vec![from.to_string()];
    if to != from {
        entities.push(to.to_string());
    }
    m.entities = Some(entities);
    m
}

/// A memory of `content` with every other field unset.
pub(crate) fn memory(content: String) -> ImportMemory {
    ImportMemory {
        content,
        kind: None,
        tier: None,
        importance: None,
        entities: None,
        key: None,
        sources: Vec::new(),
        session: None,
        time: None,
        source_ref: None,
        vector: None,
    }
}

/// A time as these systems write it: RFC 3339 (`2024-07-20T01:19:45.1-07:00`),
/// or an ISO date and time without an offset (Python's `isoformat()` of a
/// naive time), read as UTC.
pub(crate) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    // Some writers put a space between date and time; Postgres writes
    // the offset as `+00`.
    for f in ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f%#z"] {
        if let Ok(t) = DateTime::parse_from_str(s, f) {
            return Some(t.with_timezone(&Utc));
        }
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .map(|t| t.and_utc())
}

/// The time at field `field` of `obj`: `Ok(None)` when absent or null,
/// an error message naming the field when it does not read.
pub(crate) fn time_field(obj: &Map<String, Value>, field: &str) -> Result<Option<DateTime<Utc>>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_time(s).map(Some).ok_or_else(|| {
            format!(
                "field `{field}`: {} is not an ISO 8601 time like 2024-07-20T01:19:45+00:00",
                shown(&Value::String(s.clone()))
            )
        }),
        Some(v) => Err(format!("field `{field}`: expected a time as a string, got {}", shown(v))),
    }
}

/// `v` as JSON text for a message, at most about 120 bytes.
pub(crate) fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 120 {
        format!("{}…", crate::text::truncate_bytes(&s, 120))
    } else {
        s
    }
}

/// True for a value that holds nothing (null, `""`, `[]`, `{}`).
pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// One [`Unmapped`] entry naming the non-empty fields of `obj` outside
/// `known`, with their values, or `None` when there are none.
pub(crate) fn extra_fields(obj: &Map<String, Value>, known: &[&str], line: u64, at: &str) -> Option<Unmapped> {
    let extra: Vec<String> = obj
        .iter()
        .filter(|(k, v)| !known.contains(&k.as_str()) && !is_empty(v))
        .map(|(k, v)| format!("`{k}` {}", shown(v)))
        .collect();
    (!extra.is_empty()).then(|| Unmapped {
        line,
        at: at.to_string(),
        skipped: false,
        reason: format!("{} dropped: no field of a mnemon memory holds it", extra.join(", ")),
    })
}

/// The string at `field`, if it is one.
pub(crate) fn str_field<'a>(obj: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    obj.get(field).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_documents_lists_and_lines() {
        let (items, bad) =
            read_items(r#"{"results":[{"a":1},{"a":2}],"relations":[{"b":1}]}"#, &["results", "relations"]);
        assert!(bad.is_empty());
        assert_eq!(items.len(), 3);
        assert_eq!((items[2].at.as_str(), items[2].list), ("relations[0]", Some("relations")));
        let (items, bad) = read_items("{\"a\":1}\n\nnot json\n{\"a\":2}\n", &[]);
        assert_eq!((items.len(), bad.len(), bad[0].line, items[1].line), (2, 1, 3, 4));
        let (items, bad) = read_items("[{\"a\":1},\n{\"a\":", &[]);
        assert!(items.is_empty() && bad.len() == 1 && bad[0].reason.starts_with("not a JSON document"));
        let (items, _) = read_items("{\n  \"a\": 1\n}\n", &[]);
        assert_eq!((items.len(), items[0].line), (1, 1));
    }

    #[test]
    fn reads_times_with_and_without_offsets() {
        let t = parse_time("2024-07-20T01:19:45.123456-07:00").map(|t| t.to_rfc3339());
        assert_eq!(t.as_deref(), Some("2024-07-20T08:19:45.123456+00:00"));
        assert!(parse_time("2024-07-20T01:19:45").is_some());
        assert!(parse_time("2024-07-20 01:19:45.5+00:00").is_some());
        let pg = parse_time("2024-09-01 10:00:00.123456+02").map(|t| t.to_rfc3339());
        assert_eq!(pg.as_deref(), Some("2024-09-01T08:00:00.123456+00:00"));
        assert!(parse_time("yesterday").is_none());
    }
}
