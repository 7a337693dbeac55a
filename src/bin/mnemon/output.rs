//! Printing results as text or JSON.

use mnemon::{Hit, Memory};

pub fn json<T: serde::Serialize>(v: &T) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot encode JSON: {e}"),
    }
}

pub fn memory_line(m: &Memory) -> String {
    let key = m.key.as_deref().map(|k| format!(" key={k}")).unwrap_or_default();
    let q = if m.quarantine.is_some() { " QUARANTINED" } else { "" };
    format!(
        "#{:<6} {:<10} {:<10} {:<9} imp={:.2}{key}{q}  {}",
        m.id.0,
        m.status.to_string(),
        m.kind.to_string(),
        m.tier.to_string(),
        m.importance,
        m.content
    )
}

pub fn memory_block(m: &Memory) -> String {
    let mut s = memory_line(m);
    if let Some(t) = m.event_time {
        s.push_str(&format!("\n        happened {}", t.format("%Y-%m-%d %H:%M UTC")));
    }
    s.push_str(&format!(
        "\n        written {}  first seen {}  valid to {}",
        m.valid_from.to_rfc3339(),
        m.first_seen.to_rfc3339(),
        m.valid_to.map(|t| t.to_rfc3339()).unwrap_or_else(|| "-".into())
    ));
    if let Some(p) = m.prev {
        s.push_str(&format!("  prev #{p}"));
    }
    if let Some(n) = m.next {
        s.push_str(&format!("  next #{n}"));
    }
    s
}

pub fn hit_line(h: &Hit, explain: bool) -> String {
    let mut s = format!("{:.3}  {}", h.score, memory_line(&h.memory));
    if explain {
        let e = &h.explain;
        s.push_str(&format!(
            "\n        cosine={:.3} bm25={:.2} (norm {:.2}) fused={:.3} importance={:.2} recency={:.2} entities={}",
            e.similarity, e.lexical, e.lexical_norm, e.fused, e.importance, e.recency, e.entity_matches
        ));
    }
    s
}
