//! Readers for the chat-history shapes of the public benchmarks: LoCoMo
//! (`locomo10.json`) and LongMemEval (its JSON lines, or the oracle's one
//! JSON array). Every turn becomes an observation; a turn, session or
//! sample that cannot be read is a [`Rejection`] and the rest is kept.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use serde_json::Value;

use crate::portability::records::{ImportObservation, ImportRecord, Located, Parsed, Rejection};
use crate::types::Role;

/// Reads LoCoMo: a JSON array of samples, each with `sample_id` and a
/// `conversation` of `session_<n>` turn lists and `session_<n>_date_time`
/// dates. Each turn becomes an observation: session
/// `"<sample_id>:session_<n>"`, role `user` (both speakers are people),
/// text `"<speaker>: <text>"` plus `" [shares <blip_caption>]"` for image
/// turns (as the evaluation reads it), time the session date (read as
/// UTC), source `"<sample_id>:<dia_id>"`. Never panics (fuzzed).
pub fn parse_locomo(text: &str) -> Parsed {
    let mut out = Parsed::default();
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.rejected.push(Rejection { line: e.line() as u64, at: String::new(), reason: e.to_string() });
            return out;
        }
    };
    let Some(samples) = root.as_array() else {
        out.rejected.push(reject("document", "expected a JSON array of samples"));
        return out;
    };
    for (i, sample) in samples.iter().enumerate() {
        let Some(id) = sample.get("sample_id").and_then(Value::as_str) else {
            out.rejected.push(reject(&format!("sample {i}"), "missing or non-string \"sample_id\""));
            continue;
        };
        let Some(conv) = sample.get("conversation").and_then(Value::as_object) else {
            out.rejected.push(reject(id, "missing \"conversation\" object"));
            continue;
        };
        let mut sessions: Vec<u32> = conv
            .iter()
            .filter(|(_, v)| v.is_array())
            .filter_map(|(k, _)| k.strip_prefix("session_")?.parse().ok())
            .collect();
        sessions.sort_unstable();
        for n in sessions {
            let at = format!("{id} session_{n}");
            let date = conv.get(&format!("session_{n}_date_time")).and_then(Value::as_str);
            let Some(time) = date.and_then(parse_locomo_date) else {
                out.rejected.push(reject(&at, &format!("missing or unreadable session_{n}_date_time {date:?}")));
                continue;
            };
            let turns = conv.get(&format!("session_{n}")).and_then(Value::as_array);
            for (t, turn) in turns.into_iter().flatten().enumerate() {
                let at = format!("{at} turn {t}");
                let field = |k: &str| turn.get(k).and_then(Value::as_str);
                let (Some(speaker), Some(dia), Some(said)) = (field("speaker"), field("dia_id"), field("text")) else {
                    out.rejected.push(reject(&at, "needs string \"speaker\", \"dia_id\" and \"text\""));
                    continue;
                };
                let mut text = format!("{speaker}: {}", said.trim());
                if let Some(cap) = field("blip_caption").map(str::trim).filter(|c| !c.is_empty()) {
                    text.push_str(&format!(" [shares {cap}]"));
                }
                out.records.push(Located {
                    line: 0,
                    at,
                    record: ImportRecord::Observation(ImportObservation {
                        session: format!("{id}:session_{n}"),
                        role: Some(Role::User),
                        text,
                        time: Some(time),
                        source: Some(format!("{id}:{dia}")),
                    }),
                    namespace: None,
                });
            }
        }
    }
    out
}

/// Reads LongMemEval: JSON lines of question records (or one JSON array of
/// them, as the oracle file), each with `haystack_session_ids`,
/// `haystack_dates` and `haystack_sessions` (lists of `{role, content}`
/// turns). Each turn with text becomes an observation: session the session
/// id, role `user` or `assistant` as given, time the session date (read as
/// UTC), source `"<session_id>#<i>"` with `i` the 1-based turn index within
/// the session (the benchmark's turn numbering). Sessions are shared
/// between questions' haystacks; a repeat has the same identity and is
/// imported once. Never panics (fuzzed).
pub fn parse_longmemeval(text: &str) -> Parsed {
    let mut out = Parsed::default();
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        match serde_json::from_str::<Vec<Value>>(text) {
            Ok(records) => {
                for (i, r) in records.iter().enumerate() {
                    question(&mut out, 0, &format!("record {i}"), r);
                }
            }
            Err(e) => out.rejected.push(Rejection { line: e.line() as u64, at: String::new(), reason: e.to_string() }),
        }
        return out;
    }
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let line_no = i as u64 + 1;
        match serde_json::from_str::<Value>(line) {
            Ok(r) => question(&mut out, line_no, "", &r),
            Err(e) => out.rejected.push(Rejection {
                line: line_no,
                at: String::new(),
                reason: super::records::within_line(line, &e),
            }),
        }
    }
    out
}

fn question(out: &mut Parsed, line: u64, at: &str, r: &Value) {
    let qid = r.get("question_id").and_then(Value::as_str).unwrap_or("?");
    let at = if at.is_empty() { qid.to_string() } else { format!("{at} ({qid})") };
    let list = |k: &str| r.get(k).and_then(Value::as_array);
    let (Some(ids), Some(dates), Some(sessions)) =
        (list("haystack_session_ids"), list("haystack_dates"), list("haystack_sessions"))
    else {
        out.rejected.push(Rejection {
            line,
            at,
            reason: "needs lists \"haystack_session_ids\", \"haystack_dates\" and \"haystack_sessions\"".into(),
        });
        return;
    };
    if ids.len() != sessions.len() || dates.len() != sessions.len() {
        out.rejected.push(Rejection {
            line,
            at,
            reason: format!("{} session ids, {} dates, {} sessions", ids.len(), dates.len(), sessions.len()),
        });
        return;
    }
    for ((sid, date), turns) in ids.iter().zip(dates).zip(sessions) {
        let (Some(sid), Some(date)) = (sid.as_str(), date.as_str()) else {
            out.rejected.push(Rejection { line, at: at.clone(), reason: "non-string session id or date".into() });
            continue;
        };
        let sat = format!("{at} session {sid}");
        let Some(time) = parse_longmemeval_date(date) else {
            out.rejected.push(Rejection { line, at: sat, reason: format!("unreadable date {date:?}") });
            continue;
        };
        let Some(turns) = turns.as_array() else {
            out.rejected.push(Rejection { line, at: sat, reason: "session is not a list of turns".into() });
            continue;
        };
        for (t, turn) in turns.iter().enumerate() {
            let tat = format!("{sat} turn {}", t + 1);
            let role = match turn.get("role").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                other => {
                    out.rejected.push(Rejection {
                        line,
                        at: tat,
                        reason: format!("role {other:?}: expected user or assistant"),
                    });
                    continue;
                }
            };
            let Some(content) = turn.get("content").and_then(Value::as_str) else {
                out.rejected.push(Rejection { line, at: tat, reason: "missing or non-string \"content\"".into() });
                continue;
            };
            if content.trim().is_empty() {
                // The benchmark has a few empty turns; there is nothing to keep.
                continue;
            }
            out.records.push(Located {
                line,
                at: tat,
                record: ImportRecord::Observation(ImportObservation {
                    session: sid.to_string(),
                    role: Some(role),
                    text: content.to_string(),
                    time: Some(time),
                    source: Some(format!("{sid}#{}", t + 1)),
                }),
                namespace: None,
            });
        }
    }
}

fn reject(at: &str, reason: &str) -> Rejection {
    Rejection { line: 0, at: at.to_string(), reason: reason.to_string() }
}

/// Parses a LoCoMo session date such as `"1:56 pm on 8 May, 2023"` (12-hour
/// clock, full English month name), read as UTC. `None` when it does not
/// parse.
pub fn parse_locomo_date(s: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s.trim(), "%I:%M %p on %d %B, %Y").ok().map(|t| t.and_utc())
}

/// Parses a LongMemEval date such as `"2023/05/30 (Tue) 23:40"`, read as UTC.
/// The weekday in parentheses is not checked. `None` when it does not parse.
pub fn parse_longmemeval_date(s: &str) -> Option<DateTime<Utc>> {
    let mut parts = s.split_whitespace();
    let date = NaiveDate::parse_from_str(parts.next()?, "%Y/%m/%d").ok()?;
    let mut time_part = parts.next()?;
    if time_part.starts_with('(') {
        time_part = parts.next()?;
    }
    let time = NaiveTime::parse_from_str(time_part, "%H:%M").ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some(date.and_time(time).and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locomo_turns_become_observations() {
        let doc = r#"[{"sample_id":"conv-1","conversation":{"speaker_a":"Ann","speaker_b":"Bo",
            "session_1_date_time":"1:56 pm on 8 May, 2023",
            "session_1":[{"speaker":"Ann","dia_id":"D1:1","text":"Hi Bo"},
                         {"speaker":"Bo","dia_id":"D1:2","text":"Look","blip_caption":"a cat"},
                         {"speaker":"Bo","text":"no id"}],
            "session_2_date_time":"someday",
            "session_2":[{"speaker":"Ann","dia_id":"D2:1","text":"lost"}]}},
            {"conversation":{}}]"#;
        let p = parse_locomo(doc);
        assert_eq!(p.records.len(), 2);
        let ImportRecord::Observation(o) = &p.records[1].record else { panic!("not an observation") };
        assert_eq!(o.session, "conv-1:session_1");
        assert_eq!(o.text, "Bo: Look [shares a cat]");
        assert_eq!(o.source.as_deref(), Some("conv-1:D1:2"));
        assert_eq!(p.rejected.len(), 3, "{:?}", p.rejected);
        assert!(p.rejected[0].at.ends_with("turn 2"));
    }

    #[test]
    fn longmemeval_sessions_keep_roles_and_turn_numbers() {
        let line = r#"{"question_id":"q1","haystack_session_ids":["s9"],"haystack_dates":["2023/05/30 (Tue) 23:40"],
            "haystack_sessions":[[{"role":"user","content":"I adopted a dog"},{"role":"assistant","content":""},
            {"role":"assistant","content":"Congratulations"},{"role":"robot","content":"?"}]]}"#
            .replace('\n', " ");
        let p = parse_longmemeval(&format!("{line}\n{{bad\n"));
        assert_eq!(p.records.len(), 2);
        let ImportRecord::Observation(o) = &p.records[1].record else { panic!("not an observation") };
        assert_eq!((o.role, o.source.as_deref()), (Some(Role::Assistant), Some("s9#3")));
        assert_eq!(p.rejected.len(), 2);
        assert_eq!(p.rejected[1].line, 2);
    }
}
