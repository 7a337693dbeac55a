//! The import schema (one JSON object per line) and its reader.
//!
//! ```text
//! {"type":"observation","session":"s1","role":"user","text":"I moved to Lyon","time":"2024-03-01T09:00:00Z","source":"chat-1:7"}
//! {"type":"memory","content":"Lives in Lyon","kind":"fact","key":"user.city","sources":["chat-1:7"],"session":"s1"}
//! ```
//!
//! A memory names the observations it came from by their `source` string
//! (an observation of the same import, or one already in the namespace), so
//! a file can be written without knowing the ids the store will assign.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{Namespace, Role, Tier};

/// Longest line the reader accepts, in bytes (16 MiB: a memory of the
/// largest allowed content with a 4,096-dimension vector fits many times).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One record of the JSON lines import schema, tagged by `"type"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImportRecord {
    /// A conversation turn or tool result.
    Observation(ImportObservation),
    /// A memory with all its fields.
    Memory(ImportMemory),
}

/// An observation to import.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportObservation {
    /// Session id (1–128 bytes).
    pub session: String,
    /// Who spoke; default `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// The text (redacted on the way in, as every observation).
    pub text: String,
    /// When it was said (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<DateTime<Utc>>,
    /// Your reference for it (a message id, at most 256 bytes): what
    /// memories name in `sources`, and part of its identity on re-import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A memory to import; unset fields take the defaults of
/// [`crate::NewMemory`] (or are inherited when it supersedes by key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportMemory {
    /// The memory text.
    pub content: String,
    /// preference, fact, decision, task_state, episode, procedure, or your own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// short_term, long_term or permanent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// 0.0–1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    /// Entities it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<Vec<String>>,
    /// Slot key `entity.attribute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The `source` of each observation it came from (of this import or
    /// already in the namespace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Session it was formed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When it became true (RFC 3339): the start of its valid time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<DateTime<Utc>>,
    /// Your reference for its source (at most 256 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
    /// Its vector, when you computed it (the store's dimension, finite);
    /// otherwise the store's embedder computes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
}

/// A record and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    /// 1-based line of the input (for JSON documents, the line the
    /// enclosing record starts on when known, else 0).
    pub line: u64,
    /// Where in the line's record, for chat histories (`"conv-26 session_3
    /// turn 4"`); empty for the JSON lines schema.
    pub at: String,
    /// The record.
    pub record: ImportRecord,
    /// The namespace it belongs in when the input says so (a LangGraph
    /// item: the namespace `MnemonStore` keeps its namespace tuple in);
    /// `None`: the namespace the import was given.
    pub namespace: Option<Namespace>,
}

/// A record that was not imported, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Rejection {
    /// 1-based line of the input (0 when the input is one JSON document
    /// and the position is given by `at` alone).
    pub line: u64,
    /// Where in the line's record, for chat histories; empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub at: String,
    /// Why: the parse error, or the field and rule that refused it.
    pub reason: String,
}

/// Something of a well-formed input that has no place in mnemon's model:
/// a record left out (a record type the format does not define, a relation
/// to an entity the file does not hold, a record of another user) or a
/// part of a record that was imported without it (a field with no home).
/// Not an error: an import lists them and goes on, under either
/// [`crate::portability::OnError`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Unmapped {
    /// 1-based line of the input (0 when the input is one JSON document
    /// and the position is given by `at` alone).
    pub line: u64,
    /// Which record: the entity name, the mem0 id, the LangGraph key, or
    /// the record's place in a JSON document (`results[3]`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub at: String,
    /// True when the whole record was left out; false when the record was
    /// imported and only what `reason` names was dropped.
    pub skipped: bool,
    /// What was not mapped, and why.
    pub reason: String,
}

/// What a reader made of an input: the records in input order, the lines
/// or turns it could not read, and what it read but could not map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Readable records, in input order.
    pub records: Vec<Located>,
    /// Unreadable records, in input order.
    pub rejected: Vec<Rejection>,
    /// Records or parts of records with no place in mnemon's model, in
    /// input order (only the readers of other systems' exports find any).
    pub unmapped: Vec<Unmapped>,
}

impl Parsed {
    /// Records read: readable, rejected, and left out as unmapped.
    pub fn read(&self) -> u64 {
        (self.records.len() + self.rejected.len() + self.unmapped.iter().filter(|u| u.skipped).count()) as u64
    }
}

/// The non-blank lines of JSON lines `text`, each with its 1-based line
/// number: a leading byte order mark (editors on Windows write one) and
/// each line's `\r` are dropped, and a line over [`MAX_LINE_BYTES`] comes
/// as its rejection.
pub(crate) fn json_lines(text: &str) -> impl Iterator<Item = Result<(u64, &str), Rejection>> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    text.split('\n').enumerate().filter_map(|(i, line)| {
        let line_no = i as u64 + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            return None;
        }
        if line.len() > MAX_LINE_BYTES {
            return Some(Err(Rejection {
                line: line_no,
                at: String::new(),
                reason: format!("line of {} bytes, at most {MAX_LINE_BYTES} allowed", line.len()),
            }));
        }
        Some(Ok((line_no, line)))
    })
}

/// Reads the JSON lines schema. Blank lines are skipped; every other line
/// must be one [`ImportRecord`] (unknown fields are refused, so a typo is a
/// rejection, not a silently dropped field). Never panics, whatever the
/// input (fuzzed).
pub fn parse_jsonl(text: &str) -> Parsed {
    let mut out = Parsed::default();
    for line in json_lines(text) {
        let (line_no, line) = match line {
            Ok(l) => l,
            Err(r) => {
                out.rejected.push(r);
                continue;
            }
        };
        match serde_json::from_str::<ImportRecord>(line) {
            Ok(record) => out.records.push(Located { line: line_no, at: String::new(), record, namespace: None }),
            Err(e) => {
                // The line is read once more, as a plain JSON value, to say
                // why (only for a refused line).
                let reason = match serde_json::from_str::<serde_json::Value>(line) {
                    Ok(serde_json::Value::Object(fields)) => {
                        field_reason(fields).unwrap_or_else(|| within_line(line, &e))
                    }
                    Ok(v) => format!(
                        "a record is a JSON object with \"type\": \"observation\" or \"memory\"; this line holds {}",
                        json_kind(&v)
                    ),
                    // Not JSON at all ("not json", a CSV row): say so
                    // first; a cut or damaged object keeps the parser's
                    // message and column.
                    Err(_) if !line.trim_start().starts_with('{') => format!(
                        "not a JSON object (a record is a JSON object with \"type\": \"observation\" or \
                         \"memory\"): {}",
                        within_line(line, &e)
                    ),
                    Err(_) => within_line(line, &e),
                };
                out.rejected.push(Rejection { line: line_no, at: String::new(), reason })
            }
        }
    }
    out
}

/// Why a well-formed record of a known `type` was refused, naming the field
/// (`field `tier`: unknown variant …`, `field `sources[1]`: …`). serde reads
/// a record tagged by `"type"` through a buffer that loses the error's
/// position, so the record is read again as its own type with the path
/// kept. A time that does not parse is quoted with what is expected. `None`
/// when the object has no known `type` (then the parser's
/// own message, with its column, says more). `fields`: the refused line,
/// already read as a JSON object.
fn field_reason(mut fields: serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let kind = fields.remove("type")?;
    let fields_time = fields.get("time").cloned();
    let value = serde_json::Value::Object(fields);
    let err = match kind.as_str()? {
        "observation" => serde_path_to_error::deserialize::<_, ImportObservation>(value).err()?,
        "memory" => serde_path_to_error::deserialize::<_, ImportMemory>(value).err()?,
        _ => return None,
    };
    let path = err.path().to_string();
    let why = crate::error::plain_json_words(&err.into_inner().to_string());
    if path == "time" {
        let mut given = fields_time.map(|v| v.to_string()).unwrap_or_default();
        if given.len() > 64 {
            given = format!("{}…", crate::text::truncate_bytes(&given, 64));
        }
        return Some(format!(
            "field `time`: {given} is not an RFC 3339 time with an offset, like 2026-06-15T10:00:00+08:00 ({why})"
        ));
    }
    // An unknown field's message names it already.
    Some(if path == "." || path.is_empty() || why.contains(&format!("`{path}`")) {
        why
    } else {
        format!("field `{path}`: {why}")
    })
}

/// What kind of JSON value `v` is, for a message.
fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A JSON error of one line, positioned by column only (the line number is
/// the file's, reported beside it), naming the field it is in when a
/// `"name":` precedes the column, and saying why when the value is one
/// JSON has no number for (`NaN`, `Infinity`) or overflows an f64.
pub(crate) fn within_line(line: &str, e: &serde_json::Error) -> String {
    let text = crate::error::plain_json_words(&e.to_string());
    let Some(i) = text.rfind(" at line ").filter(|_| e.column() > 0) else {
        return text;
    };
    let col = e.column();
    let mut at = (col - 1).min(line.len());
    while !line.is_char_boundary(at) {
        at -= 1;
    }
    let rest = &line[at..];
    let bad_number = ["NaN", "-NaN", "Infinity", "-Infinity", "+Infinity", "inf", "-inf", "nan"]
        .into_iter()
        .filter(|t| rest.starts_with(t))
        .max_by_key(|t| t.len());
    let sign = if line[..at].ends_with('-') { "-" } else { "" };
    let what = match bad_number {
        Some(t) => format!("`{sign}{t}` is not a JSON number (numbers must be finite)"),
        None if text.starts_with("number out of range") => "number out of range (numbers must be finite)".to_string(),
        None => text[..i].to_string(),
    };
    // The last key before the column names the field a value error is in;
    // an error at the record's end (a missing field, a cut line) is in none.
    let at_end = what.starts_with("missing field") || what.starts_with("EOF while parsing");
    match field_before(&line[..at]).filter(|f| !at_end && !what.contains(&format!("`{f}`"))) {
        Some(f) => format!("field `{f}`: {what} at column {col}"),
        None => format!("{what} at column {col}"),
    }
}

/// The key of the last `"key":` in `before`, if any (a heuristic for error
/// messages: a key inside a string value can mislead it).
fn field_before(before: &str) -> Option<&str> {
    let colon = before.rfind(':')?;
    let quoted = before[..colon].trim_end();
    let close = quoted.strip_suffix('"')?.len();
    let open = before[..close].rfind('"')?;
    let key = &before[open + 1..close];
    (!key.is_empty() && key.len() <= 64 && !key.contains(['\\', '{', '}', ','])).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused value of a known record type names its field, nested ones
    /// by path, and a time says what it expects.
    #[test]
    fn a_bad_value_names_its_field() {
        let text = concat!(
            r#"{"type":"memory","content":"likes tea","tier":"forever"}"#,
            "\n",
            r#"{"type":"observation","session":"s1","role":"user","text":"hi","time":"yesterday"}"#,
            "\n",
            r#"{"type":"memory","content":"x","importance":"high"}"#,
            "\n",
            r#"{"type":"memory","content":"x","sources":["m1",7]}"#,
            "\n",
            r#"{"type":"memory","content":"x","colour":"red"}"#,
            "\n",
            r#"{"type":"memory","content":"x","tier":"forever""#,
            "\n",
            r#"{"content":"no type"}"#,
            "\n",
            "[1,2,3]",
        );
        let p = parse_jsonl(text);
        assert!(p.records.is_empty());
        let reasons: Vec<&str> = p.rejected.iter().map(|r| r.reason.as_str()).collect();
        assert!(reasons[0].starts_with("field `tier`: unknown variant `forever`"), "{reasons:?}");
        assert!(reasons[1].starts_with("field `time`: ") && reasons[1].contains("RFC 3339"), "{reasons:?}");
        assert!(reasons[2].starts_with("field `importance`: invalid type"), "{reasons:?}");
        assert!(reasons[3].starts_with("field `sources[1]`: invalid type: integer `7`"), "{reasons:?}");
        assert!(reasons[4].starts_with("unknown field `colour`"), "{reasons:?}");
        // A cut line: the parser's message with its column, and no field
        // guessed from the last key before the end.
        assert!(reasons[5].starts_with("EOF while parsing") && reasons[5].contains("at column"), "{reasons:?}");
        assert!(reasons[6].starts_with("missing field `type`"), "{reasons:?}");
        assert!(reasons[7].contains("JSON object") && reasons[7].ends_with("holds an array"), "{reasons:?}");
        assert!(reasons[1].contains("\"yesterday\" is not an RFC 3339 time"), "{reasons:?}");
        // A byte order mark before the first record is not part of it.
        let p = parse_jsonl("\u{FEFF}{\"type\":\"memory\",\"content\":\"Likes tea\"}\n");
        assert!(p.rejected.is_empty() && p.records.len() == 1, "{:?}", p.rejected);
    }

    #[test]
    fn reads_both_record_types_and_reports_bad_lines() {
        let text = concat!(
            r#"{"type":"observation","session":"s1","text":"I moved to Lyon","source":"m1"}"#,
            "\n\n",
            r#"{"type":"memory","content":"Lives in Lyon","sources":["m1"],"tier":"permanent"}"#,
            "\n",
            r#"{"type":"memory","content":"x","colour":"red"}"#,
            "\n",
            "not json\r\n",
            r#"{"type":"note","text":"?"}"#,
        );
        let p = parse_jsonl(text);
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[1].line, 3);
        let ImportRecord::Memory(m) = &p.records[1].record else { panic!("not a memory") };
        assert_eq!(m.tier, Some(Tier::Permanent));
        assert_eq!(m.sources, vec!["m1".to_string()]);
        let lines: Vec<u64> = p.rejected.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![4, 5, 6]);
        assert!(p.rejected[0].reason.contains("colour"), "{}", p.rejected[0].reason);
        assert!(p.rejected[1].reason.starts_with("not a JSON object"), "{}", p.rejected[1].reason);
        assert_eq!(p.read(), 5);
    }

    /// Values JSON has no number for are named with their field.
    #[test]
    fn non_finite_numbers_are_named_with_their_field() {
        let text = concat!(
            r#"{"type":"memory","content":"Likes tea","importance":NaN}"#,
            "\n",
            r#"{"type":"memory","content":"Likes jam","vector":[0.5, -Infinity]}"#,
            "\n",
            r#"{"type":"memory","content":"Likes rye","importance":1e999}"#,
            "\n",
            r#"{"type":"memory","content":"Likes oats","importance":"high"}"#,
            "\n",
            r#"{"type":"memory", "content" : "Likes rye", "importance" :NaN}"#,
        );
        let p = parse_jsonl(text);
        let reasons: Vec<&str> = p.rejected.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(
            reasons[..3],
            [
                "field `importance`: `NaN` is not a JSON number (numbers must be finite) at column 53",
                "field `vector`: `-Infinity` is not a JSON number (numbers must be finite) at column 56",
                "field `importance`: number out of range (numbers must be finite) at column 57",
            ]
        );
        // A type error inside a record has no position (serde reads a
        // tagged record whole first); it names the field and the value.
        assert!(reasons[3].starts_with("field `importance`: invalid type: string \"high\""), "{}", reasons[3]);
        assert!(reasons[4].starts_with("field `importance`: `NaN`"), "{}", reasons[4]);
    }
}
