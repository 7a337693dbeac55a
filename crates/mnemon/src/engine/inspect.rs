//! Reads for looking at a store as a whole: every namespace with its
//! figures, and a namespace's events over time (a histogram by kind).

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::{decode_record, EventBody};
use crate::types::{Namespace, Seq, Status};

/// Most buckets of a [`Timeline`] (a plot a page wide has no room for more).
pub const MAX_TIMELINE_BUCKETS: usize = 500;

/// Figures of one namespace at the last durable position, for
/// [`Engine::namespaces`]. Counts only; no content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NamespaceSummary {
    /// The namespace.
    pub namespace: Namespace,
    /// Active memory versions: current and not quarantined, exactly what
    /// `list` shows by default (the four figures `active`, `superseded`,
    /// `archived` and `quarantined` never count a version twice).
    pub active: usize,
    /// Superseded memory versions, not quarantined.
    pub superseded: usize,
    /// Archived memory versions, not quarantined.
    pub archived: usize,
    /// Memory versions quarantined as injected instructions, whatever their
    /// status (counted here only, apart from the three figures above).
    pub quarantined: usize,
    /// Observations (forgotten ones excluded).
    pub observations: usize,
    /// Memory versions forgotten (their content is gone from every read).
    pub forgotten_memories: usize,
    /// Observations forgotten.
    pub forgotten_observations: usize,
    /// True on an encrypted store when a data key of the namespace was
    /// destroyed (a forget of the whole namespace, or `forget_user`): the
    /// records that key sealed are unreadable, here and in every backup and
    /// export; writes since then are under a new key. A copy opened with
    /// the keyring of a store that shredded the namespace later says so too.
    /// Left out of JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub key_shredded: bool,
}

/// Events of one time bucket of a [`Timeline`], by kind.
///
/// An event whose payload compaction replaced by a tombstone counts under
/// the kind it was (`observed`, `extracted`, `superseded`), so a timeline
/// reads the same before and after compaction; the counts never involve
/// content.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineBucket {
    /// Start of the bucket (UTC, inclusive).
    pub start: DateTime<Utc>,
    /// End of the bucket (UTC; exclusive, except for the last bucket).
    pub end: DateTime<Utc>,
    /// Log position of the first event of the namespace in the bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seq: Option<Seq>,
    /// Log position of the last event of the namespace in the bucket: an
    /// as-of view at it shows the store at the end of the bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<Seq>,
    /// `observed` events.
    pub observed: u64,
    /// `extracted` events.
    pub extracted: u64,
    /// `superseded` events.
    pub superseded: u64,
    /// `accessed` events.
    pub accessed: u64,
    /// `forgotten` events.
    pub forgotten: u64,
    /// `archived` events.
    pub archived: u64,
}

impl TimelineBucket {
    /// Events in the bucket, all kinds.
    pub fn total(&self) -> u64 {
        self.observed + self.extracted + self.superseded + self.accessed + self.forgotten + self.archived
    }

    fn count(&mut self, kind: &str, seq: Seq) {
        let slot = match kind {
            "observed" => &mut self.observed,
            "extracted" => &mut self.extracted,
            "superseded" => &mut self.superseded,
            "accessed" => &mut self.accessed,
            "forgotten" => &mut self.forgotten,
            "archived" => &mut self.archived,
            _ => return,
        };
        *slot += 1;
        self.first_seq.get_or_insert(seq);
        self.last_seq = Some(seq);
    }
}

/// A namespace's events over time, for [`Engine::timeline`]: equal-width
/// buckets of commit time from `from` to `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timeline {
    /// The namespace.
    pub namespace: Namespace,
    /// Start of the first bucket (UTC).
    pub from: DateTime<Utc>,
    /// End of the last bucket (UTC).
    pub to: DateTime<Utc>,
    /// Width of each bucket in microseconds.
    pub bucket_micros: i64,
    /// The buckets, oldest first: as many as asked, fewer over a span
    /// shorter than that many µs (one for a single instant), none past the
    /// range's end (`to`, by default the last event); none when the
    /// namespace has no event in the range, unless both `from` and `to`
    /// are given (then the range's buckets, every count 0).
    pub buckets: Vec<TimelineBucket>,
    /// Events of the namespace counted (all buckets).
    pub events: u64,
    /// The last log position read.
    pub seq: Seq,
}

impl Timeline {
    /// `at` (a bucket bound) written as RFC 3339 UTC with as many second
    /// digits as the bucket width needs to tell neighbouring buckets apart:
    /// whole seconds for widths of whole seconds, milliseconds for whole
    /// milliseconds, microseconds otherwise (`2026-11-30T12:28:21.396Z`).
    pub fn label(&self, at: DateTime<Utc>) -> String {
        at.to_rfc3339_opts(self.label_precision(), true)
    }

    /// The second digits [`Timeline::label`] writes for this bucket width.
    pub fn label_precision(&self) -> chrono::SecondsFormat {
        match self.bucket_micros {
            w if w % 1_000_000 == 0 => chrono::SecondsFormat::Secs,
            w if w % 1_000 == 0 => chrono::SecondsFormat::Millis,
            _ => chrono::SecondsFormat::Micros,
        }
    }
}

impl Engine {
    /// Every namespace that holds a record, by name, with its figures at
    /// the last durable position.
    pub fn namespaces(&self) -> Vec<NamespaceSummary> {
        let shredded: std::collections::HashSet<String> = self
            .shared()
            .keys
            .as_ref()
            .map(|k| k.ring.lock().shredded().into_iter().map(|(ns, _)| ns).collect())
            .unwrap_or_default();
        let state = self.shared().state.read();
        let at = state.visible;
        let mut out: Vec<NamespaceSummary> = state
            .namespaces
            .iter()
            .map(|(ns, st)| {
                let mut s = NamespaceSummary {
                    namespace: ns.clone(),
                    active: 0,
                    superseded: 0,
                    archived: 0,
                    quarantined: 0,
                    observations: st.observations.keys().filter(|o| o.0 <= at).count(),
                    forgotten_memories: st.forgotten_memories.iter().filter(|m| m.0 <= at).count(),
                    forgotten_observations: st.forgotten_observations.iter().filter(|o| o.0 <= at).count(),
                    key_shredded: shredded.contains(ns.as_str()),
                };
                for m in st.memories.values().filter(|m| m.visible_at(at)) {
                    match (m.status_at(at), m.quarantine.is_some()) {
                        (Status::Forgotten, _) => {}
                        (_, true) => s.quarantined += 1,
                        (Status::Active, false) => s.active += 1,
                        (Status::Superseded, false) => s.superseded += 1,
                        (Status::Archived, false) => s.archived += 1,
                    }
                }
                s
            })
            .collect();
        out.sort_by(|a, b| a.namespace.as_str().cmp(b.namespace.as_str()));
        out
    }

    /// The events of `ns` committed in `from..=to` (default: from the
    /// namespace's first event to its last), counted by kind in `buckets`
    /// equal-width time buckets, at least 1 µs wide. A span shorter than
    /// `buckets` µs gets only the buckets that reach its end: one bucket
    /// when the namespace holds one event, or all its events share one
    /// instant; none when it has no event in the range (and no `from` and
    /// `to` were given). Reads every record of the log in the range once
    /// (the log is not indexed by namespace): O(events).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for `buckets` outside
    /// 1..=[`MAX_TIMELINE_BUCKETS`] or `from` after `to`;
    /// [`Error::Corrupted`] naming a bad record; storage errors.
    pub fn timeline(
        &self,
        ns: &Namespace,
        buckets: usize,
        from: Option<DateTime<Utc>>,
        to: Option<DateTime<Utc>>,
    ) -> Result<Timeline> {
        if !(1..=MAX_TIMELINE_BUCKETS).contains(&buckets) {
            return Err(Error::out_of_range("buckets", 1, MAX_TIMELINE_BUCKETS, buckets));
        }
        if let (Some(f), Some(t)) = (from, to) {
            if f > t {
                return Err(Error::invalid("from", "is after to"));
            }
        }
        let (first, last) = {
            let state = self.shared().state.read();
            let first = from.map_or(1, |t| state.seq_at_time(t - chrono::Duration::microseconds(1)) + 1);
            let last = to.map_or(state.visible, |t| state.seq_at_time(t));
            (first, last)
        };
        // One pass: (time in µs, kind) of each event of the namespace.
        let mut seen: Vec<(i64, Seq, &'static str)> = Vec::new();
        for r in self.shared().store().scan(first.max(1), last) {
            let (seq, bytes) = r?;
            let ev = decode_record(seq, &bytes)?;
            if &ev.ns != ns {
                continue;
            }
            let kind = match &ev.body {
                EventBody::Tombstone(t) => match t.was.as_str() {
                    "observed" => "observed",
                    "extracted" => "extracted",
                    "superseded" => "superseded",
                    _ => continue,
                },
                b => b.kind_name(),
            };
            seen.push((ev.time.timestamp_micros(), seq, kind));
        }
        let lo = from.map(|t| t.timestamp_micros()).or_else(|| seen.first().map(|e| e.0));
        let hi = to.map(|t| t.timestamp_micros()).or_else(|| seen.last().map(|e| e.0));
        let (Some(lo), Some(hi)) = (lo, hi) else {
            // Nothing in the range: an empty range at the bound given (or
            // now, to the microsecond, as every time in the log).
            let now = Utc.timestamp_micros(Utc::now().timestamp_micros()).single().unwrap_or_else(Utc::now);
            return Ok(Timeline {
                namespace: ns.clone(),
                from: from.or(to).unwrap_or(now),
                to: to.or(from).unwrap_or(now),
                bucket_micros: 0,
                buckets: Vec::new(),
                events: 0,
                seq: last,
            });
        };
        let n = i64::try_from(buckets).unwrap_or(1);
        let (width, n) = bucket_layout(hi.saturating_sub(lo), n);
        let time = |us: i64| Utc.timestamp_micros(us).single().unwrap_or(DateTime::<Utc>::MAX_UTC);
        let mut out: Vec<TimelineBucket> = (0..n)
            .map(|i| TimelineBucket {
                start: time(lo.saturating_add(width.saturating_mul(i))),
                end: time(lo.saturating_add(width.saturating_mul(i + 1))),
                ..TimelineBucket::default()
            })
            .collect();
        let mut events = 0;
        for (us, seq, kind) in &seen {
            let i = usize::try_from((us - lo) / width).unwrap_or(0).min(out.len() - 1);
            out[i].count(kind, *seq);
            events += 1;
        }
        Ok(Timeline {
            namespace: ns.clone(),
            from: time(lo),
            to: time(hi),
            bucket_micros: width,
            buckets: out,
            events,
            seq: last,
        })
    }
}

/// The width (µs) and number of a timeline's buckets over a span of
/// `span` µs (`hi - lo`, never negative) asked to be cut into `asked`: the
/// width is the span divided by `asked`, rounded up, at least 1 µs (so `hi`
/// falls in the last bucket); there are only as many buckets as it takes to
/// reach `hi`, so a span shorter than `asked` µs (one instant, events
/// microseconds apart) gets fewer buckets, never empty ones after its last
/// event: one bucket when every event shares one instant.
fn bucket_layout(span: i64, asked: i64) -> (i64, i64) {
    let span = span.max(0);
    let asked = asked.max(1);
    let width = (span / asked + i64::from(span % asked != 0)).max(1);
    (width, (span / width + 1).min(asked))
}

#[cfg(test)]
mod tests {
    use super::bucket_layout;

    #[test]
    fn buckets_reach_the_end_of_the_span_and_no_further() {
        // One instant: one bucket of 1 µs.
        assert_eq!(bucket_layout(0, 48), (1, 1));
        assert_eq!(bucket_layout(0, 1), (1, 1));
        // Microseconds apart: one bucket per µs up to the last event.
        assert_eq!(bucket_layout(1, 48), (1, 2));
        assert_eq!(bucket_layout(3, 48), (1, 4));
        // Rounding the width up leaves fewer buckets than asked.
        assert_eq!(bucket_layout(100, 48), (3, 34));
        // Exact division: the end falls into the last asked bucket.
        assert_eq!(bucket_layout(120, 60), (2, 60));
        assert_eq!(bucket_layout(119, 60), (2, 60));
        // A span of seconds gets every bucket asked.
        assert_eq!(bucket_layout(1_000_000, 48), (20_834, 48));
        assert_eq!(bucket_layout(i64::MAX, 500).1, 500);
        for span in 0..2_000 {
            for asked in [1, 2, 7, 48, 500] {
                let (w, n) = bucket_layout(span, asked);
                assert!(w >= 1 && (1..=asked).contains(&n), "{span} {asked}");
                // The last event falls in the last bucket, and no bucket
                // starts after it.
                assert_eq!((span / w).min(n - 1), n - 1, "{span} {asked}: ({w}, {n})");
                assert!(w * (n - 1) <= span, "{span} {asked}: ({w}, {n})");
            }
        }
    }
}
