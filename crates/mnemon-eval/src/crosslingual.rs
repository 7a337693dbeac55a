//! The bilingual cross-lingual recall set (`crosslingual.json`, shipped with
//! the crate); the data and its schema are described at [`load_crosslingual`].

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::{bad_record, json_error, Doc, Query, Split, Unit};
use mnemon::Namespace;
use mnemon::Result;

/// The set shipped with the crate, read when no path is given.
const EMBEDDED: &str = include_str!("crosslingual.json");

/// The name errors give the embedded set in place of a file path.
const EMBEDDED_NAME: &str = "crosslingual.json (embedded)";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    memories: Vec<Memory>,
    queries: Vec<RawQuery>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Memory {
    id: String,
    lang: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    id: String,
    lang: String,
    text: String,
    gold: Vec<String>,
}

/// Loads the cross-lingual recall set: from `path` when given, else the copy
/// embedded in the crate.
///
/// The embedded set: one user's personal-assistant memories, 40 in English
/// and 40 in Chinese, all different facts (some near distractors of others:
/// same topic, different fact); each English memory is asked about by one
/// Chinese question and each Chinese memory by one English question; each
/// memory is also asked about once in its own language (the questions
/// above, translated), so that a change for one direction shows its cost
/// on the others. The file is one JSON object:
///
/// ```json
/// {
///   "memories": [{"id": "en-01", "lang": "en", "text": "…"}, …],
///   "queries":  [{"id": "q-zh-01", "lang": "zh", "text": "…", "gold": ["en-01"]}, …]
/// }
/// ```
///
/// `lang` is `"en"` or `"zh"`; `gold` lists the memory ids that answer the
/// query, all in one language. No other fields are allowed.
///
/// - Docs: every memory, in file order; id = memory `id`, text = `text`,
///   session = the memory id (each memory stands alone), no time or speaker.
/// - Queries: id, text and gold as in the file; category = the direction,
///   `"zh→en"`, `"en→zh"`, `"en→en"` or `"zh→zh"` (query language → memory
///   language).
/// - Split: queries at an even 0-based position in the `queries` list are
///   dev, odd test (as MADial). Two units, `xling:dev` and `xling:test`
///   (a split without queries gives no unit), each holding all memories.
///
/// # Errors
/// [`Error::Io`](mnemon::Error::Io) when `path` cannot be read;
/// [`Error::InvalidInput`](mnemon::Error::InvalidInput) (field `"file"`, naming the file and the record)
/// when the file is not JSON of the schema, there are no memories, an id is
/// empty or repeats (memories and queries each), a text is blank, a `lang`
/// is not `en` or `zh`, a query has no gold, repeats a gold id, names a gold
/// id that is not a memory, or names gold memories of both languages.
pub fn load_crosslingual(path: Option<&Path>) -> Result<Vec<Unit>> {
    let (text, shown) = match path {
        Some(p) => (Cow::Owned(std::fs::read_to_string(p)?), p),
        None => (Cow::Borrowed(EMBEDDED), Path::new(EMBEDDED_NAME)),
    };
    let file: File = serde_json::from_str(&text).map_err(|e| json_error(shown, "top level", &e))?;
    if file.memories.is_empty() {
        return Err(bad_record(shown, "memories", "no memories"));
    }

    let mut docs = Vec::with_capacity(file.memories.len());
    let mut langs = HashMap::new();
    for (i, m) in file.memories.iter().enumerate() {
        let rec = format!("memory {i} ({:?})", m.id);
        check_lang(shown, &rec, &m.lang)?;
        if m.id.trim().is_empty() {
            return Err(bad_record(shown, &rec, "empty id"));
        }
        if m.text.trim().is_empty() {
            return Err(bad_record(shown, &rec, "empty text"));
        }
        if langs.insert(m.id.as_str(), m.lang.as_str()).is_some() {
            return Err(bad_record(shown, &rec, format!("duplicate memory id {:?}", m.id)));
        }
        docs.push(Doc { id: m.id.clone(), text: m.text.clone(), session: m.id.clone(), time: None, speaker: None });
    }

    let mut dev = Vec::new();
    let mut test = Vec::new();
    let mut query_ids = HashSet::new();
    for (i, q) in file.queries.iter().enumerate() {
        let rec = format!("query {i} ({:?})", q.id);
        check_lang(shown, &rec, &q.lang)?;
        if q.id.trim().is_empty() {
            return Err(bad_record(shown, &rec, "empty id"));
        }
        if !query_ids.insert(q.id.as_str()) {
            return Err(bad_record(shown, &rec, format!("duplicate query id {:?}", q.id)));
        }
        if q.text.trim().is_empty() {
            return Err(bad_record(shown, &rec, "empty text"));
        }
        if q.gold.is_empty() {
            return Err(bad_record(shown, &rec, "no gold memory"));
        }
        let mut target = None;
        for (j, g) in q.gold.iter().enumerate() {
            if q.gold[..j].contains(g) {
                return Err(bad_record(shown, &rec, format!("gold id {g:?} repeats")));
            }
            match (langs.get(g.as_str()), target) {
                (None, _) => return Err(bad_record(shown, &rec, format!("gold id {g:?} is not a memory"))),
                (Some(&l), Some(t)) if l != t => {
                    return Err(bad_record(shown, &rec, format!("gold memory {g:?} is in {l}, another gold in {t}")))
                }
                (Some(&l), _) => target = Some(l),
            }
        }
        let target = target.unwrap_or("en");
        let split = if i % 2 == 0 { Split::Dev } else { Split::Test };
        let query = Query {
            id: q.id.clone(),
            text: q.text.clone(),
            gold: q.gold.clone(),
            gold_sessions: Vec::new(),
            category: Some(format!("{}→{target}", q.lang)),
            split,
            time: None,
            abstention: false,
            gold_dropped: Vec::new(),
            gold_repaired: false,
        };
        match split {
            Split::Dev => dev.push(query),
            Split::Test => test.push(query),
        }
    }

    let mut units = Vec::new();
    for (split, queries) in [(Split::Dev, dev), (Split::Test, test)] {
        if queries.is_empty() {
            continue;
        }
        let name = format!("xling:{}", split.name());
        Namespace::new(name.as_str()).map_err(|e| bad_record(shown, &name, e))?;
        units.push(Unit { name, split, docs: docs.clone(), queries });
    }
    Ok(units)
}

fn check_lang(shown: &Path, rec: &str, lang: &str) -> Result<()> {
    match lang {
        "en" | "zh" => Ok(()),
        other => Err(bad_record(shown, rec, format!("lang {other:?}: expected en or zh"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_set_splits_by_parity_and_labels_directions() {
        let units = load_crosslingual(None).unwrap();
        let names: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["xling:dev", "xling:test"]);
        for u in &units {
            assert_eq!(u.docs.len(), 80);
            for dir in ["zh→en", "en→zh", "en→en", "zh→zh"] {
                assert_eq!(u.queries.iter().filter(|q| q.category.as_deref() == Some(dir)).count(), 20, "{dir}");
            }
        }
        // Position 0 is dev, position 1 test.
        assert_eq!(units[0].queries[0].id, "q-zh-01");
        assert_eq!(units[1].queries[0].id, "q-zh-02");
    }
}
