//! Printing results as text or JSON.

use chrono::{DateTime, Utc};
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
        "#{:<6} {:<10} {:<10} {:<9} imp={:.2}{key}{q}  {}  {}",
        m.id.0,
        m.status.to_string(),
        m.kind.to_string(),
        m.tier.to_string(),
        m.importance,
        time_span(m),
        m.content
    )
}

/// Both time lines in one short column: valid time by date (when the fact
/// held), recorded time to the second (when the store believed it).
fn time_span(m: &Memory) -> String {
    let day = |t: DateTime<Utc>| t.format("%Y-%m-%d").to_string();
    let sec = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    format!(
        "valid {}..{} recorded {}..{}",
        day(m.valid_from),
        m.valid_to.map(day).unwrap_or_default(),
        sec(m.recorded_from),
        m.recorded_to.map(sec).unwrap_or_default()
    )
}

pub fn memory_block(m: &Memory) -> String {
    let mut s = memory_line(m);
    let full = |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339()).unwrap_or_else(|| "-".into());
    let from = if m.event_time.is_some() { "event time" } else { "write time" };
    s.push_str(&format!(
        "\n        valid    from {} to {}  (true in the world; from the {from})",
        m.valid_from.to_rfc3339(),
        full(m.valid_to)
    ));
    s.push_str(&format!(
        "\n        recorded from {} to {}  (believed by the store)  first seen {}",
        m.recorded_from.to_rfc3339(),
        full(m.recorded_to),
        m.first_seen.to_rfc3339()
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
