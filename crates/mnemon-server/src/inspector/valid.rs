//! The timeline by valid time: when turns were said (their event time) and
//! when memory versions became true and stopped being true, read through
//! `list` and `log`, bucketed like the commit-time timeline.

use chrono::{DateTime, Utc};

use super::pages::{scan_memories, unexpected};
use super::Inspector;
use mnemon::{EventBody, Namespace, Timeline, TimelineBucket};
use mnemon_api::{ApiError, LogRequest, Request, Response};

/// Buckets of a valid-time timeline, by default (as the commit-time one).
const DEFAULT_BUCKETS: usize = 48;
/// Most records read (memory versions and turns, each).
const MAX_READ: usize = 50_000;

/// What one point of the valid-time line counts as.
#[derive(Clone, Copy)]
enum Point {
    Said,
    BecameTrue,
    StoppedTrue,
}

/// Every point of `ns` on the valid-time line: turns at their event time
/// (turns without one are left out), memory versions at `valid_from` and
/// `valid_to`.
/// Points on the valid-time line, and the log position they were read at.
type Points = (Vec<(DateTime<Utc>, Point)>, u64);

fn points(ins: &Inspector, ns: &Namespace) -> Result<Points, ApiError> {
    let mut out = Vec::new();
    let (_, seq) = scan_memories(ins, ns, None, MAX_READ, |page| {
        for m in &page {
            out.push((m.valid_from, Point::BecameTrue));
            if let Some(to) = m.valid_to {
                out.push((to, Point::StoppedTrue));
            }
        }
    })?;
    let (mut cursor, mut read) = (None, 0);
    loop {
        let Response::Log(page) = ins.call(Request::Log(LogRequest {
            namespace: ns.clone(),
            from: None,
            to: Some(seq),
            kinds: vec!["observed".into()],
            cursor: cursor.take(),
            limit: Some(mnemon_api::budget::MAX_PAGE),
        }))?
        else {
            return Err(unexpected("log"));
        };
        read += page.events.len();
        for e in page.events {
            if let EventBody::Observed(o) = e.body {
                if let Some(t) = o.event_time {
                    out.push((t, Point::Said));
                }
            }
        }
        match page.next_cursor {
            Some(c) if read < MAX_READ => cursor = Some(c),
            _ => break,
        }
    }
    Ok((out, seq))
}

/// The valid-time timeline of `ns` in `buckets` equal buckets over
/// `from..=to` (default: the first point to the last), in the shape of the
/// commit-time [`Timeline`]: `observed` counts turns said, `extracted`
/// versions that became true, `superseded` versions that stopped being
/// true.
///
/// # Errors
/// `buckets` outside 1..=[`mnemon::MAX_TIMELINE_BUCKETS`] or `from` after
/// `to` ([`mnemon_api::ErrorCode::InvalidInput`]); the reads' errors.
pub(super) fn timeline(
    ins: &Inspector,
    ns: &Namespace,
    buckets: Option<usize>,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> Result<Timeline, ApiError> {
    let n = buckets.unwrap_or(DEFAULT_BUCKETS);
    if !(1..=mnemon::MAX_TIMELINE_BUCKETS).contains(&n) {
        return Err(ApiError::out_of_range("buckets", 1, mnemon::MAX_TIMELINE_BUCKETS, n));
    }
    let (all, seq) = points(ins, ns)?;
    let first = from.or_else(|| all.iter().map(|p| p.0).min());
    let last = to.or_else(|| all.iter().map(|p| p.0).max());
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(Timeline {
            namespace: ns.clone(),
            from: Utc::now(),
            to: Utc::now(),
            bucket_micros: 1,
            buckets: Vec::new(),
            events: 0,
            seq,
        });
    };
    if first > last {
        return Err(ApiError::invalid("from", "is after to"));
    }
    let span = (last - first).num_microseconds().unwrap_or(i64::MAX).max(1);
    let n_i64 = i64::try_from(n).unwrap_or(i64::MAX);
    let width = (span / n_i64 + i64::from(span % n_i64 != 0)).max(1);
    let count = usize::try_from((span + width - 1) / width).unwrap_or(n).clamp(1, n);
    let start = |i: usize| first + chrono::Duration::microseconds(width * i64::try_from(i).unwrap_or(0));
    let mut out: Vec<TimelineBucket> = (0..count)
        .map(|i| TimelineBucket { start: start(i), end: start(i + 1).min(last), ..TimelineBucket::default() })
        .collect();
    let mut events = 0;
    for (t, p) in all {
        if t < first || t > last {
            continue;
        }
        let i = usize::try_from((t - first).num_microseconds().unwrap_or(0) / width).unwrap_or(0).min(count - 1);
        let b = &mut out[i];
        match p {
            Point::Said => b.observed += 1,
            Point::BecameTrue => b.extracted += 1,
            Point::StoppedTrue => b.superseded += 1,
        }
        events += 1;
    }
    Ok(Timeline { namespace: ns.clone(), from: first, to: last, bucket_micros: width, buckets: out, events, seq })
}
