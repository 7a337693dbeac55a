//! Printing responses: `--json` prints the surface's JSON as it is; the
//! human rendering is one line per memory or hit.

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use mnemon::{Hit, Memory};
use mnemon_api::Response;

use crate::{Cli, Cmd};

/// Exit status when a scan finds erased content on disk.
pub(crate) const FOUND_ON_DISK: u8 = 3;
/// Exit status of `check` when the projections differ from a fresh replay.
const CHECK_MISMATCH: u8 = 4;

pub fn json<T: serde::Serialize + ?Sized>(v: &T) {
    match serde_json::to_string_pretty(v) {
        // A closed pipe (`| head`) is not an error of the command.
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot encode JSON: {e}"),
    }
}

/// Prints `resp` for command `cli.command` and returns the exit status.
pub fn print(cli: &Cli, resp: &Response) -> ExitCode {
    let code = match resp {
        Response::Compact(r) | Response::VerifyErasure(r) if !r.verified => ExitCode::from(FOUND_ON_DISK),
        Response::VerifyShred(r) if !r.verified => ExitCode::from(FOUND_ON_DISK),
        Response::Check(r) if !r.consistent => ExitCode::from(CHECK_MISMATCH),
        _ => ExitCode::SUCCESS,
    };
    if cli.json {
        json(resp);
    } else {
        human(cli, resp);
    }
    code
}

/// The first line of an `as-of` listing: which time line it shows.
fn view_header(seq: mnemon::Seq, valid_time: Option<DateTime<Utc>>) {
    match valid_time {
        Some(t) => println!("true at {} (valid time, as known at seq {seq}):", t.to_rfc3339()),
        None => println!("as of seq {seq}:"),
    }
}

fn next_page(cursor: Option<&String>) {
    if let Some(c) = cursor {
        eprintln!("note: more on the next page: --cursor {c}");
    }
}

fn human(cli: &Cli, resp: &Response) {
    match resp {
        Response::Remember(r) | Response::Supersede(r) => {
            println!("{}", r.id);
            let note = match &r.action {
                mnemon::RememberAction::Created => None,
                mnemon::RememberAction::Duplicate => Some("identical content was already remembered".to_string()),
                mnemon::RememberAction::NearDuplicate { old, similarity } => {
                    Some(format!("restates memory {old} (cosine {similarity:.3}); written as its new version"))
                }
                mnemon::RememberAction::Superseded { old } => Some(format!("supersedes memory {old}")),
                other => Some(format!("{other:?}")),
            };
            if let Some(n) = note {
                eprintln!("note: {n}");
            }
            redaction_note(&r.redactions);
            if let Some(q) = &r.quarantined {
                eprintln!("note: quarantined: {q}");
            }
        }
        Response::Observe(o) => {
            println!("{}", o.observation_id);
            redaction_note(&o.redactions);
        }
        Response::Get(m) => match &cli.command {
            Cmd::AsOf(_) => println!("{}", memory_line(m)),
            _ => println!("{}", memory_block(m)),
        },
        Response::History(h) => {
            if let Cmd::AsOf(_) = &cli.command {
                view_header(h.seq, h.valid_time);
                for m in &h.versions {
                    println!("{}", memory_line(m));
                }
            } else {
                for m in &h.versions {
                    println!("{}", memory_block(m));
                }
            }
            next_page(h.next_cursor.as_ref());
        }
        Response::List(l) => {
            if let Cmd::AsOf(_) = &cli.command {
                view_header(l.seq, l.valid_time);
            }
            for m in &l.memories {
                println!("{}", memory_line(m));
            }
            next_page(l.next_cursor.as_ref());
        }
        Response::Log(l) => {
            for ev in &l.events {
                println!("{}", serde_json::to_string(ev).unwrap_or_default());
            }
            next_page(l.next_cursor.as_ref());
        }
        Response::Recall(r) => {
            let explain = matches!(&cli.command, Cmd::Recall(a) if a.explain);
            for h in &r.hits {
                println!("{}", recall_line(h, explain));
            }
            if r.omitted > 0 {
                eprintln!("note: {} more hits left out by the response budget", r.omitted);
            }
            if r.abstained {
                eprintln!("{}", abstention_note(r.abstention.as_ref(), &r.unknown_names, "returns them"));
            }
            time_note(r.query_time.as_ref());
        }
        Response::Context(c) => {
            println!("{}", c.text);
            time_note(c.query_time.as_ref());
            if c.abstained {
                eprintln!("{}", abstention_note(c.abstention.as_ref(), &c.unknown_names, "fills the block"));
            }
            if let Some(note) = budget_note(c) {
                eprintln!("{note}");
            }
            if let Some(f) = &c.floors {
                eprintln!(
                    "abstention floors: cosine {:.3}, {:.3} for a query naming the unknown",
                    f.below, f.unknown_name_below
                );
            }
            for e in &c.entries {
                let what = match (e.memory, e.observation) {
                    (Some(m), _) => format!("memory #{}", m.0),
                    (None, Some(o)) => format!("turn #{}", o.0),
                    (None, None) => String::new(),
                };
                let fate = match e.fate {
                    mnemon::recall::EntryFate::Skipped => "skipped (no room left in the budget)".to_string(),
                    other => wire_name(&other),
                };
                eprintln!("{:<9} {what}: {fate}", wire_name(&e.part));
            }
        }
        Response::Forget(f) => {
            let (search, ns) = match &cli.command {
                Cmd::Forget(a) => (a.is_search(), a.namespace()),
                _ => (false, "NAMESPACE"),
            };
            forget(f, search, ns)
        }
        Response::ForgetUser(r) => forget_user(r),
        Response::ExtractionPrompt(p) => print!("{}", p.prompt),
        Response::ApplyExtraction(r) => extraction_report(r),
        Response::EndSession(r) => session_end(r),
        Response::Consolidate(r) => {
            for c in r {
                let ids: Vec<String> = c.members.iter().map(|m| format!("#{}", m.0)).collect();
                match c.merged {
                    Some(m) => println!("merged {} -> #{}  {}", ids.join(", "), m.0, shown(&c.text)),
                    None => println!("would merge {}  {}", ids.join(", "), shown(&c.text)),
                }
            }
            if r.is_empty() {
                println!("no restatements to merge");
            }
        }
        Response::Maintain(r) => maintenance_report(r),
        Response::Compact(r) | Response::VerifyErasure(r) => println!("{r}"),
        Response::VerifyShred(r) => shred_report(r),
        Response::Stats(s) => {
            let e = &s.events;
            println!(
                "log:        {} (observed {}, extracted {}, superseded {}, accessed {}, forgotten {}, tombstones {})",
                count(s.last_seq, "event", "events"),
                e.observed,
                e.extracted,
                e.superseded,
                e.accessed,
                e.forgotten,
                e.tombstones
            );
            println!(
                "memories:   {} active, {} superseded, {} archived ({} quarantined among them, left out of recall), {}, {}",
                s.active_memories,
                s.superseded_memories,
                s.archived_memories,
                s.quarantined_memories,
                count(s.observations, "observation", "observations"),
                count(s.namespaces, "namespace", "namespaces")
            );
            println!(
                "indexes:    {} ({} on HNSW), ~{} bytes in memory",
                count(s.vectors, "vector", "vectors"),
                count(s.hnsw_namespaces, "namespace", "namespaces"),
                s.index_bytes
            );
            println!("embedder:   {} ({} dimensions, {})", s.model_id, s.dim, mnemon::embed::model_kind(&s.model_id));
            if s.embed_backlog > 0 || s.embed_failed > 0 {
                println!(
                    "embedding:  {} waiting for a vector (found by their words until then), {} failed in this process",
                    count(s.embed_backlog as u64, "memory", "memories"),
                    s.embed_failed
                );
            }
            if s.rerank_failed > 0 {
                println!(
                    "reranker:   {} failed in this process (kept recall's order); last: {}",
                    count(s.rerank_failed as u64, "call", "calls"),
                    s.last_rerank_error.as_deref().unwrap_or("?")
                );
            }
            if s.encrypted {
                println!("encryption: on, {} shredded", count(s.shredded_namespaces as u64, "namespace", "namespaces"));
            } else {
                println!("encryption: off");
            }
            println!(
                "disk:       {} bytes, generation {}",
                s.disk_bytes.map(|b| b.to_string()).unwrap_or_else(|| "?".into()),
                s.generation
            );
            println!(
                "memory:     {} resident; log cache up to {} bytes; disk reserve {} bytes",
                s.rss_bytes.map(|b| format!("{b} bytes")).unwrap_or_else(|| "?".into()),
                s.log_cache_bytes,
                s.reserve_bytes
            );
            if let Some(p) = &s.poisoned {
                println!("POISONED:   {p}");
            }
            if let Some(r) = &s.read_only {
                println!("READ-ONLY:  {r}");
            }
            println!("(all figures: --json)");
        }
        Response::Namespaces(n) => {
            for s in &n.namespaces {
                println!(
                    "{:<32} {} active, {} superseded, {} archived, {} quarantined (counted apart, shown by list --include-quarantined), {}; forgotten {}, {}",
                    s.namespace.as_str(),
                    s.active,
                    s.superseded,
                    s.archived,
                    s.quarantined,
                    count(s.observations, "observation", "observations"),
                    count(s.forgotten_memories, "memory", "memories"),
                    count(s.forgotten_observations, "observation", "observations")
                );
                if s.key_shredded {
                    println!("{:<32} data key destroyed: what it sealed is unreadable", "");
                }
            }
            next_page(n.next_cursor.as_ref());
        }
        Response::Receipts(r) => {
            if r.receipts.is_empty() && r.next_cursor.is_none() {
                println!("no compaction receipts: this store was never compacted");
            }
            for c in &r.receipts {
                println!("{c}");
            }
            next_page(r.next_cursor.as_ref());
        }
        Response::Timeline(t) => timeline(t),
        Response::Check(r) => check_report(r),
        Response::Backup(_) | Response::Export(_) => copy_summary(resp),
        _ => json(resp),
    }
}

/// Stored text for a terminal line: control characters (line breaks, tabs,
/// escape sequences), the Unicode line and paragraph separators and the
/// bidi controls written as Rust escapes (`\n`, `\u{1b}`, `\u{202e}`), and
/// a backslash doubled (`\\`, so a stored `\n` cannot pass for an escaped
/// line break), so a stored text can neither add a line to the listing nor
/// drive the terminal. `--json` gives the text as stored.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| {
        c.is_control()
            || c == '\\'
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
            )
    };
    if !s.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub fn memory_line(m: &Memory) -> String {
    let key = m.key.as_deref().map(|k| format!(" key={}", shown(k))).unwrap_or_default();
    let q = if m.quarantine.is_some() { " QUARANTINED" } else { "" };
    format!(
        "#{:<6} {:<10} {:<10} {:<9} imp={:.2}{key}{q}  {}  {}",
        m.id.0,
        m.status.to_string(),
        m.kind.to_string(),
        m.tier.to_string(),
        m.importance,
        time_span(m),
        shown(&m.content)
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
        s.push_str(&score_parts(&h.explain));
    }
    s
}

/// A hit of the `recall` operation: its score and memory line (the id and
/// text alone when the response holds no memory); with `explain`, why it
/// ranked and the parts of its score on the lines below.
pub fn recall_line(h: &mnemon_api::Hit, explain: bool) -> String {
    let mut s = match &h.memory {
        Some(m) => format!("{:.3}  {}", h.score, memory_line(m)),
        None => format!("{:.3}  #{:<6} {}", h.score, h.id.0, shown(&h.content)),
    };
    if explain {
        s.push_str(&format!("\n        why: {}", h.why));
        if let Some(e) = &h.explain {
            s.push_str(&score_parts(e));
        }
    }
    s
}

/// The parts of a score, on a line of their own.
fn score_parts(e: &mnemon::recall::Explanation) -> String {
    // The cross-script offset is part of what fusion used; show it beside
    // the cosine it was added to.
    let offset =
        if e.script_offset == 0.0 { String::new() } else { format!(" ({:+.3} cross-script)", e.script_offset) };
    format!(
        "\n        cosine={:.3}{offset} bm25={:.2} (norm {:.2}) fused={:.3} importance={:.2} recency={:.2} entities={} time={:.2}",
        e.similarity, e.lexical, e.lexical_norm, e.fused, e.importance, e.recency, e.entity_matches, e.time
    )
}

/// `n` and the noun in the number `n` calls for: "1 memory", "2 memories".
pub(crate) fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    let noun = if n == N::from(1) { one } else { many };
    format!("{n} {noun}")
}

/// `apply-extraction` in text mode: one line per item, then the counts.
fn extraction_report(r: &mnemon::ExtractionReport) {
    for i in &r.items {
        let section = match i.section {
            mnemon::extract::Section::NewMemories => "new_memories",
            mnemon::extract::Section::UpdateExisting => "update_existing",
            mnemon::extract::Section::Forget => "forget",
        };
        match &i.status {
            mnemon::extract::ItemStatus::Applied { id, action } => {
                println!("{section}[{}]: {action} #{}", i.index, id.0)
            }
            mnemon::extract::ItemStatus::Rejected { reason } => {
                println!("{section}[{}]: rejected: {}", i.index, shown(reason))
            }
        }
    }
    println!("applied {}, rejected {}", r.applied(), r.rejected());
}

/// `end-session` in text mode: what was archived, promoted, refused.
fn session_end(r: &mnemon::lifecycle::SessionEnd) {
    let archived: Vec<String> = r.archived.iter().map(|id| format!("#{}", id.0)).collect();
    println!("archived {}: {}", r.archived.len(), archived.join(" "));
    for (old, new) in &r.promoted {
        println!("promoted #{} to long-term as #{}", old.0, new.0);
    }
    for (id, why) in &r.rejected {
        println!("not promoted #{}: {}", id.0, shown(why));
    }
}

/// `maintain` in text mode: per namespace, what was archived and why, and
/// what merged; one line for a namespace where nothing changed.
fn maintenance_report(all: &[mnemon_api::NamespaceMaintenance]) {
    let ids = |v: &[mnemon::MemoryId]| v.iter().map(|id| format!("#{}", id.0)).collect::<Vec<_>>().join(" ");
    for m in all {
        let (ns, r) = (&m.namespace, &m.report);
        for (what, v) in [
            ("archived, decayed", &r.decayed),
            ("archived, session idle", &r.expired),
            ("archived, over capacity", &r.capacity),
        ] {
            if !v.is_empty() {
                println!("{ns}: {what} ({}): {}", v.len(), ids(v));
            }
        }
        for c in &r.consolidated {
            let merged = c.merged.map(|id| format!("#{}", id.0)).unwrap_or_else(|| "?".into());
            println!("{ns}: merged {} -> {merged}  {}", ids(&c.members), shown(&c.text));
        }
        if r.is_empty() {
            println!("{ns}: nothing to do");
        }
    }
    if all.is_empty() {
        println!("no namespaces");
    }
}

/// `check` in text mode, with the warning of a restore whose digest differed.
fn check_report(r: &mnemon::CheckReport) {
    println!(
        "records {} ({} bytes), last seq {}, gap-free\nnamespaces {}, memories {}, observations {}\nvectors cached {}, computed {}\ndigest        {}\nreplay digest {}\n{}",
        r.records,
        r.record_bytes,
        r.last_seq,
        r.namespaces,
        r.memories,
        r.observations,
        r.vectors_cached,
        r.vectors_embedded,
        r.digest,
        r.replay_digest,
        if r.consistent { "ok: projections equal a fresh replay" } else { "MISMATCH: projections differ from a fresh replay" }
    );
    if let Some(c) = &r.copy {
        println!("copy: {c}");
    }
    if let Some(m) = &r.restore_mismatch {
        println!("WARNING: {}", shown(m));
    }
}

/// The summary lines of `backup` and `export` (text mode).
fn copy_summary(resp: &Response) {
    let (what, events, tombstones, vectors, bytes, place, ms, digest) = match resp {
        Response::Backup(b) => (
            "backed up",
            b.last_seq,
            b.tombstones,
            b.vectors,
            b.bytes,
            format!("into {}", b.dir.display()),
            b.elapsed_ms,
            &b.digest,
        ),
        Response::Export(x) => (
            "exported",
            x.events,
            x.tombstones,
            x.vectors,
            x.bytes,
            format!("to {}", x.path.display()),
            x.elapsed_ms,
            &x.header.digest,
        ),
        _ => return,
    };
    println!(
        "{what} {} ({}, {}, {}) {place} in {ms} ms",
        count(events, "event", "events"),
        count(tombstones, "tombstone", "tombstones"),
        count(vectors, "vector", "vectors"),
        count(bytes, "byte", "bytes")
    );
    println!("digest {digest}");
}

/// A note when the token budget left every entry of a block out (the block
/// is then empty or only its frame), so a small `--budget-tokens` is not mistaken
/// for an empty store.
fn budget_note(c: &mnemon::ContextBlock) -> Option<String> {
    // A memory both recalled and in the profile is one entry left out.
    let left_out = (c.skipped + c.profile_skipped + c.recent_skipped).saturating_sub(c.skipped_in_both);
    (c.included + c.profile + c.recent == 0 && left_out > 0).then(|| {
        let entries = if left_out == 1 { "entry" } else { "entries" };
        let both = match c.skipped_in_both {
            0 => String::new(),
            n => format!(", {n} of them both relevant and profile"),
        };
        format!(
            "note: the budget of the block holds none of its {left_out} {entries} ({} relevant, {} profile, {} \
             recent left out{both}); raise --budget-tokens",
            c.skipped, c.profile_skipped, c.recent_skipped
        )
    })
}

/// Says how the query's time phrases were read (`recall`, `context`), on
/// stderr: each phrase and its days, as dates when the reference time was
/// in UTC, else as the UTC instants the span runs from and until.
fn time_note(t: Option<&mnemon::recall::QueryTime>) {
    let Some(t) = t else {
        return;
    };
    let utc_days = |d: chrono::DateTime<chrono::Utc>| d.format("%H:%M:%S").to_string() == "00:00:00";
    let spans: Vec<String> = t
        .spans
        .iter()
        .map(|s| {
            if utc_days(s.from) && utc_days(s.to) {
                let last = s.to - chrono::Duration::days(1);
                format!("{:?} read as {} to {}", s.phrase, s.from.format("%Y-%m-%d"), last.format("%Y-%m-%d"))
            } else {
                format!("{:?} read as {} until {}", s.phrase, s.from.to_rfc3339(), s.to.to_rfc3339())
            }
        })
        .collect();
    eprintln!(
        "note: {}; memories from then score higher (--reference-time sets when the question is asked)",
        spans.join("; ")
    );
}

/// The stderr note of a `recall` or `context` that abstained: the best
/// cosine, the floor it missed, and the names no memory mentions.
fn abstention_note(why: Option<&mnemon::recall::Abstention>, unknown_names: &[String], anyway: &str) -> String {
    let cosine = why.map_or(String::new(), |a| {
        if a.floor >= 1.0 {
            // A relation no memory names: no cosine would do.
            return ": the question is about someone no memory names".to_string();
        }
        // Four decimals: at three, 0.7995 under a floor of 0.80 reads as
        // "0.800, under the floor 0.800".
        format!(": the closest memory has cosine {:.4}, under the floor {:.2}", a.best_similarity, a.floor)
    });
    let names = if unknown_names.is_empty() {
        String::new()
    } else {
        format!("; no memory mentions {}", unknown_names.join(", "))
    };
    format!("note: nothing stored is relevant enough{cosine}{names}; --abstain-below -1 {anyway} anyway")
}

/// The note on stderr naming the personal data a write replaced (kinds and
/// counts, never values); nothing when none was.
fn redaction_note(redactions: &std::collections::BTreeMap<String, usize>) {
    if !redactions.is_empty() {
        eprintln!("note: redacted {redactions:?}");
    }
}

/// Prints a timeline: a header, then one line per bucket; a namespace
/// with no event in the range says so in one line.
fn timeline(t: &mnemon::Timeline) {
    if t.buckets.is_empty() {
        println!("{}: no events", t.namespace.as_str());
        return;
    }
    println!(
        "{}: {} from {} to {}",
        t.namespace.as_str(),
        count(t.events, "event", "events"),
        t.from.to_rfc3339(),
        t.to.to_rfc3339()
    );
    for b in &t.buckets {
        println!(
            "{}  observed {:>4}  extracted {:>4}  superseded {:>4}  accessed {:>4}  forgotten {:>4}  archived {:>4}",
            t.label(b.start),
            b.observed,
            b.extracted,
            b.superseded,
            b.accessed,
            b.forgotten,
            b.archived
        );
    }
}

/// Prints a forget's counts, its dry-run preview and notes (`search`: the
/// target was `--matching`).
fn forget_user(r: &mnemon_api::ForgetUserResponse) {
    for n in &r.namespaces {
        let shredded = if n.key_shredded { "; data key destroyed" } else { "" };
        println!(
            "{}: forgot {} and {}{shredded}",
            n.namespace,
            count(n.memories, "memory", "memories"),
            count(n.observations, "observation", "observations")
        );
    }
    println!(
        "forgot {} and {} in {}",
        count(r.memories, "memory", "memories"),
        count(r.observations, "observation", "observations"),
        count(r.namespaces.len(), "namespace", "namespaces")
    );
    if let Some(first) = r.namespaces.iter().find(|n| n.key_shredded) {
        println!(
            "each namespace's records are unreadable in the store, its backups and its exports (verify: mnemon \
             verify-erasure --shredded {}, and so for each)",
            first.namespace
        );
    }
}

fn forget(f: &mnemon_api::ForgetResponse, search: bool, ns: &str) {
    let o = &f.outcome;
    let verb = if f.dry_run { "would forget" } else { "forgot" };
    println!(
        "{verb} {} ({} derived from forgotten observations) and {}",
        count(o.memories, "memory", "memories"),
        o.derived_memories,
        count(o.observations, "observation", "observations")
    );
    if o.key_shredded && f.dry_run {
        println!(
            "the forget would destroy the namespace's data key: its records would be unreadable in the store, its \
             backups and its exports, for good"
        );
    } else if o.key_shredded {
        println!(
            "the namespace's data key was destroyed: its records are unreadable in the store, its backups and its \
             exports (verify: mnemon verify-erasure --shredded {ns})"
        );
    }
    if o.memories == 0 && o.observations == 0 {
        // An unknown id, session or namespace is an error before this; what
        // is left is a target forgotten before or a search that found nothing.
        if search && f.dry_run {
            eprintln!("note: nothing to forget: no memory reached the floor (try a lower --min-similarity)");
        } else if search {
            eprintln!(
                "note: nothing to forget: no memory reached the floor (try --dry-run with a lower --min-similarity)"
            );
        } else {
            eprintln!("note: nothing to forget: already forgotten");
        }
    }
    for (i, m) in f.preview.iter().enumerate() {
        match f.similarities.get(i) {
            Some(s) => println!("  sim={s:.3}  {}", memory_line(m)),
            None => println!("  {}", memory_line(m)),
        }
    }
    for o in &f.preview_observations {
        println!(
            "  observation #{:<6} session={} {:<9} recorded {}  {}",
            o.id.0,
            shown(&o.session),
            o.role.to_string(),
            o.recorded_at.format("%Y-%m-%dT%H:%M:%SZ"),
            shown(&o.text)
        );
    }
    if f.ids_omitted > 0 {
        eprintln!("note: {} ids not listed (response budget)", f.ids_omitted);
    }
    if o.quotes_cut > 0 {
        eprintln!(
            "note: the reason quoted forgotten text; {} kept in the log as [erased] (the reason outlives compaction)",
            count(o.quotes_cut, "span", "spans")
        );
    }
}

/// The name a value has in `--json` output (its serde name: `in_profile`,
/// `relevant`), so the text output uses the same words.
fn wire_name(v: &impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// `verify-erasure --shredded`: a line per place checked, then the verdict.
fn shred_report(report: &mnemon::crypt::ShredReport) {
    println!("shredded keys of {}: generations {:?}", report.namespace, report.shredded_keys);
    for c in &report.checks {
        println!(
            "{}: {} under a shredded key, {} opened, {} readable in plain, {} written since",
            c.source.display(),
            count(c.sealed, "sealed record", "sealed records"),
            c.opened,
            c.plain,
            c.later
        );
        if c.own_keyring_unread {
            println!(
                "{}: holds a keyring of its own that the store's key does not open: its keys cannot be tried; \
                 delete its KEYRING (or the copy) to erase it",
                c.source.display()
            );
        } else if c.own_keyring {
            println!(
                "{}: holds a keyring of its own (kept by its first open), which a shred does not reach; its keys were tried too",
                c.source.display()
            );
        }
    }
    println!("verified: {}", report.verified);
}
