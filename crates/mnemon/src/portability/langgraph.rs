//! Reader for LangGraph store dumps: items of a `BaseStore`, mapped as
//! mnemon's `MnemonStore` (python/mnemon/langgraph.py) maps them, so that
//! a store on the same prefix reads them back.

use std::collections::HashSet;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::portability::foreign::{extra_fields, memory, read_items, shown, time_field, Item};
use crate::portability::records::{ImportRecord, Located, Parsed, Rejection};
use crate::types::{Namespace, Tier, MAX_NAMESPACE_LEN};

/// Longest escaped item key kept readable in a slot key (`MnemonStore`'s
/// `MAX_KEY_IDENT_CHARS`); a longer one is `item.@@<SHA-256 of the key>`.
const MAX_KEY_IDENT_CHARS: usize = 100;
/// Longest item key, in bytes of its source reference form.
const MAX_KEY_BYTES: usize = 256;
/// Longest `MnemonStore` prefix, in characters.
const MAX_PREFIX_CHARS: usize = 32;

/// True for a valid `MnemonStore` prefix: 1–32 characters of `[A-Za-z0-9_-]`.
pub fn is_store_prefix(prefix: &str) -> bool {
    (1..=MAX_PREFIX_CHARS).contains(&prefix.len())
        && prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Reads a LangGraph store dump: the items of a `BaseStore` as their
/// `Item.dict()` (`namespace` a list of labels, `key`, `value` a JSON
/// object, `created_at` and `updated_at`), as a JSON array, JSON lines, or
/// `{"items":[…]}`. Rows of LangGraph's database stores read too: the
/// tuple as `prefix` (or `namespace`), one string of labels joined by `.`,
/// and a value given as JSON text (SQLite) is read as the object it holds.
///
/// `prefix` is the `MnemonStore` prefix (`"lg"` by default there): each
/// item becomes one memory of the namespace `MnemonStore(prefix=prefix)`
/// keeps its namespace tuple in (`lg:users.alice`), exactly as a `put`
/// writes it: content the value as JSON, tier `permanent`, kind `fact`,
/// slot key and session `item.<escaped key>`, source reference the key,
/// event time `updated_at` (else `created_at`), so `get`, `search` and
/// `history` of that store return it. Each namespace tuple is also
/// recorded once in the store's catalogue namespace `<prefix>::catalog`,
/// where `list_namespaces` and `search` find it. Items of one key are
/// versions, in input order. `created_at` cannot be kept: a store reports
/// when the item's first version was written, which is the import.
///
/// Rejected (bad input): an item that is not an object, a missing or bad
/// `namespace` (a list of non-empty labels without `.`), a key that is not
/// a string or is over 256 bytes, a value that is not a JSON object, a time
/// that does not read. Unmapped: other fields (dropped; `score` of a search
/// result is ignored). Never panics (fuzzed).
///
/// The caller checks `prefix` with [`is_store_prefix`]; an invalid one
/// gives namespaces no store can hold (every item is then rejected).
pub fn parse_langgraph(text: &str, prefix: &str) -> Parsed {
    let (items, rejected) = read_items(text, &["items"]);
    let mut out = Parsed { rejected, ..Parsed::default() };
    let mut catalogued: HashSet<String> = HashSet::new();
    for item in &items {
        match read_item(item, prefix) {
            Err(reason) => out.rejected.push(Rejection { line: item.line, at: at_of(item), reason }),
            Ok((labels, ns, located)) => {
                if let Some(obj) = item.value.as_object() {
                    out.unmapped.extend(extra_fields(
                        obj,
                        &["namespace", "prefix", "key", "value", "created_at", "updated_at", "score"],
                        item.line,
                        &located.at,
                    ));
                }
                if catalogued.insert(ns.as_str().to_string()) {
                    if let Some(entry) = catalogue_entry(prefix, &labels, &ns, item) {
                        out.records.push(entry);
                    }
                }
                out.records.push(located);
            }
        }
    }
    out
}

fn at_of(item: &Item) -> String {
    let key = item.value.get("key").and_then(Value::as_str);
    match (key, item.at.is_empty()) {
        (Some(k), true) => format!("key {k:?}"),
        (Some(k), false) => format!("{} (key {k:?})", item.at),
        (None, _) => item.at.clone(),
    }
}

/// The item's namespace tuple, its mnemon namespace and its memory.
fn read_item(item: &Item, prefix: &str) -> Result<(Vec<String>, Namespace, Located), String> {
    let obj: &Map<String, Value> =
        item.value.as_object().ok_or_else(|| format!("an item is a JSON object, got {}", shown(&item.value)))?;
    // LangGraph's database stores keep the tuple as `prefix`, labels joined by `.`.
    let labels = labels(obj.get("namespace").or_else(|| obj.get("prefix")))?;
    let key = match obj.get("key") {
        Some(Value::String(k)) => k.as_str(),
        Some(v) => return Err(format!("field `key`: expected a string, got {}", shown(v))),
        None => return Err("an item needs \"namespace\", \"key\" and \"value\"; it has no \"key\"".into()),
    };
    let key_ref = key_ref(key);
    if key_ref.len() > MAX_KEY_BYTES {
        return Err(format!("field `key`: {} bytes, at most {MAX_KEY_BYTES} allowed", key_ref.len()));
    }
    // The SQLite store keeps the value as JSON text.
    let text_value = match obj.get("value") {
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok().filter(Value::is_object),
        _ => None,
    };
    let value = match text_value.as_ref().or_else(|| obj.get("value")) {
        Some(Value::Object(v)) => v,
        Some(v) => return Err(format!("field `value`: expected a JSON object, got {}", shown(v))),
        None => return Err("an item needs \"namespace\", \"key\" and \"value\"; it has no \"value\"".into()),
    };
    let time = match time_field(obj, "updated_at")? {
        Some(t) => Some(t),
        None => time_field(obj, "created_at")?,
    };
    let ns = Namespace::new(mnemon_namespace(prefix, &labels)).map_err(|e| format!("field `namespace`: {e}"))?;
    let ident = item_ident(key);
    let mut m = memory(serde_json::to_string(value).map_err(|e| format!("field `value`: {e}"))?);
    m.kind = Some("fact".into());
    m.tier = Some(Tier::Permanent);
    m.key = Some(ident.clone());
    m.session = Some(ident);
    m.source_ref = Some(key_ref);
    m.time = time;
    let at = at_of(item);
    Ok((labels, ns.clone(), Located { line: item.line, at, record: ImportRecord::Memory(m), namespace: Some(ns) }))
}

fn labels(v: Option<&Value>) -> Result<Vec<String>, String> {
    let labels: Vec<String> = match v {
        Some(Value::Array(a)) => {
            a.iter().map(|l| l.as_str().map(str::to_string)).collect::<Option<_>>().ok_or_else(|| {
                format!("field `namespace`: expected a list of strings, got {}", shown(&Value::Array(a.clone())))
            })?
        }
        Some(Value::String(s)) => s.split('.').map(str::to_string).collect(),
        Some(v) => return Err(format!("field `namespace`: expected a list of strings, got {}", shown(v))),
        None => return Err("an item needs \"namespace\", \"key\" and \"value\"; it has no \"namespace\"".into()),
    };
    if labels.is_empty() {
        return Err("field `namespace`: an item's namespace has at least one label".into());
    }
    if let Some(bad) = labels.iter().find(|l| l.is_empty() || l.contains('.')) {
        return Err(format!("field `namespace`: label {bad:?} is empty or holds a `.`"));
    }
    Ok(labels)
}

/// `MnemonStore.escape_label`: `[A-Za-z0-9_-]` as itself, every other
/// character as `@XX` per byte of its UTF-8.
fn escape_label(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    for ch in label.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == '-' {
            out.push(ch);
        } else {
            let mut buf = [0u8; 4];
            for b in ch.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("@{b:02X}"));
            }
        }
    }
    out
}

/// A list of strings as Python's `json.dumps(list, ensure_ascii=False)`
/// writes it (`["a", "b"]`: a space after each comma), which
/// `MnemonStore` hashes and stores.
fn python_json_list(labels: &[String]) -> String {
    let parts: Vec<String> = labels.iter().map(|l| Value::String(l.clone()).to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// `MnemonStore.mnemon_namespace`.
fn mnemon_namespace(prefix: &str, labels: &[String]) -> String {
    let escaped: Vec<String> = labels.iter().map(|l| escape_label(l)).collect();
    let name = format!("{prefix}:{}", escaped.join("."));
    if name.len() <= MAX_NAMESPACE_LEN {
        return name;
    }
    format!("{prefix}:@@{}", hex::encode(Sha256::digest(python_json_list(labels).as_bytes())))
}

/// `MnemonStore._ident`: the item's slot key and session.
fn item_ident(key: &str) -> String {
    if key.is_empty() {
        return "item.@".into();
    }
    let esc = escape_label(key);
    if esc.chars().count() > MAX_KEY_IDENT_CHARS {
        return format!("item.@@{}", hex::encode(Sha256::digest(key.as_bytes())));
    }
    format!("item.{esc}")
}

/// `MnemonStore._key_ref`: the key itself when it is plain text, else as
/// a JSON string literal.
fn key_ref(key: &str) -> String {
    let control = |c: char| (c as u32) < 32 || (127..160).contains(&(c as u32));
    let plain = !key.is_empty() && key == key.trim() && !key.starts_with('"') && !key.chars().any(control);
    if plain {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

/// The catalogue memory `MnemonStore._register` writes for a namespace
/// tuple: content the tuple as JSON in the letters a–p, slot key
/// `ns.<SHA-256 of the mnemon namespace>`, tier permanent.
fn catalogue_entry(prefix: &str, labels: &[String], ns: &Namespace, item: &Item) -> Option<Located> {
    let catalogue = Namespace::new(format!("{prefix}::catalog")).ok()?;
    let letters: String = python_json_list(labels)
        .bytes()
        .flat_map(|b| [char::from(b'a' + (b >> 4)), char::from(b'a' + (b & 15))])
        .collect();
    let mut m = memory(letters);
    m.tier = Some(Tier::Permanent);
    m.key = Some(format!("ns.{}", hex::encode(Sha256::digest(ns.as_str().as_bytes()))));
    Some(Located {
        line: item.line,
        at: format!("catalogue entry of namespace {}", python_json_list(labels)),
        record: ImportRecord::Memory(m),
        namespace: Some(catalogue),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_mnemon_store_makes_them() {
        assert_eq!(mnemon_namespace("lg", &["users".into(), "alice@x.org".into()]), "lg:users.alice@40x@2Eorg");
        assert_eq!(mnemon_namespace("lg", &["用户".into()]), "lg:@E7@94@A8@E6@88@B7");
        assert_eq!(item_ident(""), "item.@");
        assert_eq!(item_ident("my key"), "item.my@20key");
        assert_eq!(key_ref(" padded"), "\" padded\"");
        assert_eq!(python_json_list(&["a".into(), "é\"".into()]), "[\"a\", \"é\\\"\"]");
        let long: Vec<String> = vec!["x".repeat(130)];
        assert!(mnemon_namespace("lg", &long).starts_with("lg:@@"));
    }

    #[test]
    fn items_and_their_catalogue() {
        let text = concat!(
            r#"{"namespace":["users","alice"],"key":"prefs","value":{"food":"寿司"},"created_at":"2024-09-01T10:00:00+00:00","updated_at":"2024-09-02T10:00:00+00:00"}"#,
            "\n",
            r#"{"namespace":["users","alice"],"key":"city","value":{"city":"Lyon"},"ttl":5}"#,
            "\n",
            r#"{"namespace":"users.bob","key":"k","value":"not an object"}"#,
            "\n",
            r#"{"prefix":"users.bob","key":"k","value":"{\"city\":\"Kyoto\"}","expires_at":null,"ttl_minutes":null}"#,
            "\n",
        );
        let p = parse_langgraph(text, "lg");
        assert_eq!(p.records.len(), 5);
        assert_eq!(p.records[4].namespace.as_ref().map(Namespace::as_str), Some("lg:users.bob"));
        assert_eq!(p.records[0].namespace.as_ref().map(Namespace::as_str), Some("lg::catalog"));
        assert_eq!(p.records[1].namespace.as_ref().map(Namespace::as_str), Some("lg:users.alice"));
        let ImportRecord::Memory(m) = &p.records[1].record else { panic!("not a memory") };
        assert_eq!((m.content.as_str(), m.key.as_deref()), (r#"{"food":"寿司"}"#, Some("item.prefs")));
        assert_eq!(p.rejected.len(), 1);
        assert_eq!(p.unmapped.len(), 1);
        assert!(p.unmapped[0].reason.contains("`ttl`"));
    }
}
