//! The import readers on arbitrary text: never panic, account for every
//! record (read = accepted + rejected + left out as unmapped, lines within
//! the input), and every accepted JSON-lines record writes back to a line
//! that reads the same.
//!
//! Input: `[format selector][UTF-8 text]`; the selector modulo 6 chooses
//! JSON lines, LoCoMo, LongMemEval, the MCP memory graph, mem0 or a
//! LangGraph dump (the last three read for no namespace and for one).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemon::portability::{parse_jsonl, ImportFormat, ImportRecord, Parsed};
use mnemon::Namespace;

fn finite(r: &ImportRecord) -> bool {
    match r {
        ImportRecord::Observation(_) => true,
        ImportRecord::Memory(m) => {
            m.importance.is_none_or(f32::is_finite) && m.vector.iter().flatten().all(|x| x.is_finite())
        }
    }
}

fn accounted(p: &Parsed, text: &str) {
    let lines = text.split('\n').count() as u64;
    let skipped = p.unmapped.iter().filter(|u| u.skipped).count();
    assert_eq!(p.read(), (p.records.len() + p.rejected.len() + skipped) as u64);
    for u in &p.unmapped {
        assert!(u.line <= lines, "unmapped line {} of {lines}", u.line);
        assert!(!u.reason.is_empty());
    }
    for r in &p.records {
        assert!(r.line <= lines, "record line {} of {lines}", r.line);
    }
    for r in &p.rejected {
        assert!(r.line <= lines, "rejection line {} of {lines}", r.line);
        assert!(!r.reason.is_empty());
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let format = ImportFormat::ALL[usize::from(selector) % ImportFormat::ALL.len()];
    let parsed = format.parse(&text);
    accounted(&parsed, &text);
    if matches!(format, ImportFormat::Mem0 | ImportFormat::Langgraph) {
        let ns = Namespace::new("alice").expect("a valid namespace");
        accounted(&format.parse_for(&text, &ns).expect("a valid prefix"), &text);
    }
    if format == ImportFormat::Jsonl {
        for r in parsed.records.iter().filter(|r| finite(&r.record)) {
            let line = serde_json::to_string(&r.record).expect("a record serialises");
            let again = parse_jsonl(&line);
            assert_eq!(again.rejected, vec![], "{line}");
            assert_eq!(again.records.len(), 1);
            assert_eq!(again.records[0].record, r.record, "round trip changed {line}");
        }
    }
});
