//! Reader for the knowledge graph of the MCP reference memory server
//! (`@modelcontextprotocol/server-memory`, its `memory.jsonl`, formerly
//! `memory.json`).

use std::collections::HashSet;

use serde_json::Value;

use crate::portability::foreign::{extra_fields, memory, read_items, relation_memory, shown, str_field, Item};
use crate::portability::records::{ImportRecord, Located, Parsed, Rejection, Unmapped};

/// Reads the MCP memory server's knowledge graph: JSON lines, each
/// `{"type":"entity","name":…,"entityType":…,"observations":[…]}` or
/// `{"type":"relation","from":…,"to":…,"relationType":…}` (the file the
/// server writes), or one JSON object `{"entities":[…],"relations":[…]}`
/// (what its `read_graph` tool returns; its records need no `"type"`).
///
/// Every observation becomes a memory `"<name> (<entityType>): <observation>"`
/// about the entity (`entities: [name]`), kind `fact`; an entity without
/// observations becomes one memory `"<name> (<entityType>)"`. A relation
/// becomes the memory `"<from> <relationType> <to>"` about both entities.
/// The graph has no times, sessions or ids: those are left unset.
///
/// Rejected (bad input): a line that is not JSON, a record that is not an
/// object, an entity or relation without its string fields. Unmapped
/// ([`Unmapped`]): a record of another `type` (or none), a relation to an
/// entity the file does not hold (left out), fields the server does not
/// write (dropped). Never panics (fuzzed).
pub fn parse_mcp_memory(text: &str) -> Parsed {
    let (items, rejected) = read_items(text, &["entities", "relations"]);
    let mut out = Parsed { rejected, ..Parsed::default() };
    // Relations are checked against every entity of the file, before or after them.
    let names: HashSet<&str> = items
        .iter()
        .filter(|i| match i.list {
            Some(list) => list == "entities",
            None => i.value.get("type").and_then(Value::as_str) == Some("entity"),
        })
        .filter_map(|i| str_field(i.value.as_object()?, "name"))
        .collect();
    for item in &items {
        let Some(obj) = item.value.as_object() else {
            out.rejected.push(Rejection {
                line: item.line,
                at: item.at.clone(),
                reason: format!("a record is a JSON object, got {}", shown(&item.value)),
            });
            continue;
        };
        let kind = match item.list {
            Some("entities") => "entity",
            Some("relations") => "relation",
            _ => match obj.get("type") {
                Some(Value::String(t)) => t.as_str(),
                other => {
                    out.unmapped.push(Unmapped {
                        line: item.line,
                        at: item.at.clone(),
                        skipped: true,
                        reason: match other {
                            None => "a record without \"type\" (the graph holds \"entity\" and \"relation\")".into(),
                            Some(v) => format!("record type {} is not \"entity\" or \"relation\"", shown(v)),
                        },
                    });
                    continue;
                }
            },
        };
        match kind {
            "entity" => entity(&mut out, item, obj),
            "relation" => relation(&mut out, item, obj, &names),
            other => out.unmapped.push(Unmapped {
                line: item.line,
                at: item.at.clone(),
                skipped: true,
                reason: format!("record type {other:?} is not \"entity\" or \"relation\""),
            }),
        }
    }
    out
}

fn entity(out: &mut Parsed, item: &Item, obj: &serde_json::Map<String, Value>) {
    let name = str_field(obj, "name");
    let at = match name {
        Some(n) if item.at.is_empty() => format!("entity {n:?}"),
        Some(n) => format!("{} (entity {n:?})", item.at),
        None => item.at.clone(),
    };
    let observations: Option<Vec<&str>> =
        obj.get("observations").and_then(Value::as_array).and_then(|a| a.iter().map(Value::as_str).collect());
    let (Some(name), Some(kind), Some(observations)) = (name, str_field(obj, "entityType"), observations) else {
        out.rejected.push(Rejection {
            line: item.line,
            at,
            reason: "an entity needs string \"name\" and \"entityType\" and a list of strings \"observations\"".into(),
        });
        return;
    };
    out.unmapped.extend(extra_fields(obj, &["type", "name", "entityType", "observations"], item.line, &at));
    let contents: Vec<String> = if observations.is_empty() {
        vec![format!("{name} ({kind})")]
    } else {
        observations.iter().map(|o| format!("{name} ({kind}): {o}")).collect()
    };
    let many = contents.len() > 1;
    for (i, content) in contents.into_iter().enumerate() {
        let mut m = memory(content);
        m.entities = Some(vec![name.to_string()]);
        out.records.push(Located {
            line: item.line,
            at: if many { format!("{at} observation {}", i + 1) } else { at.clone() },
            record: ImportRecord::Memory(m),
            namespace: None,
        });
    }
}

fn relation(out: &mut Parsed, item: &Item, obj: &serde_json::Map<String, Value>, names: &HashSet<&str>) {
    let (Some(from), Some(to), Some(rel)) =
        (str_field(obj, "from"), str_field(obj, "to"), str_field(obj, "relationType"))
    else {
        out.rejected.push(Rejection {
            line: item.line,
            at: item.at.clone(),
            reason: "a relation needs string \"from\", \"to\" and \"relationType\"".into(),
        });
        return;
    };
    let said = format!("{from} {rel} {to}");
    let at = if item.at.is_empty() { format!("relation {said:?}") } else { format!("{} (relation {said:?})", item.at) };
    let missing: Vec<&str> = [from, to].into_iter().filter(|n| !names.contains(n)).collect();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|n| format!("{n:?}")).collect();
        out.unmapped.push(Unmapped {
            line: item.line,
            at,
            skipped: true,
            reason: format!("a relation to an entity the file does not hold: {}", list.join(" and ")),
        });
        return;
    }
    out.unmapped.extend(extra_fields(obj, &["type", "from", "to", "relationType"], item.line, &at));
    let m = relation_memory(from, rel, to);
    out.records.push(Located { line: item.line, at, record: ImportRecord::Memory(m), namespace: None });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_relations_and_what_does_not_map() {
        let text = concat!(
            r#"{"type":"entity","name":"Alice","entityType":"person","observations":["Lives in Lyon","Likes tea"]}"#,
            "\n",
            r#"{"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}"#,
            "\n",
            r#"{"type":"entity","name":"Acme","entityType":"company","observations":[],"color":"red"}"#,
            "\n",
            r#"{"type":"relation","from":"Alice","to":"Mars","relationType":"visited"}"#,
            "\n",
            r#"{"type":"note","text":"?"}"#,
            "\n",
            r#"{"type":"entity","name":"Bob"}"#,
            "\n",
        );
        let p = parse_mcp_memory(text);
        let contents: Vec<&str> = p
            .records
            .iter()
            .map(|r| match &r.record {
                ImportRecord::Memory(m) => m.content.as_str(),
                ImportRecord::Observation(o) => o.text.as_str(),
            })
            .collect();
        assert_eq!(
            contents,
            ["Alice (person): Lives in Lyon", "Alice (person): Likes tea", "Alice works_at Acme", "Acme (company)"]
        );
        assert_eq!(p.rejected.len(), 1);
        assert_eq!(p.rejected[0].line, 6);
        let unmapped: Vec<(u64, bool)> = p.unmapped.iter().map(|u| (u.line, u.skipped)).collect();
        assert_eq!(unmapped, [(3, false), (4, true), (5, true)]);
        assert!(p.unmapped[1].reason.contains("\"Mars\""), "{:?}", p.unmapped[1]);
        assert_eq!(p.read(), 7);
        // The read_graph shape.
        let p = parse_mcp_memory(
            r#"{"entities":[{"name":"李雷","entityType":"人","observations":["住在北京"]}],
                "relations":[{"from":"李雷","to":"韩梅梅","relationType":"认识"}]}"#,
        );
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.unmapped.len(), 1);
        assert_eq!(p.records[0].at, "entities[0] (entity \"李雷\")");
    }
}
