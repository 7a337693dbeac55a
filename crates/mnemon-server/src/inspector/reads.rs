//! The reads page: who read a memory, when, and from which session (its
//! `accessed` events, with their requester and the query's session), what
//! one session read, and a namespace's most-read memories.

use serde_json::{json, Value};

use super::pages::{query_string, row, scan_memories, unexpected, Query};
use super::{Inspector, Page};
use mnemon::{EventBody, Memory, MemoryId, Namespace};
use mnemon_api::{ApiError, LogRequest, Request, Response};

/// Reads on one page, by default.
const DEFAULT_PAGE: usize = 50;
/// Most log events one page looks at (the rest is a "continue" link).
const MAX_SCANNED: usize = 20_000;
/// Most memories looked at for the most-read list.
const MAX_RANKED: usize = 20_000;
/// Memories in the most-read list.
const TOP: usize = 20;

/// The current memories of `ns` read most often (by their access count),
/// most first; ties by id.
fn most_read(ins: &Inspector, ns: &Namespace) -> Result<(Vec<Memory>, usize), ApiError> {
    let mut top: Vec<Memory> = Vec::new();
    let (scanned, _) = scan_memories(ins, ns, None, MAX_RANKED, |page| {
        top.extend(page.into_iter().filter(|m| m.access_count > 0));
        top.sort_by(|a, b| b.access_count.cmp(&a.access_count).then(a.id.cmp(&b.id)));
        top.truncate(TOP);
    })?;
    Ok((top, scanned))
}

/// Memories listed by id on a read of a session's list.
const LISTED: usize = 10;

/// `/ns/{ns}/reads`: with `memory`, that memory's reads, with `session`,
/// the reads whose query came from that session (both: that memory's
/// reads from that session), in log order from `from` (a log position),
/// paged; always, the most-read memories.
pub(super) fn reads(ins: &Inspector, ns: &Namespace, q: &Query) -> Result<Page, ApiError> {
    let limit = q.number("limit")?.unwrap_or(DEFAULT_PAGE);
    if !(1..=mnemon_api::budget::MAX_PAGE).contains(&limit) {
        return Err(ApiError::out_of_range("limit", 1, mnemon_api::budget::MAX_PAGE, limit));
    }
    let memory = q.number("memory")?.map(|m| MemoryId(u64::try_from(m).unwrap_or(u64::MAX)));
    // Sessions are stored in their one form (NFKC); so is the filter.
    let session = q.get("session").map(mnemon::canonical_id);
    let zone = super::when::zone(q.get("tz"))?;
    let now = chrono::Utc::now();
    let mut found: Vec<Value> = Vec::new();
    let mut next = None;
    let mut scanned = 0;
    if memory.is_some() || session.is_some() {
        let from = q.number("from")?.map(|f| u64::try_from(f).unwrap_or(u64::MAX));
        let mut cursor = None;
        let mut last_seen = None;
        next = loop {
            let Response::Log(page) = ins.call(Request::Log(LogRequest {
                namespace: ns.clone(),
                from,
                to: None,
                kinds: vec!["accessed".into()],
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
                let EventBody::Accessed(a) = e.body else { continue };
                if memory.is_some_and(|id| !a.ids.contains(&id)) {
                    continue;
                }
                // Events written before identifiers were normalised are
                // compared in their one form too.
                let read_session = a.session.as_deref().map(mnemon::canonical_id);
                if session.is_some() && read_session != session {
                    continue;
                }
                let session_link = a.session.as_ref().map(|s| query_string(&[("session", s.clone())]));
                found.push(json!({
                    "seq": e.seq,
                    "when": super::when::when(e.time, now, zone),
                    "requester": a.requester,
                    "session": a.session,
                    "session_link": session_link,
                    "returned": a.ids.len(),
                    "with": a.ids.len().saturating_sub(usize::from(memory.is_some())),
                    "ids": a.ids.iter().take(LISTED).collect::<Vec<_>>(),
                    "more_ids": a.ids.len().saturating_sub(LISTED),
                }));
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
    }
    let (top, ranked) = most_read(ins, ns)?;
    let next_link = next.map(|f| {
        let mut pairs: Vec<(&str, String)> =
            q.0.iter().filter(|(k, _)| k.as_str() != "from").map(|(k, v)| (k.as_str(), v.clone())).collect();
        pairs.push(("from", f.to_string()));
        query_string(&pairs)
    });
    let ctx = json!({
        "title": format!("{} reads", ns.as_str()),
        "ns": ns.as_str(),
        "q": q.values(),
        "memory": memory,
        "session": session,
        "reads": found,
        "scanned": scanned,
        "next": next_link,
        "top": top.iter().map(row).collect::<Vec<_>>(),
        "ranked": ranked,
    });
    Ok(ins.render(200, "reads.html", ctx))
}
