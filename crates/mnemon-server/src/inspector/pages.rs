//! The inspector's pages: each reads through the command surface and
//! renders a template.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use super::{plot, Inspector, Page};
use mnemon::Memory;
use mnemon::{event::ForgetTarget, Event, EventBody};
use mnemon::{AsOf, NamespaceSummary};
use mnemon::{MemoryId, Namespace, Seq, Status, Tier};
use mnemon_api::{
    ApiError, ErrorCode, HistoryRequest, ListRequest, LogRequest, NamespacesRequest, ReceiptsRequest, Request,
    Response, StatsRequest, TimelineRequest,
};

/// Memories on one page of a namespace listing, by default.
const DEFAULT_PAGE: usize = 50;
/// Most memories one listing page looks at while filtering by status or
/// text (the rest is a "continue" link), so a page answers promptly.
const MAX_SCANNED: usize = 20_000;
/// Versions of a chain on one page (cards and table), by default.
const CHAIN_PAGE: usize = 20;
/// Erasure requests on one page of the erasure view.
const ERASURES_PAGE: usize = 100;
/// Compaction receipts on one page of the erasure view.
const RECEIPTS_PAGE: usize = 20;

/// The query string, decoded: the first value of each name; empty values
/// count as absent.
pub(super) struct Query(pub(super) BTreeMap<String, String>);

impl Query {
    pub(super) fn parse(q: Option<&str>) -> Query {
        let mut m = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
            let v = v.trim();
            if !v.is_empty() {
                m.entry(k.into_owned()).or_insert_with(|| v.to_string());
            }
        }
        Query(m)
    }

    pub(super) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    pub(super) fn number(&self, k: &str) -> Result<Option<usize>, ApiError> {
        self.get(k)
            .map(|v| v.parse::<usize>().map_err(|_| ApiError::invalid(k, format!("must be a whole number, got {v:?}"))))
            .transpose()
    }

    /// The as-of point of `as_of` (`seq`, `time`, `valid_time`) and `at`.
    pub(super) fn as_of(&self) -> Result<Option<AsOf>, ApiError> {
        let Some(at) = self.get("at") else { return Ok(None) };
        let time = |s: &str| {
            parse_time(s)
                .ok_or_else(|| ApiError::invalid("at", format!("must be a date or an RFC 3339 time, got {s:?}")))
        };
        Ok(Some(match self.get("as_of").unwrap_or("seq") {
            "seq" => AsOf::Seq(
                at.parse().map_err(|_| ApiError::invalid("at", format!("must be a log position, got {at:?}")))?,
            ),
            "time" => AsOf::Time(time(at)?),
            "valid_time" => AsOf::ValidTime(time(at)?),
            other => return Err(ApiError::invalid("as_of", format!("must be seq, time or valid_time, got {other:?}"))),
        }))
    }

    /// The query as a map for the templates (to refill the forms).
    pub(super) fn values(&self) -> Value {
        json!(self.0)
    }
}

/// An RFC 3339 time, a `YYYY-MM-DDTHH:MM` (as a datetime-local input
/// sends it, read as UTC) or a date (midnight UTC).
pub(super) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, f) {
            return Some(t.and_utc());
        }
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc())
}

/// Query-string encoding of `pairs` (for links).
pub(super) fn query_string(pairs: &[(&str, String)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// The as-of parameters of a link, as given.
fn as_of_pairs(q: &Query) -> Vec<(&'static str, String)> {
    match q.get("at") {
        Some(at) => vec![("as_of", q.get("as_of").unwrap_or("seq").to_string()), ("at", at.to_string())],
        None => Vec::new(),
    }
}

fn describe_as_of(a: Option<AsOf>) -> Option<String> {
    a.map(|a| match a {
        AsOf::Seq(s) => format!("as the store knew it after log position {s} (recorded time)"),
        AsOf::Time(t) => format!("as the store knew it at {} (recorded time)", t.to_rfc3339()),
        AsOf::ValidTime(t) => format!("what was true at {} (valid time), as the store knows it now", t.to_rfc3339()),
    })
}

pub(super) fn unexpected(op: &str) -> ApiError {
    ApiError::new(ErrorCode::Internal, format!("{op} answered with another response"))
}

fn not_found(path: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("no page at {path}"))
}

/// Dispatches `path` to its page.
pub(super) fn route(ins: &Inspector, path: &str, q: &Query) -> Result<Page, ApiError> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        [""] => index(ins),
        ["ns", ns] | ["ns", ns, ""] => namespace(ins, &namespace_of(ins, ns)?, q),
        ["ns", ns, "memory", id] => {
            let id =
                id.parse::<u64>().map_err(|_| ApiError::invalid("id", format!("must be a memory id, got {id:?}")))?;
            chain(ins, &namespace_of(ins, ns)?, MemoryId(id), q)
        }
        ["ns", ns, "reads"] => super::reads::reads(ins, &namespace_of(ins, ns)?, q),
        ["ns", ns, "turns"] => super::turns::turns(ins, &namespace_of(ins, ns)?, q),
        ["ns", ns, "timeline"] => timeline(ins, &namespace_of(ins, ns)?, q),
        ["ns", ns, "recall"] => super::block::playground(ins, &namespace_of(ins, ns)?, q),
        ["ns", ns, "erasure"] => erasure(ins, &namespace_of(ins, ns)?, q),
        _ => Err(not_found(path)),
    }
}

/// The namespace of a path segment, checked against the policy.
fn namespace_of(ins: &Inspector, segment: &str) -> Result<Namespace, ApiError> {
    let decoded = percent_decode(segment);
    let ns = Namespace::new(decoded.as_str()).map_err(|e| ApiError::invalid("namespace", e.to_string()))?;
    ins.policy.check(Some(&ns))?;
    Ok(ns)
}

fn percent_decode(s: &str) -> String {
    // form_urlencoded decodes %XX (and '+', which no namespace holds).
    form_urlencoded::parse(format!("x={s}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// The namespaces the policy allows, with their figures (every page).
fn summaries(ins: &Inspector) -> Result<Vec<NamespaceSummary>, ApiError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let Response::Namespaces(page) =
            ins.call(Request::Namespaces(NamespacesRequest { cursor: cursor.take(), limit: Some(1000) }))?
        else {
            return Err(unexpected("namespaces"));
        };
        out.extend(page.namespaces.into_iter().filter(|s| ins.policy.check(Some(&s.namespace)).is_ok()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

fn summary(ins: &Inspector, ns: &Namespace) -> Result<Option<NamespaceSummary>, ApiError> {
    Ok(summaries(ins)?.into_iter().find(|s| &s.namespace == ns))
}

fn stats(ins: &Inspector) -> Result<Option<Value>, ApiError> {
    if !ins.policy.is_unrestricted() {
        return Ok(None);
    }
    match ins.call(Request::Stats(StatsRequest {}))? {
        Response::Stats(s) => Ok(Some(json!(s))),
        _ => Err(unexpected("stats")),
    }
}

/// A page of the store's compaction receipts (store-wide, so absent under
/// a restricted policy) and the query string of the next page.
fn receipts(ins: &Inspector, ns: &Namespace, q: &Query) -> Result<Option<Value>, ApiError> {
    if !ins.policy.is_unrestricted() {
        return Ok(None);
    }
    let req = ReceiptsRequest { cursor: q.get("receipts_cursor").map(str::to_string), limit: Some(RECEIPTS_PAGE) };
    let Response::Receipts(page) = ins.call(Request::Receipts(req))? else {
        return Err(unexpected("receipts"));
    };
    let next = page.next_cursor.map(|c| {
        let mut pairs = vec![("receipts_cursor", c)];
        if let Some(cursor) = q.get("cursor") {
            pairs.push(("cursor", cursor.to_string()));
        }
        format!("/ns/{}/erasure?{}", ns.as_str(), query_string(&pairs))
    });
    Ok(Some(json!({ "list": page.receipts, "next": next })))
}

fn index(ins: &Inspector) -> Result<Page, ApiError> {
    let namespaces = summaries(ins)?;
    // Store-wide memory figures are the namespaces' summed, so that every
    // page counts with the one definition of `active` (current, not
    // quarantined) that the memory listing shows.
    let totals = Counts::sum(&namespaces);
    let ctx = json!({ "title": "Namespaces", "namespaces": namespaces, "stats": stats(ins)?, "totals": totals });
    Ok(ins.render(200, "index.html", ctx))
}

/// Memory versions by standing, summed over namespaces. Each version
/// counts once: quarantined ones apart from the three statuses.
#[derive(Serialize, Default, Debug, PartialEq, Eq)]
struct Counts {
    active: usize,
    superseded: usize,
    archived: usize,
    quarantined: usize,
    observations: usize,
}

impl Counts {
    fn sum(all: &[NamespaceSummary]) -> Counts {
        all.iter().fold(Counts::default(), |c, s| Counts {
            active: c.active + s.active,
            superseded: c.superseded + s.superseded,
            archived: c.archived + s.archived,
            quarantined: c.quarantined + s.quarantined,
            observations: c.observations + s.observations,
        })
    }
}

/// A memory as the templates show it.
#[derive(Serialize)]
pub(super) struct Row<'a> {
    #[serde(flatten)]
    memory: &'a Memory,
    status_name: String,
    kind_name: String,
    tier_name: String,
}

pub(super) fn row(m: &Memory) -> Row<'_> {
    Row { memory: m, status_name: m.status.to_string(), kind_name: m.kind.to_string(), tier_name: m.tier.to_string() }
}

/// Which memories a status filter keeps.
type Keep = Box<dyn Fn(&Memory) -> bool>;

/// The status filter: the include flags the listing needs (superseded,
/// quarantined, archived) and the test.
fn status_filter(q: &Query) -> Result<((bool, bool, bool), Keep), ApiError> {
    let status = q.get("status").unwrap_or("active");
    let keep: Keep = match status {
        // What the surface lists by default: current and not quarantined
        // (in a valid-time view, the versions true then, whatever their
        // status now).
        "active" => Box::new(|_: &Memory| true),
        "superseded" => Box::new(|m: &Memory| m.status == Status::Superseded),
        "archived" => Box::new(|m: &Memory| m.status == Status::Archived),
        "quarantined" => Box::new(|m: &Memory| m.quarantine.is_some()),
        "all" => Box::new(|_: &Memory| true),
        other => {
            return Err(ApiError::invalid(
                "status",
                format!("must be active, superseded, archived, quarantined or all, got {other:?}"),
            ))
        }
    };
    let flags = match status {
        "active" => (false, false, false),
        "superseded" => (true, false, false),
        "archived" => (false, false, true),
        _ => (true, true, true),
    };
    Ok((flags, keep))
}

fn namespace(ins: &Inspector, ns: &Namespace, q: &Query) -> Result<Page, ApiError> {
    let limit = q.number("limit")?.unwrap_or(DEFAULT_PAGE);
    if !(1..=mnemon_api::budget::MAX_PAGE).contains(&limit) {
        return Err(ApiError::out_of_range("limit", 1, mnemon_api::budget::MAX_PAGE, limit));
    }
    let as_of = q.as_of()?;
    let ((superseded, quarantined, archived), keep) = status_filter(q)?;
    let tier =
        q.get("tier").map(str::parse::<Tier>).transpose().map_err(|e| ApiError::invalid("tier", e.to_string()))?;
    let text = q.get("q").map(str::to_lowercase);
    let mut cursor = q.get("cursor").map(str::to_string);
    let mut found: Vec<Memory> = Vec::new();
    let mut scanned = 0;
    let mut seq;
    let mut valid_time;
    // Ask for as many as are still missing, so that the surface's cursor
    // after each answer is exactly where this page stops.
    let next = loop {
        let Response::List(page) = ins.call(Request::List(ListRequest {
            namespace: ns.clone(),
            include_superseded: superseded,
            include_quarantined: quarantined,
            include_archived: archived,
            kind: q.get("kind").map(str::to_string),
            tier,
            session: q.get("session").map(str::to_string),
            as_of,
            cursor: cursor.take(),
            limit: Some(limit - found.len()),
        }))?
        else {
            return Err(unexpected("list"));
        };
        seq = page.seq;
        valid_time = page.valid_time;
        scanned += page.memories.len();
        found.extend(
            page.memories
                .into_iter()
                .filter(|m| keep(m))
                .filter(|m| text.as_ref().is_none_or(|t| m.content.to_lowercase().contains(t.as_str()))),
        );
        match page.next_cursor {
            Some(c) if found.len() < limit && scanned < MAX_SCANNED => cursor = Some(c),
            other => break other,
        }
    };
    let next_link = next.map(|c| {
        let mut pairs: Vec<(&str, String)> =
            q.0.iter().filter(|(k, _)| k.as_str() != "cursor").map(|(k, v)| (k.as_str(), v.clone())).collect();
        pairs.push(("cursor", c));
        query_string(&pairs)
    });
    let zone = super::when::zone(q.get("tz"))?;
    let now = Utc::now();
    let rows: Vec<Value> = found
        .iter()
        .map(|m| {
            let mut v = json!(row(m));
            v["recorded"] = super::when::when(m.recorded_from, now, zone);
            v["valid"] = super::when::when(m.valid_from, now, zone);
            v["valid_until"] = json!(m.valid_to.map(|t| super::when::when(t, now, zone)));
            v
        })
        .collect();
    let ctx = json!({
        "title": ns.as_str(),
        "ns": ns.as_str(),
        "summary": summary(ins, ns)?,
        "memories": rows,
        "q": q.values(),
        "seq": seq,
        "valid_time": valid_time,
        "as_of": describe_as_of(as_of),
        "as_of_query": query_string(&as_of_pairs(q)),
        "next": next_link,
        "scanned": scanned,
        "kinds": ["preference", "fact", "decision", "task_state", "episode", "procedure"],
        "tiers": ["short_term", "long_term", "permanent"],
        "statuses": ["active", "superseded", "archived", "quarantined", "all"],
    });
    Ok(ins.render(200, "namespace.html", ctx))
}

/// One event of the log, by its position (`None` if it is not in `ns`).
/// Reads the versions of `ns`'s memories (every status, quarantined ones
/// too; only `session`'s when given), a page of
/// [`mnemon_api::budget::MAX_PAGE`] at a time, handing each page to `each`,
/// until at least `max` are read or none is left. Returns how many were
/// read and the log position the pages were read at.
///
/// # Errors
/// Whatever the surface's `list` gives.
pub(super) fn scan_memories(
    ins: &Inspector,
    ns: &Namespace,
    session: Option<&str>,
    max: usize,
    mut each: impl FnMut(Vec<mnemon::Memory>),
) -> Result<(usize, Seq), ApiError> {
    let (mut cursor, mut read, mut seq) = (None, 0, 0);
    loop {
        let Response::List(page) = ins.call(Request::List(ListRequest {
            namespace: ns.clone(),
            include_superseded: true,
            include_quarantined: true,
            include_archived: true,
            kind: None,
            tier: None,
            session: session.map(str::to_string),
            as_of: None,
            cursor: cursor.take(),
            limit: Some(mnemon_api::budget::MAX_PAGE),
        }))?
        else {
            return Err(unexpected("list"));
        };
        seq = seq.max(page.seq);
        read += page.memories.len();
        each(page.memories);
        match page.next_cursor {
            Some(c) if read < max => cursor = Some(c),
            _ => return Ok((read, seq)),
        }
    }
}

pub(super) fn event_at(ins: &Inspector, ns: &Namespace, seq: Seq) -> Result<Option<Event>, ApiError> {
    let Response::Log(page) = ins.call(Request::Log(LogRequest {
        namespace: ns.clone(),
        from: Some(seq),
        to: Some(seq),
        kinds: Vec::new(),
        cursor: None,
        limit: Some(1),
    }))?
    else {
        return Err(unexpected("log"));
    };
    Ok(page.events.into_iter().next())
}

/// In words, why a version was replaced.
fn reason_words(r: &mnemon::event::SupersedeReason) -> (&'static str, &'static str) {
    use mnemon::event::SupersedeReason as R;
    match r {
        R::Explicit => ("explicit", "the caller superseded it"),
        R::SameKey => ("slot key", "a new memory arrived under the same slot key"),
        R::NearDuplicate => ("near_duplicate", "a near-duplicate memory replaced it"),
        R::Consolidated => ("consolidation", "consolidation merged it into a new memory"),
        R::Extraction => ("extraction", "an extraction result updated it"),
        R::Promoted => ("promoted", "promoted from short-term to long-term at the end of its session"),
    }
}

fn chain(ins: &Inspector, ns: &Namespace, id: MemoryId, q: &Query) -> Result<Page, ApiError> {
    let as_of = q.as_of()?;
    let mut versions: Vec<Memory> = Vec::new();
    let mut cursor = None;
    let mut seq = None;
    loop {
        let Response::History(page) = ins.call(Request::History(HistoryRequest {
            namespace: ns.clone(),
            id,
            as_of,
            cursor: cursor.take(),
            limit: Some(mnemon_api::budget::MAX_PAGE),
        }))?
        else {
            return Err(unexpected("history"));
        };
        seq = seq.or(Some(page.seq));
        versions.extend(page.versions);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let per = q.number("per")?.unwrap_or(CHAIN_PAGE);
    if !(1..=mnemon_api::budget::MAX_PAGE).contains(&per) {
        return Err(ApiError::out_of_range("per", 1, mnemon_api::budget::MAX_PAGE, per));
    }
    let pages = versions.len().div_ceil(per).max(1);
    let page = q.number("page")?.unwrap_or(1);
    if !(1..=pages).contains(&page) {
        return Err(ApiError::out_of_range("page", 1, pages, page));
    }
    let zone = super::when::zone(q.get("tz"))?;
    let now = Utc::now();
    let shown = (page - 1) * per..(page * per).min(versions.len());
    let mut columns = Vec::new();
    let mut changes = Vec::new();
    for i in shown {
        let m = &versions[i];
        let prev = i.checked_sub(1).map(|p| &versions[p]);
        let changed = |f: fn(&Memory) -> String| prev.is_some_and(|p| f(p) != f(m));
        changes.push(json!({
            "id": m.id,
            "n": i + 1,
            "status": m.status.to_string(),
            "recorded": super::when::when(m.recorded_from, now, zone),
            "valid": super::when::when(m.valid_from, now, zone),
            "fields": prev.map(|p| changed_fields(p, m)),
        }));
        let replaced = match m.superseded_seq {
            Some(s) => match event_at(ins, ns, s)? {
                Some(Event { body: EventBody::Superseded(link), time, .. }) => {
                    let (reason, words) = reason_words(&link.reason);
                    Some(
                        json!({ "seq": s, "time": time, "when": super::when::when(time, now, zone), "by": link.new, "reason": reason, "words": words }),
                    )
                }
                _ => Some(json!({ "seq": s })),
            },
            None => None,
        };
        let mut sources = Vec::new();
        for o in &m.sources {
            let ev = event_at(ins, ns, o.0)?;
            sources.push(match ev.map(|e| e.body) {
                Some(EventBody::Observed(obs)) => json!({
                    "id": o.0, "turns": query_string(&[("session", obs.session.clone())]), "session": obs.session, "role": obs.role, "text": obs.text, "event_time": obs.event_time,
                }),
                _ => json!({ "id": o.0, "forgotten": true }),
            });
        }
        columns.push(json!({
            "m": row(m),
            "changed": {
                "content": changed(|m| m.content.clone()),
                "kind": changed(|m| m.kind.to_string()),
                "tier": changed(|m| m.tier.to_string()),
                "importance": changed(|m| format!("{:.2}", m.importance)),
                "key": changed(|m| m.key.clone().unwrap_or_default()),
                "entities": changed(|m| m.entities.join(", ")),
                "session": changed(|m| m.session.clone().unwrap_or_default()),
            },
            "replaced": replaced,
            "sources": sources,
            "times": {
                "valid_from": super::when::when(m.valid_from, now, zone),
                "valid_to": m.valid_to.map(|t| super::when::when(t, now, zone)),
                "recorded_from": super::when::when(m.recorded_from, now, zone),
                "recorded_to": m.recorded_to.map(|t| super::when::when(t, now, zone)),
            },
        }));
    }
    let ctx = json!({
        "title": format!("Memory {id}"),
        "ns": ns.as_str(),
        "id": id,
        "columns": columns,
        "changes": changes,
        "versions": versions.len(),
        "page": page,
        "pages": pages,
        "prev_page": (page > 1).then(|| page_link(q, page - 1)),
        "next_page": (page < pages).then(|| page_link(q, page + 1)),
        "seq": seq,
        "as_of": describe_as_of(as_of),
        "as_of_query": query_string(&as_of_pairs(q)),
    });
    Ok(ins.render(200, "memory.html", ctx))
}

/// A field of a memory by name, as text.
type Field = (&'static str, fn(&Memory) -> String);

/// The fields of `m` that differ from `prev`, each with its old and new
/// value as text; the chain table shows only these.
fn changed_fields(prev: &Memory, m: &Memory) -> Vec<Value> {
    let fields: [Field; 7] = [
        ("content", |m| m.content.clone()),
        ("kind", |m| m.kind.to_string()),
        ("tier", |m| m.tier.to_string()),
        ("importance", |m| format!("{:.2}", m.importance)),
        ("slot key", |m| m.key.clone().unwrap_or_default()),
        ("entities", |m| m.entities.join(", ")),
        ("session", |m| m.session.clone().unwrap_or_default()),
    ];
    fields
        .iter()
        .filter(|(_, f)| f(prev) != f(m))
        .map(|(name, f)| json!({ "field": name, "old": f(prev), "new": f(m) }))
        .collect()
}

/// The query string of the chain page `page`, other parameters kept.
fn page_link(q: &Query, page: usize) -> String {
    let mut pairs: Vec<(&str, String)> =
        q.0.iter().filter(|(k, _)| k.as_str() != "page").map(|(k, v)| (k.as_str(), v.clone())).collect();
    pairs.push(("page", page.to_string()));
    query_string(&pairs)
}

fn timeline(ins: &Inspector, ns: &Namespace, q: &Query) -> Result<Page, ApiError> {
    let buckets = q.number("buckets")?;
    let time = |k: &str| {
        q.get(k)
            .map(|s| {
                parse_time(s)
                    .ok_or_else(|| ApiError::invalid(k, format!("must be a date or an RFC 3339 time, got {s:?}")))
            })
            .transpose()
    };
    let by_valid = match q.get("by").unwrap_or("commit") {
        "commit" => false,
        "valid" => true,
        other => return Err(ApiError::invalid("by", format!("must be commit or valid, got {other:?}"))),
    };
    let t = if by_valid {
        super::valid::timeline(ins, ns, buckets, time("from")?, time("to")?)?
    } else {
        let Response::Timeline(t) = ins.call(Request::Timeline(TimelineRequest {
            namespace: ns.clone(),
            buckets,
            from: time("from")?,
            to: time("to")?,
        }))?
        else {
            return Err(unexpected("timeline"));
        };
        t
    };
    let names = if by_valid { plot::VALID_NAMES } else { plot::COMMIT_NAMES };
    let legend: Vec<Value> =
        plot::legend(&t, &names).into_iter().map(|(name, color)| json!({ "name": name, "color": color })).collect();
    let zone = super::when::zone(q.get("tz"))?;
    let now = Utc::now();
    let toggle = |by: &str| {
        let mut pairs: Vec<(&str, String)> =
            q.0.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "by" | "from" | "to"))
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
        pairs.push(("by", by.to_string()));
        query_string(&pairs)
    };
    let svg = plot::timeline_svg(&t).map_err(|e| ApiError::new(ErrorCode::Internal, format!("cannot plot: {e}")))?;
    let rows: Vec<Value> = t
        .buckets
        .iter()
        .filter(|b| b.total() > 0)
        .map(|b| {
            json!({
                "b": b,
                "from": t.label(b.start),
                "to": t.label(b.end),
                "from_when": super::when::when(b.start, now, zone),
                "to_when": super::when::when(b.end, now, zone),
                "total": b.total(),
                "link": if by_valid {
                    Some(query_string(&[("as_of", "valid_time".into()), ("at", t.label(b.end))]))
                } else {
                    b.last_seq.map(|s| query_string(&[("as_of", "seq".into()), ("at", s.to_string())]))
                },
            })
        })
        .collect();
    let ctx = json!({
        "title": format!("{} timeline", ns.as_str()),
        "ns": ns.as_str(),
        "t": t,
        "rows": rows,
        "q": q.values(),
        "by_valid": by_valid,
        "names": names,
        "legend": legend,
        "by_commit_link": toggle("commit"),
        "by_valid_link": toggle("valid"),
        "from_when": super::when::when(t.from, now, zone),
        "to_when": super::when::when(t.to, now, zone),
        "span": super::when::relative(t.from, t.to).replace(" ago", "").replace("in ", ""),
    });
    // The plot is markup made here from counts and dates, not stored text.
    let ctx = minijinja::context! { svg => minijinja::Value::from_safe_string(svg), ..minijinja::Value::from_serialize(&ctx) };
    Ok(ins.render_value(200, "timeline.html", ctx))
}

fn erasure(ins: &Inspector, ns: &Namespace, q: &Query) -> Result<Page, ApiError> {
    let Response::Log(page) = ins.call(Request::Log(LogRequest {
        namespace: ns.clone(),
        from: None,
        to: None,
        kinds: vec!["forgotten".into()],
        cursor: q.get("cursor").map(str::to_string),
        limit: Some(ERASURES_PAGE),
    }))?
    else {
        return Err(unexpected("log"));
    };
    let requests: Vec<Value> = page
        .events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Forgotten(f) => Some(json!({
                "seq": e.seq,
                "time": e.time,
                "target": match &f.target {
                    ForgetTarget::Memory(id) => format!("memory {id} and its version chain"),
                    ForgetTarget::Observation(id) => format!("observation {id} and what was derived from it"),
                    ForgetTarget::Session(s) => format!("session {s}"),
                    ForgetTarget::Namespace => "the whole namespace".to_string(),
                    ForgetTarget::Matching => "memories matching a query (not stored)".to_string(),
                },
                "reason": f.reason,
                "requester": f.requester,
                "memories": f.memories.len(),
                "observations": f.observations.len(),
            })),
            _ => None,
        })
        .collect();
    let ctx = json!({
        "title": format!("{} erasure", ns.as_str()),
        "ns": ns.as_str(),
        "summary": summary(ins, ns)?,
        "stats": stats(ins)?,
        "receipts": receipts(ins, ns, q)?,
        "requests": requests,
        "next": page.next_cursor.map(|c| query_string(&[("cursor", c)])),
    });
    Ok(ins.render(200, "erasure.html", ctx))
}
