//! Reader for mem0 memories: what `Memory.get_all()` / `search()` return
//! and what the platform's API lists.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::portability::foreign::{
    extra_fields, memory, read_items, relation_memory, shown, str_field, time_field, Item,
};
use crate::portability::records::{ImportRecord, Located, Parsed, Rejection, Unmapped};

/// Fields of a mem0 record the mapping reads or deliberately leaves:
/// `hash` is the MD5 of `memory`, `score` a search's ranking. Any other
/// field (`metadata`, `actor_id`, `role`, the platform's `immutable` or
/// `expiration_date`) is listed as unmapped with its value.
const KNOWN: &[&str] =
    &["id", "memory", "hash", "user_id", "run_id", "created_at", "updated_at", "categories", "score"];

/// Reads mem0 memories: `{"results":[…]}` (`Memory.get_all()` and
/// `search()` of mem0 ≥ 1.1, with `"relations"` when the graph store is
/// on), `{"memories":[…]}`, a JSON array of records (mem0 1.0 and the
/// platform API's `get_all`), or JSON lines of records.
///
/// A record (`id`, `memory`, `user_id`/`agent_id`/`run_id`, `metadata`,
/// `categories`, `created_at`, `updated_at`, `hash`) becomes one memory:
/// content `memory`, kind `fact`, event time `updated_at` (else
/// `created_at`: when the current text became true), session `run_id`,
/// entities the `categories`, source reference `mem0:<id>`. A graph
/// relation (`source`, `relationship`, `target` or `destination`) becomes
/// the memory `"<source> <relationship> <target>"` about both.
///
/// The owner of a record is its `user_id`, else its `agent_id`. `owner`
/// is the namespace the import writes into: when the file holds records of
/// several owners, only those whose owner is `owner` are imported and the
/// others are listed as unmapped (import each user into a namespace of its
/// own); a file of one owner imports whole into any namespace. `None`
/// imports every owner's records.
///
/// Rejected (bad input): a record that is not an object or has no string
/// `memory`, a time that does not read. Unmapped: records of other owners
/// (left out), and fields no memory field holds — `metadata`, `agent_id`
/// beside a `user_id`, `actor_id`, `role`, anything else (dropped, with
/// their values). `hash` is not kept (it is the MD5 of the text). Never
/// panics (fuzzed).
pub fn parse_mem0(text: &str, owner: Option<&str>) -> Parsed {
    let (items, rejected) = read_items(text, &["results", "memories", "relations"]);
    let mut out = Parsed { rejected, ..Parsed::default() };
    let owners: BTreeSet<&str> =
        items.iter().filter(|i| i.list != Some("relations")).filter_map(|i| owner_of(i.value.as_object()?)).collect();
    let only = owner.filter(|_| owners.len() > 1);
    for item in &items {
        let Some(obj) = item.value.as_object() else {
            out.rejected.push(Rejection {
                line: item.line,
                at: item.at.clone(),
                reason: format!("a mem0 record is a JSON object, got {}", shown(&item.value)),
            });
            continue;
        };
        if item.list == Some("relations") || obj.contains_key("relationship") {
            relation(&mut out, item, obj);
        } else {
            record(&mut out, item, obj, only);
        }
    }
    out
}

/// The owner of a mem0 record: its `user_id`, else its `agent_id`.
fn owner_of(obj: &Map<String, Value>) -> Option<&str> {
    str_field(obj, "user_id").or_else(|| str_field(obj, "agent_id")).filter(|s| !s.is_empty())
}

fn id_of(obj: &Map<String, Value>) -> Option<String> {
    match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn record(out: &mut Parsed, item: &Item, obj: &Map<String, Value>, only: Option<&str>) {
    let id = id_of(obj);
    let at = match (&id, item.at.is_empty()) {
        (Some(id), true) => format!("id {id}"),
        (Some(id), false) => format!("{} (id {id})", item.at),
        (None, _) => item.at.clone(),
    };
    let reject = |out: &mut Parsed, reason: String| {
        out.rejected.push(Rejection { line: item.line, at: at.clone(), reason });
    };
    let Some(content) = str_field(obj, "memory") else {
        return reject(out, "a mem0 record needs a string \"memory\"".into());
    };
    let owner = owner_of(obj);
    if let (Some(only), Some(owner)) = (only, owner) {
        if crate::canonical_id(owner) != crate::canonical_id(only) {
            let field = if str_field(obj, "user_id").is_some() { "user_id" } else { "agent_id" };
            out.unmapped.push(Unmapped {
                line: item.line,
                at,
                skipped: true,
                reason: format!(
                    "a record of {field} {owner:?}; the file holds several users and this import is for {only:?} \
                     (import it into a namespace of its own)"
                ),
            });
            return;
        }
    }
    let time = match (time_field(obj, "updated_at"), time_field(obj, "created_at")) {
        (Ok(Some(t)), Ok(_)) | (Ok(None), Ok(Some(t))) => Some(t),
        (Ok(None), Ok(None)) => None,
        (Err(e), _) | (_, Err(e)) => return reject(out, e),
    };
    let categories: Option<Vec<String>> = match obj.get("categories") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => match a.iter().map(|c| c.as_str().map(str::to_string)).collect::<Option<Vec<_>>>() {
            Some(c) => Some(c).filter(|c| !c.is_empty()),
            None => return reject(out, "field `categories`: expected a list of strings".into()),
        },
        Some(v) => return reject(out, format!("field `categories`: expected a list of strings, got {}", shown(v))),
    };
    let session = match obj.get("run_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => return reject(out, format!("field `run_id`: expected a string, got {}", shown(v))),
    };
    // The owner's field is mapped; an agent beside a user has no home.
    let mut known = KNOWN.to_vec();
    if str_field(obj, "user_id").is_none() {
        known.push("agent_id");
    }
    out.unmapped.extend(extra_fields(obj, &known, item.line, &at));
    let mut m = memory(content.to_string());
    m.time = time;
    m.session = session;
    m.entities = categories;
    m.source_ref = id.map(|id| format!("mem0:{id}"));
    out.records.push(Located { line: item.line, at, record: ImportRecord::Memory(m), namespace: None });
}

fn relation(out: &mut Parsed, item: &Item, obj: &Map<String, Value>) {
    let target = str_field(obj, "target").or_else(|| str_field(obj, "destination"));
    let (Some(source), Some(rel), Some(target)) = (str_field(obj, "source"), str_field(obj, "relationship"), target)
    else {
        out.rejected.push(Rejection {
            line: item.line,
            at: item.at.clone(),
            reason: "a mem0 graph relation needs string \"source\", \"relationship\" and \"target\"".into(),
        });
        return;
    };
    let said = format!("{source} {rel} {target}");
    let at = if item.at.is_empty() { format!("relation {said:?}") } else { format!("{} (relation {said:?})", item.at) };
    out.unmapped.extend(extra_fields(obj, &["source", "relationship", "target", "destination"], item.line, &at));
    let m = relation_memory(source, rel, target);
    out.records.push(Located { line: item.line, at, record: ImportRecord::Memory(m), namespace: None });
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_USERS: &str = r#"{"results":[
        {"id":"a1","memory":"Likes green tea","hash":"h","metadata":{"source":"chat"},"categories":["food"],
         "created_at":"2024-07-20T01:19:45.123456-07:00","updated_at":null,"user_id":"alice"},
        {"id":"b1","memory":"住在上海","user_id":"bob","created_at":"2024-07-21T10:00:00+00:00"},
        {"id":"a2","memory":"Works at Acme","user_id":"alice","run_id":"s1","agent_id":"helper"},
        {"id":"a3","user_id":"alice"}
    ],"relations":[{"source":"alice","relationship":"works_at","target":"acme"}]}"#;

    #[test]
    fn one_owner_of_several_and_what_does_not_map() {
        let p = parse_mem0(TWO_USERS, Some("alice"));
        assert_eq!(p.records.len(), 3, "{:?}", p.unmapped);
        let ImportRecord::Memory(m) = &p.records[0].record else { panic!("not a memory") };
        assert_eq!(m.source_ref.as_deref(), Some("mem0:a1"));
        assert_eq!(m.entities.as_deref(), Some(&["food".to_string()][..]));
        assert_eq!(m.time.map(|t| t.to_rfc3339()).as_deref(), Some("2024-07-20T08:19:45.123456+00:00"));
        let ImportRecord::Memory(m) = &p.records[1].record else { panic!("not a memory") };
        assert_eq!(m.session.as_deref(), Some("s1"));
        assert_eq!(p.rejected.len(), 1);
        assert_eq!(p.rejected[0].at, "results[3] (id a3)");
        let reasons: Vec<&str> = p.unmapped.iter().map(|u| u.reason.as_str()).collect();
        assert_eq!(p.unmapped.len(), 3, "{reasons:?}");
        assert!(reasons[0].contains("`metadata` {\"source\":\"chat\"}"), "{reasons:?}");
        assert!(p.unmapped[1].skipped && reasons[1].contains("\"bob\""), "{reasons:?}");
        assert!(reasons[2].contains("`agent_id` \"helper\""), "{reasons:?}");
        // No owner given: everyone's records.
        assert_eq!(parse_mem0(TWO_USERS, None).records.len(), 4);
        // One owner in the file: any namespace.
        let one = r#"[{"id":"x","memory":"Likes jazz","user_id":"carol"}]"#;
        assert_eq!(parse_mem0(one, Some("elsewhere")).records.len(), 1);
    }
}
