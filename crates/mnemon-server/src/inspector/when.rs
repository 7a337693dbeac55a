//! Times as the pages show them: relative to now ("3 h ago"), in the zone
//! the reader chose (`tz`, a UTC offset such as `+08:00`; default UTC),
//! and exact (RFC 3339, microseconds, UTC) on hover.

use chrono::{DateTime, FixedOffset, Utc};
use serde_json::{json, Value};

use mnemon_api::ApiError;

/// The zone of a `tz` query value: `UTC`, `Z`, or an offset `±HH:MM`
/// (`±HHMM`, `±HH`).
///
/// # Errors
/// [`mnemon_api::ErrorCode::InvalidInput`] naming `tz` for anything else.
pub(super) fn zone(tz: Option<&str>) -> Result<FixedOffset, ApiError> {
    let bad = |s: &str| ApiError::invalid("tz", format!("must be UTC or an offset such as +08:00, got {s:?}"));
    let Some(s) = tz else { return FixedOffset::east_opt(0).ok_or_else(|| bad("0")) };
    if s.eq_ignore_ascii_case("utc") || s == "Z" {
        return FixedOffset::east_opt(0).ok_or_else(|| bad(s));
    }
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => return Err(bad(s)),
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !(digits.len() == 2 || digits.len() == 4) || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad(s));
    }
    let h: i32 = digits[..2].parse().map_err(|_| bad(s))?;
    let m: i32 = if digits.len() == 4 { digits[2..].parse().map_err(|_| bad(s))? } else { 0 };
    if h > 14 || m > 59 {
        return Err(bad(s));
    }
    FixedOffset::east_opt(sign * (h * 3600 + m * 60)).ok_or_else(|| bad(s))
}

/// `then` relative to `now` in words: "just now", "42 s ago", "3 min
/// ago", "5 h ago", "12 d ago", "4 mo ago", "2 y ago", or "in …" for a
/// time ahead.
pub(super) fn relative(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let d = now.signed_duration_since(then);
    let (secs, ahead) = (d.num_seconds().abs(), d.num_seconds() < 0);
    let amount = match secs {
        0 => return "just now".to_string(),
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h", s / 3600),
        s if s < 86_400 * 61 => format!("{} d", s / 86_400),
        s if s < 86_400 * 731 => format!("{} mo", s / (86_400 * 30)),
        s => format!("{} y", s / (86_400 * 365)),
    };
    if ahead {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A time for a template: `shown` (in `zone`, to the minute, with the
/// offset), `relative` and `exact` (RFC 3339 UTC, for the hover title and
/// the `datetime` attribute).
pub(super) fn when(t: DateTime<Utc>, now: DateTime<Utc>, zone: FixedOffset) -> Value {
    json!({
        "shown": t.with_timezone(&zone).format("%Y-%m-%d %H:%M %:z").to_string(),
        "relative": relative(t, now),
        "exact": t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn zones_are_utc_or_an_offset() {
        assert_eq!(zone(None).map(|z| z.local_minus_utc()).ok(), Some(0));
        assert_eq!(zone(Some("+08:00")).map(|z| z.local_minus_utc()).ok(), Some(8 * 3600));
        assert_eq!(zone(Some("-0530")).map(|z| z.local_minus_utc()).ok(), Some(-(5 * 3600 + 30 * 60)));
        for bad in ["Asia/Shanghai", "+25:00", "8", "+8:0"] {
            assert!(zone(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn relative_times_pick_one_unit_and_exact_times_keep_microseconds() {
        let now = Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).single().expect("a time");
        let ago = |s: i64| relative(now - chrono::Duration::seconds(s), now);
        assert_eq!(ago(0), "just now");
        assert_eq!(ago(42), "42 s ago");
        assert_eq!(ago(3 * 3600 + 5), "3 h ago");
        assert_eq!(ago(40 * 86_400), "40 d ago");
        assert_eq!(ago(800 * 86_400), "2 y ago");
        assert_eq!(relative(now + chrono::Duration::minutes(5), now), "in 5 min");
        let t = now + chrono::Duration::microseconds(123_456);
        let w = when(t, now, zone(Some("+08:00")).expect("a zone"));
        assert_eq!(w["shown"], "2026-05-01 20:00 +08:00");
        assert_eq!(w["exact"], "2026-05-01T12:00:00.123456Z");
    }
}
