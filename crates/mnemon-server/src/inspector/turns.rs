//! The turns page: a session's observations (or a namespace's) in log
//! order, each with the memories derived from it, so that a turn that
//! produced no memory is as visible as one that did.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::pages::{query_string, row, scan_memories, unexpected, Query};
use super::{Inspector, Page};
use mnemon::{EventBody, Memory, Namespace, ObservationId};
use mnemon_api::{ApiError, LogRequest, Request, Response};

/// Turns on one page, by default.
const DEFAULT_PAGE: usize = 50;
/// Most log events one page looks at while filtering by session or text
/// (the rest is a "continue" link), so a page answers promptly.
const MAX_SCANNED: usize = 20_000;
/// Most memories read per session to find what its turns produced.
const MAX_DERIVED_SCAN: usize = 20_000;

/// The memories of `session` (every status, quarantined ones too), by the
/// observations they name as sources.
fn derived(ins: &Inspector, ns: &Namespace, session: &str) -> Result<BTreeMap<ObservationId, Vec<Memory>>, ApiError> {
    let mut by_source: BTreeMap<ObservationId, Vec<Memory>> = BTreeMap::new();
    scan_memories(ins, ns, Some(session), MAX_DERIVED_SCAN, |page| {
        for m in page {
            for o in &m.sources {
                by_source.entry(*o).or_default().push(m.clone());
            }
        }
    })?;
    Ok(by_source)
}

/// `/ns/{ns}/turns`: observations in log order, filtered by `session` and
/// by text (`q`, a case-insensitive substring), paged by `cursor`.
pub(super) fn turns(ins: &Inspector, ns: &Namespace, q: &Query) -> Result<Page, ApiError> {
    let limit = q.number("limit")?.unwrap_or(DEFAULT_PAGE);
    if !(1..=mnemon_api::budget::MAX_PAGE).contains(&limit) {
        return Err(ApiError::out_of_range("limit", 1, mnemon_api::budget::MAX_PAGE, limit));
    }
    let session = q.get("session");
    let text = q.get("q").map(str::to_lowercase);
    let from = q.number("from")?.map(|f| u64::try_from(f).unwrap_or(u64::MAX));
    let mut cursor = None;
    let mut found = Vec::new();
    let mut scanned = 0;
    let mut last_seen = None;
    // The log position the next page starts at, when there may be more.
    let next: Option<u64> = loop {
        let Response::Log(page) = ins.call(Request::Log(LogRequest {
            namespace: ns.clone(),
            from,
            to: None,
            kinds: vec!["observed".into()],
            cursor: cursor.take(),
            limit: Some(mnemon_api::budget::MAX_PAGE),
        }))?
        else {
            return Err(unexpected("log"));
        };
        let mut full = false;
        for e in page.events {
            scanned += 1;
            last_seen = Some(e.seq);
            let EventBody::Observed(o) = e.body else { continue };
            if session.is_some_and(|s| s != o.session) {
                continue;
            }
            if text.as_ref().is_some_and(|t| !o.text.to_lowercase().contains(t.as_str())) {
                continue;
            }
            found.push((e.seq, e.time, o));
            if found.len() == limit {
                full = true;
                break;
            }
        }
        match page.next_cursor {
            _ if full => break last_seen.map(|s| s + 1),
            Some(_) if scanned >= MAX_SCANNED => break last_seen.map(|s| s + 1),
            Some(c) => cursor = Some(c),
            None => break None,
        }
    };
    let sessions: BTreeSet<&str> = found.iter().map(|(_, _, o)| o.session.as_str()).collect();
    let mut by_source = BTreeMap::new();
    for s in &sessions {
        by_source.append(&mut derived(ins, ns, s)?);
    }
    let zone = super::when::zone(q.get("tz"))?;
    let now = chrono::Utc::now();
    let rows: Vec<Value> = found
        .iter()
        .map(|(seq, time, o)| {
            let memories: Vec<Value> = by_source
                .get(&ObservationId(*seq))
                .map(|ms| ms.iter().map(|m| json!(row(m))).collect())
                .unwrap_or_default();
            json!({
                "id": seq, "session_link": query_string(&[("session", o.session.clone())]), "when": super::when::when(*time, now, zone), "session": o.session, "role": o.role.to_string(), "text": o.text,
                "event_time": o.event_time.map(|t| super::when::when(t, now, zone)), "source": o.source, "memories": memories,
            })
        })
        .collect();
    let next_link = next.map(|f| {
        let mut pairs: Vec<(&str, String)> =
            q.0.iter().filter(|(k, _)| k.as_str() != "from").map(|(k, v)| (k.as_str(), v.clone())).collect();
        pairs.push(("from", f.to_string()));
        query_string(&pairs)
    });
    let ctx = json!({
        "title": match session { Some(s) => format!("{} session {s}", ns.as_str()), None => format!("{} turns", ns.as_str()) },
        "ns": ns.as_str(),
        "session": session,
        "q": q.values(),
        "turns": rows,
        "without_memory": rows.iter().filter(|r| r["memories"].as_array().is_some_and(Vec::is_empty)).count(),
        "scanned": scanned,
        "next": next_link,
    });
    Ok(ins.render(200, "turns.html", ctx))
}
