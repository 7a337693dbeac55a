//! A word-overlap evaluation backend shared by the eval test binaries.

use std::collections::{HashMap, HashSet};

use mnemon::Error;
use mnemon_eval::{Backend, Doc};

/// Lower-cased ASCII words, plus each non-ASCII letter as its own token.
pub fn tokens(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut cur = String::new();
    for c in text.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            cur.push(c);
            continue;
        }
        if !cur.is_empty() {
            out.insert(std::mem::take(&mut cur));
        }
        if !c.is_ascii() && c.is_alphanumeric() {
            out.insert(c.to_string());
        }
    }
    if !cur.is_empty() {
        out.insert(cur);
    }
    out
}

/// Scores a doc by the number of distinct tokens it shares with the query;
/// returns docs with a positive score, best first, ties in ingest order.
#[derive(Default)]
pub struct WordOverlap {
    units: HashMap<String, Vec<(String, HashSet<String>)>>,
    /// Units ingested, in order.
    pub ingested: Vec<String>,
    /// Units finished, in order.
    pub finished: Vec<String>,
    /// Answer with an unknown id first and a repeat, which the runner must drop.
    pub junk: bool,
}

impl Backend for WordOverlap {
    fn ingest(&mut self, unit: &str, docs: &[Doc]) -> mnemon::Result<()> {
        self.ingested.push(unit.to_string());
        self.units.insert(unit.into(), docs.iter().map(|d| (d.id.clone(), tokens(&d.text))).collect());
        Ok(())
    }

    fn search(&mut self, unit: &str, query: &str, k: usize) -> mnemon::Result<Vec<String>> {
        let q = tokens(query);
        let docs = self.units.get(unit).ok_or_else(|| Error::not_found(unit))?;
        let mut scored: Vec<(usize, usize, &str)> = docs
            .iter()
            .enumerate()
            .map(|(i, (id, t))| (t.intersection(&q).count(), i, id.as_str()))
            .filter(|(s, _, _)| *s > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut out: Vec<String> = scored.into_iter().take(k).map(|(_, _, id)| id.to_string()).collect();
        if self.junk {
            // An unknown id and a repeat, both to be ignored by the runner.
            out.insert(0, "no-such-doc".into());
            if let Some(first) = out.get(1).cloned() {
                out.insert(2, first);
            }
        }
        Ok(out)
    }

    fn finish_unit(&mut self, unit: &str) -> mnemon::Result<()> {
        self.finished.push(unit.to_string());
        self.units.remove(unit);
        Ok(())
    }
}
