//! MADial-Bench loader (`MADial-Bench-zh-{dialogue,memory}.json`, JSON lines).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde_json::Value;

use super::{bad_record, json_error, Doc, Query, Split, Unit};
use mnemon::Namespace;
use mnemon::{Error, Result};

struct Memory {
    id: String,
    user: i64,
    doc: Doc,
}

/// Loads MADial-Bench (memory-recall task, as the official
/// `embedding_top_20_new.py` / `embedding_score_new.py` set it up).
///
/// `dir_or_file` is a directory holding one `*-dialogue.json` and one
/// `*-memory.json`, or either of those files (the other is found by swapping
/// `dialogue` ↔ `memory` in the name). Both are JSON lines.
///
/// - Docs: the user's memories, in file order; id = memory `id`, text
///   `"<event>（<scene>，<emotion>）"` (the official embeds scene, emotion and
///   event), time = the memory's date, session = the memory id (each
///   memory is its own episode: memories of one date are separate events,
///   not turns of one conversation, and the session score of recall
///   treats a session as a conversation), speaker = the user's name as
///   the dialogues show it (`<Bart>:"…"`).
/// - Query per dialogue (no time: a dialogue's time words speak of its own
///   day, which the data does not give): the lines before `test-turn[0]` (an index into the
///   `dialogue` list, `<BOD>` included), without the `<BOD>` marker, each
///   trimmed, joined by `\n`; gold = `relevant-id`; id = the dialogue `id`.
///   Gold ids that are not memories of the dialogue's user are dropped and
///   listed in [`Query::gold_dropped`].
/// - Split: dialogues at an even 0-based position in the file are dev, odd
///   test. Units are per user and split: `madial:user-<uid>:dev` / `:test`,
///   each holding all the user's memories.
///
/// # Errors
/// [`Error::Io`] when a file cannot be read;
/// [`Error::InvalidInput`] (field `"file"`) when the pair cannot be found, a
/// line is not JSON, a field is missing or of the wrong type, a memory id
/// repeats, a date does not parse, or `test-turn[0]` leaves an empty query.
pub fn load_madial(dir_or_file: &Path) -> Result<Vec<Unit>> {
    let (dialogue_path, memory_path) = resolve(dir_or_file)?;

    let mut memories: Vec<Memory> = Vec::new();
    for (line_no, v) in json_lines(&memory_path)? {
        let rec = format!("line {line_no}");
        let obj = v.as_object().ok_or_else(|| bad_record(&memory_path, &rec, "expected an object"))?;
        for (key, m) in obj {
            let rec = format!("line {line_no} memory {key}");
            let id = match m.get("id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => key.clone(),
            };
            let user = m
                .get("user-id")
                .and_then(Value::as_i64)
                .ok_or_else(|| bad_record(&memory_path, &rec, "missing or non-integer \"user-id\""))?;
            let event = m
                .get("event")
                .and_then(Value::as_str)
                .ok_or_else(|| bad_record(&memory_path, &rec, "missing \"event\""))?;
            let scene = m.get("scene").and_then(Value::as_str).unwrap_or("");
            let emotion = m.get("emotion").and_then(Value::as_str).unwrap_or("");
            let date = m.get("time").and_then(Value::as_str).unwrap_or("");
            let time = if date.is_empty() {
                None
            } else {
                let d = NaiveDate::parse_from_str(date, "%Y-%m-%d")
                    .map_err(|_| bad_record(&memory_path, &rec, format!("unparseable time {date:?}")))?;
                d.and_hms_opt(0, 0, 0).map(|t| t.and_utc())
            };
            let text = match (scene.is_empty(), emotion.is_empty()) {
                (true, true) => event.to_string(),
                (false, true) => format!("{event}（{scene}）"),
                (true, false) => format!("{event}（{emotion}）"),
                (false, false) => format!("{event}（{scene}，{emotion}）"),
            };
            if memories.iter().any(|x| x.id == id) {
                return Err(bad_record(&memory_path, &rec, format!("duplicate memory id {id:?}")));
            }
            let doc = Doc { id: id.clone(), text, session: id.clone(), time, speaker: None };
            memories.push(Memory { id, user, doc });
        }
    }

    // (user, split) -> queries, in file order.
    let mut groups: BTreeMap<(i64, Split), Vec<Query>> = BTreeMap::new();
    let mut names: HashMap<i64, String> = HashMap::new();
    for (pos, (line_no, v)) in json_lines(&dialogue_path)?.into_iter().enumerate() {
        let rec = format!("line {line_no}");
        let lines: Vec<&str> = v
            .get("dialogue")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_record(&dialogue_path, &rec, "missing \"dialogue\" list"))?
            .iter()
            .map(|l| l.as_str().ok_or_else(|| bad_record(&dialogue_path, &rec, "non-string dialogue line")))
            .collect::<Result<_>>()?;
        let test_turn = v
            .get("test-turn")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_u64)
            .ok_or_else(|| bad_record(&dialogue_path, &rec, "missing or empty \"test-turn\""))?;
        let user = v
            .get("user-id")
            .and_then(Value::as_i64)
            .ok_or_else(|| bad_record(&dialogue_path, &rec, "missing or non-integer \"user-id\""))?;
        let id = match v.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad_record(&dialogue_path, &rec, "missing \"id\"")),
        };
        let rec = format!("line {line_no} (dialogue {id})");
        let relevant: Vec<String> = v
            .get("relevant-id")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_record(&dialogue_path, &rec, "missing \"relevant-id\" list"))?
            .iter()
            .map(|r| match r {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(bad_record(&dialogue_path, &rec, "relevant-id holds a non-id")),
            })
            .collect::<Result<_>>()?;

        let cut = usize::try_from(test_turn).unwrap_or(usize::MAX).min(lines.len());
        let text = lines[..cut]
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty() && *l != "<BOD>" && *l != "<EOD>")
            .collect::<Vec<_>>()
            .join("\n");
        if text.is_empty() {
            return Err(bad_record(&dialogue_path, &rec, format!("test-turn {test_turn} leaves no query text")));
        }
        if let (std::collections::hash_map::Entry::Vacant(slot), Some(name)) =
            (names.entry(user), lines.iter().find_map(|l| speaker_name(l)))
        {
            slot.insert(name.to_string());
        }

        let mut gold = Vec::new();
        let mut dropped = Vec::new();
        for g in relevant {
            if gold.contains(&g) {
                continue;
            }
            if memories.iter().any(|m| m.user == user && m.id == g) {
                gold.push(g);
            } else {
                dropped.push(g);
            }
        }
        let split = if pos % 2 == 0 { Split::Dev } else { Split::Test };
        groups.entry((user, split)).or_default().push(Query {
            id,
            text,
            gold,
            gold_sessions: Vec::new(),
            category: None,
            split,
            time: None,
            abstention: false,
            gold_dropped: dropped,
            gold_repaired: false,
        });
    }

    let mut units = Vec::new();
    for ((user, split), queries) in groups {
        let docs: Vec<Doc> = memories
            .iter()
            .filter(|m| m.user == user)
            .map(|m| Doc { speaker: names.get(&user).cloned(), ..m.doc.clone() })
            .collect();
        let name = format!("madial:user-{user}:{}", split.name());
        Namespace::new(name.as_str()).map_err(|e| bad_record(&dialogue_path, &name, e))?;
        units.push(Unit { name, split, docs, queries });
    }
    Ok(units)
}

/// `<Bart>:"…"` → `Bart`; `None` for the assistant and the markers.
fn speaker_name(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix('<')?;
    let (name, after) = rest.split_once('>')?;
    if !after.starts_with(':') || name == "Assistant" || name.is_empty() {
        return None;
    }
    Some(name)
}

fn resolve(p: &Path) -> Result<(PathBuf, PathBuf)> {
    let not_found = |what: &str| Error::invalid("file", format!("{}: {what}", p.display()));
    if p.is_dir() {
        let mut dialogue = Vec::new();
        let mut memory = Vec::new();
        for entry in std::fs::read_dir(p)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
            if name.ends_with("-dialogue.json") {
                dialogue.push(path);
            } else if name.ends_with("-memory.json") {
                memory.push(path);
            }
        }
        return match (dialogue.as_slice(), memory.as_slice()) {
            ([d], [m]) => Ok((d.clone(), m.clone())),
            _ => Err(not_found(&format!(
                "expected one *-dialogue.json and one *-memory.json, found {} and {}",
                dialogue.len(),
                memory.len()
            ))),
        };
    }
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let (dialogue, memory) = if name.contains("dialogue") {
        (p.to_path_buf(), p.with_file_name(name.replacen("dialogue", "memory", 1)))
    } else if name.contains("memory") {
        (p.with_file_name(name.replacen("memory", "dialogue", 1)), p.to_path_buf())
    } else {
        return Err(not_found("neither a directory nor a *dialogue* / *memory* file"));
    };
    if !dialogue.is_file() || !memory.is_file() {
        return Err(not_found(&format!("pair not found: {} and {}", dialogue.display(), memory.display())));
    }
    Ok((dialogue, memory))
}

/// Non-blank lines of a JSON-lines file with their 1-based line numbers.
fn json_lines(path: &Path) -> Result<Vec<(usize, Value)>> {
    let text = std::fs::read_to_string(path).map_err(|e| mnemon::Error::io_at(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map(|v| (i + 1, v)).map_err(|e| json_error(path, &format!("line {}", i + 1), &e))
        })
        .collect()
}
