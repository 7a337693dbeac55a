//! Time expressions in a query ("two weeks ago", "last month", "in March",
//! "上个月", "三天前"), resolved into spans of time relative to the query's
//! reference time, so recall can favour memories from then
//! ([`crate::recall::Weights::time`]).
//!
//! What is recognised (English words in any case; numbers as digits or
//! words, "a"/"an" = 1, "a couple of" = 2, "a few"/"several"/几 = 3 and
//! fuzzy):
//!
//! | expression | span (reference day `r`, in the reference's own offset) |
//! | --- | --- |
//! | `today`, `tonight`, `this morning` / 今天 | the day `r` |
//! | `yesterday`, `last night` / 昨天, `the day before yesterday` / 前天 | that day |
//! | `N days/weeks/months/years ago` / N天前, N周前, N个月前, N年前, 半年前, 前几天 | the day, week, month or year N units before `r`, widened by half a unit each side (a fuzzy N by a whole unit, at least two days) |
//! | `last week/month/year/weekend` / 上周, 上个月, 去年, 上周末, 上上周 | the previous calendar week (Monday–Sunday), month, year, or the previous week's Saturday–Sunday |
//! | `last Saturday` / 上周六 | the latest such day before `r` (上周六: that day of the previous week) |
//! | `the past/last N days…`, `recently` / 最近三天, 过去两周, 最近 | from N units before `r` to `r` (`recently`, 最近 alone: 30 days) |
//! | `this week/month/year`, `earlier this …` / 这周, 本月, 今年 | from the period's start to `r` |
//! | `in March`, `May 23, 2023`, `1 February, 2023` / 三月, 3月, 5月3日, 2022年5月 | that month or day (the latest one not after `r` when no year is given) |
//! | `last March`, `this June` | the latest March before `r`'s month (asked in March: a year before), June of `r`'s year |
//! | `in 2022` / 2022年 | that year |
//!
//! Each phrase keeps its own span; a memory's proximity is its best over
//! them ([`QueryTime::proximity`]). English month names count only next to
//! a preposition ("in March") or a day or year number (so "May I ask", "what
//! did April say" and "the March for Science" are not dates), and "last"
//! after a possessive or before "of" ("my last day at work", "the last week
//! of June") is not a span.
//!
//! Written here rather than taken from a crate: the one English crate that
//! returns ranges (`two_timer` 2.2.5) parses a whole string, not a phrase
//! inside a question, understood 17 of 32 phrases taken from LongMemEval
//! questions (not "two months ago", "a week ago", "the past month", "a
//! couple of days ago"), compiles its grammar in 120 ms on first use, and
//! has no Chinese; no maintained crate finds such phrases in Chinese text.
//! Calendar arithmetic is chrono's; the number and month words are the
//! fact signature's ([`crate::dedup`]).

mod en;
mod zh;

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, Utc, Weekday};

/// The span of time one phrase of a query names.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct TimeSpan {
    /// Start (inclusive), UTC: midnight of the first day in the reference
    /// time's offset.
    pub from: DateTime<Utc>,
    /// End (exclusive), UTC: midnight after the last day in the reference
    /// time's offset.
    pub to: DateTime<Utc>,
    /// The phrase, as written in the query.
    pub phrase: String,
}

/// The spans of time a query talks about, resolved against its reference
/// time ([`resolve`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct QueryTime {
    /// Start of the earliest span (inclusive), UTC.
    pub from: DateTime<Utc>,
    /// End of the latest span (exclusive), UTC.
    pub to: DateTime<Utc>,
    /// The phrases that named them, in query order, joined by `"; "`.
    pub phrase: String,
    /// Each phrase's own span, in query order.
    pub spans: Vec<TimeSpan>,
}

impl QueryTime {
    /// How close `t` is to the named time, `0..=1`: for each span, 1 inside
    /// it and halving with every half-span (at least one day) outside it;
    /// the best over the spans.
    pub fn proximity(&self, t: DateTime<Utc>) -> f32 {
        self.spans.iter().map(|s| span_proximity(s, t)).fold(0.0, f32::max)
    }
}

fn span_proximity(s: &TimeSpan, t: DateTime<Utc>) -> f32 {
    let d = if t < s.from {
        s.from - t
    } else if t >= s.to {
        t - s.to
    } else {
        return 1.0;
    };
    let half = ((s.to - s.from) / 2).max(Duration::days(1));
    let x = d.num_seconds() as f64 / half.num_seconds() as f64;
    0.5f64.powf(x) as f32
}

/// The spans of time `query` names, relative to `reference` (when the
/// question is asked; its offset decides where days begin); `None` when it
/// names none, or when `reference` or a span lies outside the years
/// 1–9999 (RFC 3339's range).
pub fn resolve(query: &str, reference: DateTime<FixedOffset>) -> Option<QueryTime> {
    // Not `date_naive()`: it panics when the offset carries the time past
    // chrono's range (`DateTime::<Utc>::MIN_UTC` seen from UTC−1).
    let shift = Duration::seconds(i64::from(reference.offset().local_minus_utc()));
    let today = reference.naive_utc().checked_add_signed(shift)?.date();
    if !(1..=9999).contains(&today.year()) {
        return None;
    }
    let mut found: Vec<Found> = Vec::new();
    en::find(query, today, &mut found);
    zh::find(query, today, &mut found);
    found.sort_by_key(|f| f.0);
    let offset = *reference.offset();
    let midnight = |d: NaiveDate| -> Option<DateTime<Utc>> {
        if !(1..=9999).contains(&d.year()) {
            return None;
        }
        let local = d.and_hms_opt(0, 0, 0)?;
        Some(local.and_local_timezone(offset).single()?.with_timezone(&Utc))
    };
    let mut spans = Vec::with_capacity(found.len());
    for f in &found {
        let (from, to) = (midnight(f.2)?, midnight(f.3)?);
        spans.push(TimeSpan { from, to, phrase: query.get(f.0..f.1)?.to_string() });
    }
    let from = spans.iter().map(|s| s.from).min()?;
    let to = spans.iter().map(|s| s.to).max()?;
    let phrase = spans.iter().map(|s| s.phrase.as_str()).collect::<Vec<_>>().join("; ");
    Some(QueryTime { from, to, phrase, spans })
}

/// A phrase found: its byte range in the query and the days it names,
/// `[from, to)`.
type Found = (usize, usize, NaiveDate, NaiveDate);

#[derive(Clone, Copy, PartialEq, Debug)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

/// `d` moved by `n` units (negative: back); months clamp to the month's
/// last day.
fn shift(d: NaiveDate, unit: Unit, n: i64) -> NaiveDate {
    match unit {
        Unit::Day => d + Duration::days(n),
        Unit::Week => d + Duration::days(7 * n),
        Unit::Month => add_months(d, n),
        Unit::Year => add_months(d, 12 * n),
    }
}

fn add_months(d: NaiveDate, n: i64) -> NaiveDate {
    let total = i64::from(d.year()) * 12 + i64::from(d.month0()) + n;
    let (y, m0) = (total.div_euclid(12), total.rem_euclid(12));
    let y = i32::try_from(y).unwrap_or(d.year());
    let m = u32::try_from(m0 + 1).unwrap_or(1);
    (1..=d.day()).rev().find_map(|day| NaiveDate::from_ymd_opt(y, m, day)).unwrap_or(d)
}

fn month_start(d: NaiveDate) -> NaiveDate {
    d.with_day(1).unwrap_or(d)
}

fn week_start(d: NaiveDate) -> NaiveDate {
    d - Duration::days(i64::from(d.weekday().num_days_from_monday()))
}

fn year_start(d: NaiveDate) -> NaiveDate {
    NaiveDate::from_ymd_opt(d.year(), 1, 1).unwrap_or(d)
}

fn day(d: NaiveDate) -> (NaiveDate, NaiveDate) {
    (d, d + Duration::days(1))
}

/// From `start` to the end of `today`.
fn until_today(start: NaiveDate, today: NaiveDate) -> (NaiveDate, NaiveDate) {
    (start, today + Duration::days(1))
}

/// The calendar period of `unit` holding `d`: `[start, end)`.
fn period(d: NaiveDate, unit: Unit) -> (NaiveDate, NaiveDate) {
    match unit {
        Unit::Day => day(d),
        Unit::Week => (week_start(d), week_start(d) + Duration::days(7)),
        Unit::Month => (month_start(d), add_months(month_start(d), 1)),
        Unit::Year => (year_start(d), add_months(year_start(d), 12)),
    }
}

/// The calendar period `back` periods before the one holding `today`.
fn previous(today: NaiveDate, unit: Unit, back: i64) -> (NaiveDate, NaiveDate) {
    period(shift(today, unit, -back), unit)
}

/// `N units ago`: the day N units back, widened by half a unit each side
/// (a fuzzy N by a whole unit, at least two days).
fn ago(today: NaiveDate, unit: Unit, n: i64, fuzzy: bool) -> (NaiveDate, NaiveDate) {
    let center = shift(today, unit, -n);
    let half_days = match unit {
        Unit::Day => 0,
        Unit::Week => 3,
        Unit::Month => 15,
        Unit::Year => 182,
    };
    let widen = if fuzzy { (2 * half_days).max(2) } else { half_days };
    (center - Duration::days(widen), center + Duration::days(widen + 1))
}

/// The latest date before `today` (strictly) that falls on `wd`.
fn last_weekday(today: NaiveDate, wd: Weekday) -> NaiveDate {
    let back = (7 + today.weekday().num_days_from_monday() - wd.num_days_from_monday()) % 7;
    today - Duration::days(if back == 0 { 7 } else { i64::from(back) })
}

/// Day `wd` of the week before the one holding `today`.
fn previous_weeks_day(today: NaiveDate, wd: Weekday) -> NaiveDate {
    week_start(today - Duration::days(7)) + Duration::days(i64::from(wd.num_days_from_monday()))
}

/// The weekend (Saturday and Sunday) of the week before the one holding
/// `today`.
fn previous_weekend(today: NaiveDate) -> (NaiveDate, NaiveDate) {
    let sat = previous_weeks_day(today, Weekday::Sat);
    (sat, sat + Duration::days(2))
}

/// Month `m` (1-based) of `year`, or the latest one not after `today`.
fn month_span(today: NaiveDate, m: u32, year: Option<i32>) -> Option<(NaiveDate, NaiveDate)> {
    let y = year.unwrap_or(if m <= today.month() { today.year() } else { today.year() - 1 });
    let start = NaiveDate::from_ymd_opt(y, m, 1)?;
    Some((start, add_months(start, 1)))
}

/// Day `d` of month `m` of `year`, or the latest such day not after
/// `today` (29 February: the latest leap year's).
fn day_span(today: NaiveDate, m: u32, d: u32, year: Option<i32>) -> Option<(NaiveDate, NaiveDate)> {
    let date = match year {
        Some(y) => NaiveDate::from_ymd_opt(y, m, d)?,
        None => (0..=8).find_map(|back| NaiveDate::from_ymd_opt(today.year() - back, m, d).filter(|x| *x <= today))?,
    };
    Some(day(date))
}

fn year_span(y: i32) -> Option<(NaiveDate, NaiveDate)> {
    let start = NaiveDate::from_ymd_opt(y, 1, 1)?;
    Some((start, add_months(start, 12)))
}

#[cfg(test)]
mod tests;
