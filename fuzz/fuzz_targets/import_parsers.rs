//! The import readers on arbitrary text: never panic, account for every
//! record (read = accepted + rejected, lines within the input), and every
//! accepted JSON-lines record writes back to a line that reads the same.
//!
//! Input: `[format selector][UTF-8 text]`; the selector's low bits choose
//! JSON lines, LoCoMo or LongMemEval.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemon::portability::{parse_jsonl, ImportFormat, ImportRecord, Parsed};

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
    assert_eq!(p.read(), (p.records.len() + p.rejected.len()) as u64);
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
    let format = match selector % 3 {
        0 => ImportFormat::Jsonl,
        1 => ImportFormat::Locomo,
        _ => ImportFormat::Longmemeval,
    };
    let parsed = format.parse(&text);
    accounted(&parsed, &text);
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
