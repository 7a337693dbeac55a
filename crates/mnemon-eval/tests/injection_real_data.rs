//! False positives of the injection detector on real conversation turns:
//! LoCoMo (English), LongMemEval oracle haystacks (English), MADial-Bench
//! dialogues and memories and MemoryBank-CN histories (Chinese). None of
//! these turns is an instruction aimed at an assistant's rules, so every
//! flagged turn is a false positive. Ignored by default: the files are not
//! part of the repository.
//!
//! ```text
//! MNEMON_EVAL_DATA=/path/to/shared/data \
//!   cargo test --release --test injection_real_data -- --ignored --nocapture
//! ```
//!
//! Prints one row per corpus and split (turns, flagged) and the flagged dev
//! turns; fails when more than 1 in 2,000 turns of a corpus is flagged.

use std::path::{Path, PathBuf};

use mnemon::safety::InjectionDetector;
use mnemon_eval::{load_locomo, Split};
use serde_json::Value;

fn data_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("MNEMON_EVAL_DATA")?);
    dir.join("locomo10.json").is_file().then_some(dir)
}

/// Every string leaf of a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// A JSON document, or JSON lines.
fn json_docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read corpus");
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => vec![v],
        Err(_) => {
            text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("JSON line")).collect()
        }
    }
}

struct Corpus {
    name: &'static str,
    split: &'static str,
    texts: Vec<String>,
}

fn corpora(dir: &Path) -> Vec<Corpus> {
    let mut out = Vec::new();
    let units = load_locomo(&dir.join("locomo10.json")).expect("LoCoMo");
    for (split, want) in [("dev", Split::Dev), ("test", Split::Test)] {
        let texts =
            units.iter().filter(|u| u.split == want).flat_map(|u| u.docs.iter().map(|d| d.text.clone())).collect();
        out.push(Corpus { name: "locomo turns", split, texts });
    }

    let dev_ids: Vec<String> = std::fs::read_to_string(dir.join("longmemeval_s_dev100_ids.txt"))
        .map(|s| s.lines().map(|l| l.trim().to_string()).collect())
        .unwrap_or_default();
    if let Some(Value::Array(items)) = json_docs(&dir.join("longmemeval_oracle.json")).pop() {
        let (mut dev, mut test) = (Vec::new(), Vec::new());
        for item in &items {
            let id = item["question_id"].as_str().unwrap_or_default();
            let into = if dev_ids.iter().any(|d| d == id) { &mut dev } else { &mut test };
            for session in item["haystack_sessions"].as_array().into_iter().flatten() {
                for turn in session.as_array().into_iter().flatten() {
                    if turn["role"] == "user" {
                        into.extend(turn["content"].as_str().map(String::from));
                    }
                }
            }
        }
        out.push(Corpus { name: "longmemeval user turns", split: "dev", texts: dev });
        out.push(Corpus { name: "longmemeval user turns", split: "test", texts: test });
    }

    let madial = dir.join("madial-bench-zh");
    let (mut dev, mut test) = (Vec::new(), Vec::new());
    for (i, doc) in json_docs(&madial.join("MADial-Bench-zh-dialogue.json")).iter().enumerate() {
        strings(doc, if i % 2 == 0 { &mut dev } else { &mut test });
    }
    out.push(Corpus { name: "madial dialogue turns", split: "dev", texts: dev });
    out.push(Corpus { name: "madial dialogue turns", split: "test", texts: test });
    let mut mem = Vec::new();
    json_docs(&madial.join("MADial-Bench-zh-memory.json")).iter().for_each(|d| strings(d, &mut mem));
    out.push(Corpus { name: "madial memories", split: "all", texts: mem });

    let mut bank = Vec::new();
    json_docs(&dir.join("memorybank-cn/memory_bank_cn.json")).iter().for_each(|d| strings(d, &mut bank));
    out.push(Corpus { name: "memorybank-cn histories", split: "all", texts: bank });
    for c in &mut out {
        c.texts.retain(|t| t.chars().count() >= 4);
    }
    out
}

#[test]
#[ignore = "reads the real benchmark files"]
fn injection_false_positives_on_real_turns() {
    let Some(dir) = data_dir() else {
        eprintln!("skipped: set MNEMON_EVAL_DATA to the benchmark data directory");
        return;
    };
    let det = InjectionDetector::new();
    println!("| corpus | split | turns | flagged |");
    println!("|---|---|---|---|");
    let mut worst = Vec::new();
    for c in corpora(&dir) {
        let flagged: Vec<&String> = c.texts.iter().filter(|t| det.check(t).is_some()).collect();
        println!("| {} | {} | {} | {} |", c.name, c.split, c.texts.len(), flagged.len());
        if c.split != "test" {
            for t in &flagged {
                let short: String = t.chars().take(160).collect();
                println!("    flagged: {short:?} {:?}", det.score(t).matched);
            }
        }
        if flagged.len() * 2000 > c.texts.len() {
            worst.push(format!("{} {}: {} of {}", c.name, c.split, flagged.len(), c.texts.len()));
        }
    }
    assert!(worst.is_empty(), "false-positive rate above 1 in 2,000: {worst:?}");
}
