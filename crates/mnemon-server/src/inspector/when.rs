//! Times as the pages show them: relative to now ("3 h ago"), in the zone
//! the reader chose (`tz`: a named IANA zone such as `Europe/Lisbon`, or a
//! UTC offset such as `+08:00`; default UTC), and exact (RFC 3339,
//! microseconds, UTC) on hover.

use chrono::{DateTime, FixedOffset, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use serde_json::{json, Value};

use mnemon_api::ApiError;

/// The zone times are shown in: a fixed UTC offset, or a named zone of
/// the IANA database whose offset is looked up for each time (so daylight
/// saving applies to the times that fall in it, not to all of them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Zone {
    /// A fixed offset from UTC (`UTC`, `+08:00`).
    Fixed(FixedOffset),
    /// A named zone (`Europe/Lisbon`).
    Named(Tz),
}

impl Zone {
    /// The offset from UTC at instant `t`.
    pub(super) fn offset_at(self, t: DateTime<Utc>) -> FixedOffset {
        match self {
            Zone::Fixed(o) => o,
            Zone::Named(tz) => tz.offset_from_utc_datetime(&t.naive_utc()).fix(),
        }
    }

    /// `t` in this zone, to the minute, with its offset there (and the
    /// zone's abbreviation for a named zone): `2026-07-01 13:00 +01:00`,
    /// `2026-07-01 13:00 +01:00 WEST`.
    pub(super) fn show(self, t: DateTime<Utc>) -> String {
        let shown = t.with_timezone(&self.offset_at(t)).format("%Y-%m-%d %H:%M %:z").to_string();
        let Zone::Named(tz) = self else { return shown };
        let abbr = t.with_timezone(&tz).format("%Z").to_string();
        // Zones without a letter abbreviation name it by offset ("+08").
        if abbr.starts_with(['+', '-']) {
            shown
        } else {
            format!("{shown} {abbr}")
        }
    }
}

/// The zone of a `tz` query value: `UTC`, `Z`, an offset `±HH:MM`
/// (`±HHMM`, `±HH`; at most 14 hours), or a zone name of the IANA time
/// zone database (`Europe/Lisbon`, `Asia/Shanghai`, `America/New_York`;
/// exact spelling, as in the database).
///
/// # Errors
/// [`mnemon_api::ErrorCode::InvalidInput`] naming `tz` for anything else.
pub(super) fn zone(tz: Option<&str>) -> Result<Zone, ApiError> {
    let bad = |s: &str| {
        ApiError::invalid(
            "tz",
            format!("must be UTC, an offset such as +08:00 or an IANA zone name such as Europe/Lisbon, got {s:?}"),
        )
    };
    let utc = || FixedOffset::east_opt(0).map(Zone::Fixed).ok_or_else(|| bad("0"));
    let Some(s) = tz else { return utc() };
    if s.eq_ignore_ascii_case("utc") || s == "Z" {
        return utc();
    }
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => return s.parse::<Tz>().map(Zone::Named).map_err(|_| bad(s)),
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
    FixedOffset::east_opt(sign * (h * 3600 + m * 60)).map(Zone::Fixed).ok_or_else(|| bad(s))
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
/// offset in force there at `t`), `relative` and `exact` (RFC 3339 UTC, for the hover title and
/// the `datetime` attribute).
pub(super) fn when(t: DateTime<Utc>, now: DateTime<Utc>, zone: Zone) -> Value {
    json!({
        "shown": zone.show(t),
        "relative": relative(t, now),
        "exact": t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).single().expect("a time")
    }

    #[test]
    fn zones_are_utc_an_offset_or_a_name() {
        let offset = |s: Option<&str>| zone(s).map(|z| z.offset_at(at(2026, 1, 1, 0, 0)).local_minus_utc()).ok();
        assert_eq!(offset(None), Some(0));
        assert_eq!(offset(Some("+08:00")), Some(8 * 3600));
        assert_eq!(offset(Some("-0530")), Some(-(5 * 3600 + 30 * 60)));
        assert_eq!(offset(Some("Asia/Shanghai")), Some(8 * 3600));
        assert_eq!(zone(Some("Europe/Lisbon")).ok(), Some(Zone::Named(chrono_tz::Europe::Lisbon)));
        assert_eq!(offset(Some("utc")), Some(0));
        for bad in ["Mars/Olympus", "asia/shanghai", "Europe/", "+25:00", "8", "+8:0", "<script>"] {
            match zone(Some(bad)) {
                Err(e) => assert_eq!(e.field.as_deref(), Some("tz"), "{bad}"),
                Ok(z) => panic!("{bad} read as {z:?}"),
            }
        }
    }

    #[test]
    fn named_zones_take_the_offset_in_force_at_each_time() {
        let lisbon = zone(Some("Europe/Lisbon")).expect("a zone");
        // Winter: WET, UTC+0; summer: WEST, UTC+1.
        assert_eq!(lisbon.show(at(2026, 1, 15, 12, 0)), "2026-01-15 12:00 +00:00 WET");
        assert_eq!(lisbon.show(at(2026, 7, 15, 12, 0)), "2026-07-15 13:00 +01:00 WEST");
        // Either side of the spring change (2026-03-29 01:00 UTC).
        assert_eq!(lisbon.show(at(2026, 3, 29, 0, 59)), "2026-03-29 00:59 +00:00 WET");
        assert_eq!(lisbon.show(at(2026, 3, 29, 1, 0)), "2026-03-29 02:00 +01:00 WEST");
        // Either side of the autumn change (2026-10-25 01:00 UTC): 01:30
        // local happens twice, told apart by the offset.
        assert_eq!(lisbon.show(at(2026, 10, 25, 0, 30)), "2026-10-25 01:30 +01:00 WEST");
        assert_eq!(lisbon.show(at(2026, 10, 25, 1, 30)), "2026-10-25 01:30 +00:00 WET");
        let shanghai = zone(Some("Asia/Shanghai")).expect("a zone");
        assert_eq!(shanghai.show(at(2026, 7, 15, 12, 0)), "2026-07-15 20:00 +08:00 CST");
        let ny = zone(Some("America/New_York")).expect("a zone");
        assert_eq!(ny.show(at(2026, 1, 15, 12, 0)), "2026-01-15 07:00 -05:00 EST");
        assert_eq!(ny.show(at(2026, 7, 15, 12, 0)), "2026-07-15 08:00 -04:00 EDT");
        let w = when(at(2026, 7, 15, 12, 0), at(2026, 7, 15, 13, 0), lisbon);
        assert_eq!(
            (w["shown"].as_str(), w["exact"].as_str()),
            (Some("2026-07-15 13:00 +01:00 WEST"), Some("2026-07-15T12:00:00Z"))
        );
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
