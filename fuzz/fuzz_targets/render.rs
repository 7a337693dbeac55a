//! The prompt block on arbitrary field strings: every kind of line break,
//! delimiter look-alike and invisible character in content, kind, key,
//! session and source reference. The block parses back with the grammar
//! reader of `tests/common/block.rs` into exactly the entries rendered, no
//! angle bracket or dropped invisible character survives in an entry, and
//! the block stays within its budget.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mnemon::{render_context, Engine, Hit, Kind, Namespace, NewMemory, RecallOptions};

#[path = "../../crates/mnemon/tests/common/block.rs"]
mod block;

/// A recalled hit from a real store, the template for fuzzed ones.
fn template() -> &'static Hit {
    static HIT: OnceLock<Hit> = OnceLock::new();
    HIT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = Engine::open(dir.path()).expect("open");
        let u = Namespace::new("u1").expect("namespace");
        engine.remember(&u, NewMemory::new("Likes pizza with olives")).expect("remember");
        let hit = engine.recall(&u, "pizza", &RecallOptions::default()).expect("recall").remove(0);
        engine.close().expect("close");
        hit
    })
}

fuzz_target!(|data: &[u8]| {
    // [budget: u16 LE][hits separated by 0xFE; fields of a hit by 0xFF:
    // content, kind, key, session, source reference (lossy UTF-8; an absent
    // or empty optional field is None)].
    let (budget, rest) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => return,
    };
    let hits: Vec<Hit> = rest
        .split(|&b| b == 0xFE)
        .take(8)
        .map(|h| {
            let mut f = h.split(|&b| b == 0xFF).map(|s| String::from_utf8_lossy(s).into_owned());
            let mut hit = template().clone();
            hit.memory.content = f.next().unwrap_or_default();
            hit.memory.kind = Kind::Other(f.next().unwrap_or_default());
            let mut opt = || f.next().filter(|s| !s.is_empty());
            hit.memory.key = opt();
            hit.memory.session = opt();
            hit.memory.source_ref = opt();
            hit
        })
        .collect();
    for budget in [budget, 1_000_000] {
        let r = render_context(&hits, budget);
        assert_eq!(r.included + r.skipped, hits.len());
        assert!(r.truncated <= 1);
        if r.text.is_empty() {
            assert_eq!(r.included, 0);
            continue;
        }
        assert_eq!(r.tokens, mnemon::recall::estimate_tokens(&r.text));
        assert!(r.tokens <= budget, "{} tokens over a budget of {budget}", r.tokens);
        let parsed = block::parse_block(&r.text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.len(), r.included, "{}", r.text);
        assert_eq!(parsed.iter().filter(|p| p.truncated).count(), r.truncated);
        for p in &parsed {
            for part in p.meta.iter().chain([&p.content]) {
                assert!(!part.chars().any(block::angle_like), "angle bracket in {part:?}");
                assert!(!part.chars().any(|c| block::invisible(c) && !block::kept_invisible(c)), "{part:?}");
                assert!(block::decode_entities(part).is_some(), "bare & in {part:?}");
            }
        }
    }
});
