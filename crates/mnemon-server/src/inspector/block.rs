//! The recall playground: the exact `context` block an agent would get for
//! a query, part by part, with what the budget left out or cut, the
//! abstention decision and its floors, and each hit's score parts.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::pages::{row, unexpected, Query};
use super::{Inspector, Page};
use mnemon::recall::{BlockPart, EntryFate, Explanation, RecallMode};
use mnemon::{MemoryId, Namespace};
use mnemon_api::{ApiError, ContextRequest, GetRequest, RecallFilters, RecallRequest, Request, Response};

/// Memories recalled for the block, by default (the surface's default).
const DEFAULT_TOP_K: usize = 10;
/// Tokens of the block, by default (the surface's default).
const DEFAULT_BUDGET: usize = mnemon::recall::DEFAULT_CONTEXT_BUDGET;

/// One score part as the page draws it: its name, value, documented range
/// and what it means.
struct Part {
    name: &'static str,
    lo: f32,
    hi: f32,
    value: fn(&Explanation) -> f32,
    meaning: &'static str,
}

/// The score parts, each with the range its documentation states.
const PARTS: &[Part] = &[
    Part { name: "cosine", lo: -1.0, hi: 1.0, value: |e| e.similarity, meaning: "cosine of query and memory vectors" },
    Part {
        name: "BM25 (norm)",
        lo: 0.0,
        hi: 1.0,
        value: |e| e.lexical_norm,
        meaning: "BM25 over the best BM25 among the candidates",
    },
    Part {
        name: "fused",
        lo: -1.0,
        hi: 1.0,
        value: |e| e.fused,
        meaning: "relevance before reranking: cosine (dense), BM25 norm (lexical), or their blend with cosine \
                  rescaled over the candidates (hybrid; can pass 1 when one hit leads both)",
    },
    Part { name: "importance", lo: 0.0, hi: 1.0, value: |e| e.importance, meaning: "the memory's importance" },
    Part { name: "recency", lo: 0.0, hi: 1.0, value: |e| e.recency, meaning: "1 = fresh or not decaying" },
    Part {
        name: "time",
        lo: 0.0,
        hi: 1.0,
        value: |e| e.time,
        meaning: "closeness to the span of time the query names (0 when it names none)",
    },
    Part {
        name: "score",
        lo: 0.0,
        hi: 1.0,
        value: |e| e.score,
        meaning: "the final score, comparable within one recall",
    },
];

/// The bars of `e`: each part's value, its share of its range (0–1, for a
/// `<meter>`), and whether it lies outside the range.
fn bars(e: &Explanation) -> Vec<Value> {
    PARTS
        .iter()
        .map(|p| {
            let v = (p.value)(e);
            json!({
                "name": p.name, "value": v, "lo": p.lo, "hi": p.hi,
                "outside": !(p.lo..=p.hi).contains(&v),
                "shown": v.clamp(p.lo, p.hi),
            })
        })
        .collect()
}

fn fate_words(f: EntryFate) -> (&'static str, &'static str) {
    match f {
        EntryFate::Whole => ("whole", "in the block, whole"),
        EntryFate::Cut => ("cut", "in the block, cut to fit the budget"),
        EntryFate::Excerpt => ("excerpt", "in the block as a passage of a long memory"),
        EntryFate::Skipped => ("skipped", "left out: no room in the budget"),
        EntryFate::InProfile => ("in_profile", "not repeated: the profile part shows it"),
    }
}

/// The block's lines by part (entries only, in order), and its frame.
fn split(text: &str) -> HashMap<BlockPart, Vec<String>> {
    let mut out: HashMap<BlockPart, Vec<String>> = HashMap::new();
    let mut part = None;
    for line in text.lines() {
        if let Some(entry) = line.strip_prefix("- ") {
            if let Some(p) = part {
                out.entry(p).or_default().push(entry.to_string());
            }
            continue;
        }
        part = match line {
            mnemon::recall::SECTION_PROFILE => Some(BlockPart::Profile),
            mnemon::recall::SECTION_RELEVANT => Some(BlockPart::Relevant),
            mnemon::recall::SECTION_RECENT => Some(BlockPart::Recent),
            _ => None,
        };
    }
    out
}

/// The recall filters of the page's form, the same for the block and the
/// hits' explanations; looking records no access.
fn filters(q: &Query) -> Result<RecallFilters, ApiError> {
    Ok(RecallFilters {
        top_k: Some(q.number("k")?.unwrap_or(DEFAULT_TOP_K)),
        mode: q
            .get("mode")
            .map(str::parse::<RecallMode>)
            .transpose()
            .map_err(|e| ApiError::invalid("mode", e.to_string()))?,
        include_superseded: q.get("superseded").is_some(),
        current_session: q.get("session").map(str::to_string),
        as_of: q.as_of()?,
        requester: Some("inspector".into()),
        // Looking writes nothing: no `accessed` event.
        record_access: Some(false),
        ..RecallFilters::default()
    })
}

/// `/ns/{ns}/recall`: the form, and for a query `q` the block, its entries
/// and the hits' score parts.
pub(super) fn playground(ins: &Inspector, ns: &Namespace, q: &Query) -> Result<Page, ApiError> {
    let mut ctx = json!({
        "title": format!("{} recall", ns.as_str()),
        "ns": ns.as_str(),
        "q": q.values(),
        "asked": false,
        "modes": ["hybrid", "dense", "lexical"],
        "legend": PARTS.iter().map(|p| json!({ "name": p.name, "lo": p.lo, "hi": p.hi, "meaning": p.meaning })).collect::<Vec<_>>(),
    });
    let Some(query) = q.get("q") else {
        return Ok(ins.render(200, "recall.html", ctx));
    };
    let budget = q.number("budget")?.unwrap_or(DEFAULT_BUDGET);
    // The request every door sends, with `explain` for the entries' fates.
    let Response::Context(block) = ins.call(Request::Context(ContextRequest {
        namespace: ns.clone(),
        query: query.to_string(),
        budget_tokens: Some(budget),
        profile_share: None,
        recent_share: None,
        filters: filters(q)?,
        explain: true,
    }))?
    else {
        return Err(unexpected("context"));
    };
    // The same recall, never abstaining, for each hit's score parts.
    let mut explain_filters = filters(q)?;
    explain_filters.abstain_below = Some(-1.0);
    let Response::Recall(r) = ins.call(Request::Recall(RecallRequest {
        namespace: ns.clone(),
        query: query.to_string(),
        filters: explain_filters,
        explain: true,
    }))?
    else {
        return Err(unexpected("recall"));
    };
    let by_id: HashMap<MemoryId, &mnemon_api::Hit> = r.hits.iter().map(|h| (h.id, h)).collect();
    let lines = split(&block.text);
    let mut taken: HashMap<BlockPart, usize> = HashMap::new();
    let mut parts: Vec<Value> = Vec::new();
    for (part, title) in [
        (BlockPart::Profile, "Profile: what holds now, by key"),
        (BlockPart::Relevant, "Relevant, most relevant first"),
        (BlockPart::Recent, "Recent turns of this session, oldest first"),
    ] {
        let mut entries = Vec::new();
        for e in block.entries.iter().filter(|e| e.part == part) {
            let (fate, words) = fate_words(e.fate);
            // Rendered entries appear in the block in the entries' order.
            let line = match e.fate {
                EntryFate::Whole | EntryFate::Cut | EntryFate::Excerpt => {
                    let n = taken.entry(part).or_default();
                    *n += 1;
                    lines.get(&part).and_then(|l| l.get(*n - 1)).cloned()
                }
                _ => None,
            };
            let hit = e.memory.and_then(|id| by_id.get(&id));
            let content = match (hit, e.memory) {
                (Some(h), _) => Some(h.content.clone()),
                // A profile memory recall did not find: read it.
                (None, Some(id)) if line.is_none() => {
                    match ins.call(Request::Get(GetRequest { namespace: ns.clone(), id, as_of: q.as_of()? })) {
                        Ok(Response::Get(m)) => Some(m.content),
                        _ => None,
                    }
                }
                // A recent turn left out of the block: read it.
                (None, None) if line.is_none() => match e.observation {
                    Some(o) => match super::pages::event_at(ins, ns, o.0)? {
                        Some(mnemon::Event { body: mnemon::EventBody::Observed(obs), .. }) => Some(obs.text),
                        _ => None,
                    },
                    None => None,
                },
                _ => None,
            };
            entries.push(json!({
                "memory": e.memory, "observation": e.observation, "fate": fate, "words": words,
                "line": line, "content": content,
                "score": hit.map(|h| h.score),
                "bars": hit.and_then(|h| h.explain.as_ref()).map(bars),
                "m": hit.and_then(|h| h.memory.as_ref()).map(row),
            }));
        }
        parts.push(json!({ "part": format!("{part:?}").to_lowercase(), "title": title, "entries": entries }));
    }
    let best = r
        .hits
        .iter()
        .filter_map(|h| h.explain.as_ref())
        .map(|e| e.similarity)
        .fold(None, |b: Option<f32>, s| Some(b.map_or(s, |b| b.max(s))));
    let extra = json!({
        "asked": true,
        "budget": budget,
        "block": block,
        "parts": parts,
        "best_similarity": best,
        "omitted": r.omitted,
    });
    if let (Value::Object(c), Value::Object(x)) = (&mut ctx, extra) {
        c.extend(x);
    }
    Ok(ins.render(200, "recall.html", ctx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_splits_into_its_parts_in_order() {
        let text = format!(
            "<memories>\n{}\n{}\n- [2026-01-01] (fact) a\n- [2026-01-02] (fact) b\n{}\n- [2026-01-03] (user) c\n</memories>",
            mnemon::recall::BLOCK_PREAMBLE,
            mnemon::recall::SECTION_RELEVANT,
            mnemon::recall::SECTION_RECENT
        );
        let parts = split(&text);
        assert_eq!(parts[&BlockPart::Relevant], vec!["[2026-01-01] (fact) a", "[2026-01-02] (fact) b"]);
        assert_eq!(parts[&BlockPart::Recent], vec!["[2026-01-03] (user) c"]);
        assert!(!parts.contains_key(&BlockPart::Profile));
    }

    #[test]
    fn bars_stay_in_their_range_and_say_when_a_value_leaves_it() {
        let e: Explanation = serde_json::from_value(json!({
            "similarity": -0.2, "lexical": 0.0, "lexical_norm": 0.0, "query_idf": 0.0, "fused": 1.2,
            "importance": 0.5, "recency": 1.0, "entity_matches": 0, "score": 0.5, "collapsed": 0,
        }))
        .expect("an explanation");
        let b = bars(&e);
        let get = |n: &str| b.iter().find(|v| v["name"] == n).cloned().unwrap_or_default();
        assert_eq!(get("cosine")["outside"], false);
        assert_eq!(get("fused")["outside"], true);
        assert!((get("fused")["shown"].as_f64().unwrap_or(0.0) - 1.0).abs() < 1e-6);
    }
}
