//! Time expressions in a query ("two weeks ago", "last month", "in March",
//! "上个月", "三天前"), resolved into a span of time relative to the
//! query's reference time, so recall can favour memories from then
//! ([`crate::Weights::time`]).
//!
//! What is recognised (English words in any case; numbers as digits or
//! words up to twelve, "a"/"an" = 1, "a couple of" = 2, "a few"/"several"
//! = 3 with a wider span):
//!
//! | expression | span (reference time `r`) |
//! | --- | --- |
//! | `today`, `tonight`, `this morning` / 今天 | the day of `r` |
//! | `yesterday` / 昨天, `the day before yesterday` / 前天 | that day |
//! | `N days/weeks/months/years ago` / N天前, N周前, N个月前, N年前 | the day, week, month or year N units before `r`, widened by half a unit each side (a fuzzy N by one unit) |
//! | `last week/month/year/weekend` / 上周, 上个月, 去年 | the previous calendar week (Monday–Sunday), month, year, or Saturday–Sunday |
//! | `last Saturday` / 上周六 | the latest such day before `r` (上周六: that day of the previous week) |
//! | `the past/last N days…`, `the past month`, `recently` / 最近N天, 过去N周 | from N units before `r` to `r` (`recently`, 最近: 30 days) |
//! | `this week/month/year`, `earlier this …` / 这周, 本月, 今年 | from the period's start to `r` |
//! | `in March`, `March 2023`, `March 5th` / 三月, 3月, 3月5日 | that month (the latest one not after `r` when no year is given), or that day |
//! | `in 2022` / 2022年 | that year |
//!
//! When a query holds several expressions the span covers all of them. A
//! capitalised `May` counts only after `in`/`of`/`since`/`during`/`until`
//! or before a day or year number (it is a verb otherwise).
//!
//! Written here rather than taken from a crate: the one English crate that
//! returns ranges (`two_timer` 2.2.5) parses a whole string, not a phrase
//! inside a question, understood 17 of 32 phrases taken from LongMemEval
//! questions (not "two months ago", "a week ago", "the past month", "a
//! couple of days ago"), compiles its grammar in 120 ms on first use, and
//! has no Chinese; no maintained crate finds such phrases in Chinese text.
//! Calendar arithmetic is chrono's.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc, Weekday};

/// A span of time a query talks about, resolved against its reference time.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct QueryTime {
    /// Start of the span (inclusive), UTC.
    pub from: DateTime<Utc>,
    /// End of the span (exclusive), UTC.
    pub to: DateTime<Utc>,
    /// The phrases of the query that named it, in query order, joined by
    /// `"; "`.
    pub phrase: String,
}

impl QueryTime {
    /// How close `t` is to the span, `0..=1`: 1 inside it, halving with
    /// every half-span (at least one day) outside it.
    pub fn proximity(&self, t: DateTime<Utc>) -> f32 {
        let d = if t < self.from {
            self.from - t
        } else if t >= self.to {
            t - self.to
        } else {
            return 1.0;
        };
        let half = ((self.to - self.from) / 2).max(Duration::days(1));
        let x = d.num_seconds() as f64 / half.num_seconds() as f64;
        0.5f64.powf(x) as f32
    }
}

/// The span of time `query` names, relative to `reference` (when the
/// question is asked); `None` when it names none, or when `reference` lies
/// outside the years 1–9999 (RFC 3339's range).
pub fn resolve(query: &str, reference: DateTime<Utc>) -> Option<QueryTime> {
    let today = reference.date_naive();
    if !(1..=9999).contains(&today.year()) {
        return None;
    }
    let mut found: Vec<Found> = Vec::new();
    english(query, today, &mut found);
    chinese(query, today, &mut found);
    if found.is_empty() {
        return None;
    }
    found.sort_by_key(|f| f.0);
    let from = found.iter().map(|f| f.2).min()?;
    let to = found.iter().map(|f| f.3).max()?;
    let phrase = found.iter().filter_map(|f| query.get(f.0..f.1)).collect::<Vec<_>>().join("; ");
    Some(QueryTime { from: midnight(from), to: midnight(to), phrase })
}

/// A phrase found: its byte range in the query and the span it names,
/// `[from, to)`.
type Found = (usize, usize, NaiveDate, NaiveDate);

fn midnight(d: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default())
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    fn parse(w: &str) -> Option<Unit> {
        match w.trim_end_matches('s') {
            "day" => Some(Unit::Day),
            "week" => Some(Unit::Week),
            "month" => Some(Unit::Month),
            "year" => Some(Unit::Year),
            _ => None,
        }
    }
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

/// The calendar period of `unit` holding `d`: `[start, end)`.
fn period(d: NaiveDate, unit: Unit) -> (NaiveDate, NaiveDate) {
    match unit {
        Unit::Day => (d, d + Duration::days(1)),
        Unit::Week => (week_start(d), week_start(d) + Duration::days(7)),
        Unit::Month => (month_start(d), add_months(month_start(d), 1)),
        Unit::Year => (year_start(d), add_months(year_start(d), 12)),
    }
}

/// `N units ago`: the day/period N units back, widened by half a unit
/// each side (a whole unit when N is fuzzy).
fn ago(today: NaiveDate, unit: Unit, n: i64, fuzzy: bool) -> (NaiveDate, NaiveDate) {
    let center = shift(today, unit, -n);
    let half_days = match unit {
        Unit::Day => 0,
        Unit::Week => 3,
        Unit::Month => 15,
        Unit::Year => 182,
    };
    let widen = if fuzzy { 2 * half_days.max(1) } else { half_days };
    (center - Duration::days(widen), center + Duration::days(widen + 1))
}

/// The latest date before `today` (strictly) that falls on `wd`.
fn last_weekday(today: NaiveDate, wd: Weekday) -> NaiveDate {
    let back = (7 + today.weekday().num_days_from_monday() - wd.num_days_from_monday()) % 7;
    today - Duration::days(if back == 0 { 7 } else { i64::from(back) })
}

/// Month `m` (1-based) of `year`, or the latest one not after `today`.
fn month_span(today: NaiveDate, m: u32, year: Option<i32>) -> Option<(NaiveDate, NaiveDate)> {
    let y = year.unwrap_or(if m <= today.month() { today.year() } else { today.year() - 1 });
    let start = NaiveDate::from_ymd_opt(y, m, 1)?;
    Some((start, add_months(start, 1)))
}

fn day_span(today: NaiveDate, m: u32, day: u32, year: Option<i32>) -> Option<(NaiveDate, NaiveDate)> {
    let y = match year {
        Some(y) => y,
        None => {
            let this = NaiveDate::from_ymd_opt(today.year(), m, day)?;
            if this <= today {
                today.year()
            } else {
                today.year() - 1
            }
        }
    };
    let d = NaiveDate::from_ymd_opt(y, m, day)?;
    Some((d, d + Duration::days(1)))
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A month name (`march`) or its short form (`mar`, `sept`): the month
/// (1-based) and whether the form was short.
fn month_of(w: &str) -> Option<(u32, bool)> {
    if let Some(i) = MONTHS.iter().position(|m| *m == w) {
        return u32::try_from(i + 1).ok().map(|m| (m, false));
    }
    let i = MONTHS.iter().position(|m| w.len() == 3 && m.starts_with(w) || w == "sept" && *m == "september")?;
    u32::try_from(i + 1).ok().map(|m| (m, true))
}

fn weekday_of(w: &str) -> Option<Weekday> {
    Some(match w {
        "monday" => Weekday::Mon,
        "tuesday" => Weekday::Tue,
        "wednesday" => Weekday::Wed,
        "thursday" => Weekday::Thu,
        "friday" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        "sunday" => Weekday::Sun,
        _ => return None,
    })
}

/// A count word at `words[i..]`: its value, whether it is fuzzy, and how
/// many words it took.
fn count(words: &[&str], i: usize) -> Option<(i64, bool, usize)> {
    let w = *words.get(i)?;
    let next = words.get(i + 1).copied();
    let small = |w: &str| -> Option<i64> {
        Some(match w {
            "one" | "a" | "an" => 1,
            "two" => 2,
            "three" => 3,
            "four" => 4,
            "five" => 5,
            "six" => 6,
            "seven" => 7,
            "eight" => 8,
            "nine" => 9,
            "ten" => 10,
            "eleven" => 11,
            "twelve" => 12,
            _ => w.parse::<i64>().ok().filter(|n| (1..=400).contains(n))?,
        })
    };
    match (w, next) {
        ("a" | "an", Some("couple")) if words.get(i + 2) == Some(&"of") => Some((2, true, 3)),
        ("couple", Some("of")) => Some((2, true, 2)),
        ("a", Some("few")) => Some((3, true, 2)),
        ("few" | "several", _) => Some((3, true, 1)),
        _ => small(w).map(|n| (n, false, 1)),
    }
}

/// Lower-cased words of `s` with their original spelling and byte range,
/// split on anything but letters and digits (ASCII only; other scripts are
/// left to [`chinese`]).
fn words(s: &str) -> Vec<(String, &str, usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        match (c.is_ascii_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                out.push((s[a..i].to_ascii_lowercase(), &s[a..i], a, i));
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn ordinal_day(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &w[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
}

fn year_of(w: &str) -> Option<i32> {
    (w.len() == 4).then(|| w.parse::<i32>().ok()).flatten().filter(|y| (1900..=2200).contains(y))
}

fn english(query: &str, today: NaiveDate, out: &mut Vec<Found>) {
    let pairs = words(query);
    let w: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    let orig: Vec<&str> = pairs.iter().map(|p| p.1).collect();
    // Byte range of words i..i+n.
    let bytes = |i: usize, n: usize| (pairs[i].2, pairs[(i + n).min(pairs.len()) - 1].3);
    let day = |d: NaiveDate| (d, d + Duration::days(1));
    let mut i = 0;
    while i < w.len() {
        let at = |k: usize| w.get(i + k).copied().unwrap_or("");
        let mut push = |span: (NaiveDate, NaiveDate), n: usize| {
            let (a, b) = bytes(i, n);
            out.push((a, b, span.0, span.1));
            n
        };
        let taken = match at(0) {
            "today" | "tonight" => push(day(today), 1),
            "this" if matches!(at(1), "morning" | "afternoon" | "evening") => push(day(today), 2),
            "yesterday" => push(day(today - Duration::days(1)), 1),
            "the" if at(1) == "day" && at(2) == "before" && at(3) == "yesterday" => {
                push(day(today - Duration::days(2)), 4)
            }
            "recently" | "lately" => push((today - Duration::days(30), today + Duration::days(1)), 1),
            "last" | "past" | "previous" | "this" | "earlier" => {
                english_relative(&w, i, today).map_or(0, |(span, n)| push(span, n))
            }
            "the" if matches!(at(1), "last" | "past" | "previous") => {
                rolling(&w, i + 2, today).map_or(0, |(span, n)| push(span, n + 2))
            }
            "in" | "during" if year_of(at(1)).is_some() => {
                let y = year_of(at(1)).unwrap_or(today.year());
                match NaiveDate::from_ymd_opt(y, 1, 1) {
                    Some(s) => push((s, add_months(s, 12)), 2),
                    None => 0,
                }
            }
            _ => 0,
        };
        if taken > 0 {
            i += taken;
            continue;
        }
        // A day before its month: "1 February, 2023", "3rd of June".
        if let Some(d) = ordinal_day(w[i]) {
            let of = usize::from(at(1) == "of");
            let may_verb = at(1 + of) == "may" && orig.get(i + 1 + of) != Some(&"May");
            if let Some((m, _)) = month_of(at(1 + of)).filter(|_| !may_verb) {
                let year = year_of(at(2 + of));
                if let Some(span) = day_span(today, m, d, year) {
                    let n = 2 + of + usize::from(year.is_some());
                    let (a, b) = bytes(i, n);
                    out.push((a, b, span.0, span.1));
                    i += n;
                    continue;
                }
            }
        }
        // N units ago.
        if let Some((n, fuzzy, k)) = count(&w, i) {
            if let Some(unit) = Unit::parse(at(k)) {
                if at(k + 1) == "ago" {
                    let (from, to) = ago(today, unit, n, fuzzy);
                    let (a, b) = bytes(i, k + 2);
                    out.push((a, b, from, to));
                    i += k + 2;
                    continue;
                }
            }
        }
        // Month names, with an optional day and year. A month is read as
        // one when it is written with a capital (not `May` opening a
        // sentence), after a preposition, or before a day or year number.
        if let Some((m, short)) = month_of(w[i]) {
            let prev = if i > 0 { w[i - 1] } else { "" };
            let day_n = ordinal_day(at(1));
            let year = year_of(at(1)).or_else(|| day_n.and_then(|_| year_of(at(2))));
            let numbered = day_n.is_some() || year.is_some();
            let after_preposition = matches!(
                prev,
                "in" | "of" | "since" | "during" | "until" | "early" | "late" | "mid" | "by" | "before" | "after"
            );
            let capital = orig[i].starts_with(|c: char| c.is_ascii_uppercase()) && (w[i] != "may" || i > 0);
            let is_month = numbered
                || (!short && (after_preposition || capital && w[i] != "may"))
                || (w[i] == "may" && after_preposition && capital);
            if is_month {
                let span = match day_n {
                    Some(d) => day_span(today, m, d, year),
                    None => month_span(today, m, year),
                };
                let n = 1 + usize::from(day_n.is_some()) + usize::from(year.is_some());
                if let Some(span) = span {
                    let (a, b) = bytes(i, n);
                    out.push((a, b, span.0, span.1));
                    i += n;
                    continue;
                }
            }
        }
        i += 1;
    }
}

/// `last|past|previous|this|earlier …` at `w[i]`.
fn english_relative(w: &[&str], i: usize, today: NaiveDate) -> Option<((NaiveDate, NaiveDate), usize)> {
    let at = |k: usize| w.get(i + k).copied().unwrap_or("");
    match (w[i], at(1)) {
        ("earlier", "this") => {
            let unit = Unit::parse(at(2)).filter(|u| *u != Unit::Day)?;
            Some(((period(today, unit).0, today + Duration::days(1)), 3))
        }
        ("this", u) => {
            let unit = Unit::parse(u).filter(|unit| *unit != Unit::Day && !u_is_plural(u))?;
            Some(((period(today, unit).0, today + Duration::days(1)), 2))
        }
        ("last" | "previous", "weekend") => {
            let sat = last_weekday(today, Weekday::Sat);
            Some(((sat, sat + Duration::days(2)), 2))
        }
        ("last" | "previous", u) if weekday_of(u).is_some() => {
            let d = last_weekday(today, weekday_of(u)?);
            Some(((d, d + Duration::days(1)), 2))
        }
        ("last" | "previous", u) if Unit::parse(u).is_some() && !u_is_plural(u) => {
            let unit = Unit::parse(u)?;
            if unit == Unit::Day {
                return Some(((today - Duration::days(1), today + Duration::days(1)), 2));
            }
            Some((period(shift(today, unit, -1), unit), 2))
        }
        ("past" | "last", _) => rolling(w, i + 1, today).map(|(span, n)| (span, n + 1)),
        _ => None,
    }
}

fn u_is_plural(u: &str) -> bool {
    u.ends_with('s')
}

/// `[N] units` at `w[i]` after "past"/"the last": from N units back to today.
fn rolling(w: &[&str], i: usize, today: NaiveDate) -> Option<((NaiveDate, NaiveDate), usize)> {
    let (n, _, k) = count(w, i).unwrap_or((1, false, 0));
    let unit = Unit::parse(w.get(i + k).copied().unwrap_or(""))?;
    Some(((shift(today, unit, -n), today + Duration::days(1)), k + 1))
}

/// A Chinese number (digits, 一…十, 两, 几 = fuzzy 3) at the start of `s`:
/// value, fuzzy, chars taken.
fn zh_count(s: &[char]) -> Option<(i64, bool, usize)> {
    let digit = |c: char| -> Option<i64> {
        Some(match c {
            '一' => 1,
            '二' | '两' | '兩' => 2,
            '三' => 3,
            '四' => 4,
            '五' => 5,
            '六' => 6,
            '七' => 7,
            '八' => 8,
            '九' => 9,
            _ => return c.to_digit(10).map(i64::from),
        })
    };
    let first = *s.first()?;
    if first == '几' || first == '幾' {
        return Some((3, true, 1));
    }
    if first.is_ascii_digit() {
        let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
        let v: i64 = s[..n].iter().collect::<String>().parse().ok()?;
        return (1..=400).contains(&v).then_some((v, false, n));
    }
    // 十, 十二, 二十, 二十三 and single digits.
    match (digit(first), s.get(1).copied()) {
        (None, Some(c)) if first == '十' => match digit(c) {
            Some(u) => Some((10 + u, false, 2)),
            None => Some((10, false, 1)),
        },
        (None, None) if first == '十' => Some((10, false, 1)),
        (Some(t), Some('十')) => match s.get(2).copied().and_then(digit) {
            Some(u) => Some((t * 10 + u, false, 3)),
            None => Some((t * 10, false, 2)),
        },
        (Some(d), _) => Some((d, false, 1)),
        (None, _) => None,
    }
}

fn zh_weekday(c: char) -> Option<Weekday> {
    Some(match c {
        '一' => Weekday::Mon,
        '二' => Weekday::Tue,
        '三' => Weekday::Wed,
        '四' => Weekday::Thu,
        '五' => Weekday::Fri,
        '六' => Weekday::Sat,
        '日' | '天' => Weekday::Sun,
        _ => return None,
    })
}

/// A unit word at the start of `s`: unit and chars taken (个月, 周, 星期,
/// 礼拜, 天, 日, 年).
fn zh_unit(s: &[char]) -> Option<(Unit, usize)> {
    let (skip, rest) = match s.first() {
        Some('个' | '個') => (1, &s[1..]),
        _ => (0, s),
    };
    let (u, n) = match rest {
        ['月', ..] => (Unit::Month, 1),
        ['周' | '週', ..] => (Unit::Week, 1),
        ['星', '期', ..] | ['礼', '拜', ..] | ['禮', '拜', ..] => (Unit::Week, 2),
        ['天', ..] | ['日', ..] => (Unit::Day, 1),
        ['年', ..] => (Unit::Year, 1),
        _ => return None,
    };
    // "个" before 天/年 is unusual but harmless; before 月 it is required
    // for a duration (三月 is March, 三个月 is three months).
    Some((u, skip + n))
}

fn chinese(query: &str, today: NaiveDate, out: &mut Vec<Found>) {
    let c: Vec<char> = query.chars().collect();
    // Byte offset of each char, and of the end.
    let offs: Vec<usize> = query.char_indices().map(|(i, _)| i).chain(std::iter::once(query.len())).collect();
    if !c.iter().any(|ch| ('\u{4e00}'..='\u{9fff}').contains(ch)) {
        return;
    }
    let day = |d: NaiveDate| (d, d + Duration::days(1));
    let mut i = 0;
    while i < c.len() {
        let rest = &c[i..];
        let starts = |p: &str| {
            let p: Vec<char> = p.chars().collect();
            rest.starts_with(&p)
        };
        let mut found: Option<((NaiveDate, NaiveDate), usize)> = None;
        if starts("大前天") {
            found = Some((day(today - Duration::days(3)), 3));
        } else if starts("前天") {
            found = Some((day(today - Duration::days(2)), 2));
        } else if starts("昨天") || starts("昨日") || starts("昨晚") {
            found = Some((day(today - Duration::days(1)), 2));
        } else if starts("今天") || starts("今日") || starts("今晚") {
            found = Some((day(today), 2));
        } else if starts("去年") {
            found = Some((period(shift(today, Unit::Year, -1), Unit::Year), 2));
        } else if starts("前年") {
            found = Some((period(shift(today, Unit::Year, -2), Unit::Year), 2));
        } else if starts("今年") {
            found = Some(((year_start(today), today + Duration::days(1)), 2));
        } else if starts("上个月") || starts("上個月") {
            found = Some((period(shift(today, Unit::Month, -1), Unit::Month), 3));
        } else if starts("上月") {
            found = Some((period(shift(today, Unit::Month, -1), Unit::Month), 2));
        } else if starts("这个月") || starts("這個月") || starts("本月") || starts("这月") {
            let n = if starts("本月") || starts("这月") { 2 } else { 3 };
            found = Some(((month_start(today), today + Duration::days(1)), n));
        } else if starts("上周末") || starts("上週末") {
            let sat = last_weekday(today, Weekday::Sat);
            found = Some(((sat, sat + Duration::days(2)), 3));
        } else if let Some(n) = ["上个星期", "上個星期", "上星期", "上个礼拜", "上礼拜", "上周", "上週"]
            .iter()
            .find(|p| starts(p))
            .map(|p| p.chars().count())
        {
            let prev = shift(today, Unit::Week, -1);
            match rest.get(n).copied().and_then(zh_weekday) {
                Some(wd) => {
                    let d = week_start(prev) + Duration::days(i64::from(wd.num_days_from_monday()));
                    found = Some((day(d), n + 1));
                }
                None => found = Some((period(prev, Unit::Week), n)),
            }
        } else if let Some(n) = ["这个星期", "這個星期", "这星期", "这周", "這週", "本周", "本週"]
            .iter()
            .find(|p| starts(p))
            .map(|p| p.chars().count())
        {
            found = Some(((week_start(today), today + Duration::days(1)), n));
        } else if let Some(n) = ["最近", "过去", "過去", "近"].iter().find(|p| starts(p)).map(|p| p.chars().count())
        {
            // 最近三天, 过去两周, 最近几个月; 最近 alone: 30 days.
            let after = &rest[n..];
            let (cnt, k) = match zh_count(after) {
                Some((v, _, k)) => (v, k),
                None => (1, 0),
            };
            match zh_unit(&after[k..]) {
                Some((unit, u)) => {
                    found = Some(((shift(today, unit, -cnt), today + Duration::days(1)), n + k + u));
                }
                None if starts("最近") => {
                    found = Some(((today - Duration::days(30), today + Duration::days(1)), 2));
                }
                None => {}
            }
        } else if let Some((y, k)) = zh_year(rest) {
            // 2022年, unless a month follows (2022年5月 is read at the month).
            let tail = &rest[k..];
            let month_follows = zh_count(tail).is_some_and(|(_, _, mk)| tail.get(mk) == Some(&'月'));
            match NaiveDate::from_ymd_opt(y, 1, 1) {
                Some(s) if !month_follows => found = Some(((s, add_months(s, 12)), k)),
                _ => {
                    i += k;
                    continue;
                }
            }
        } else if let Some((cnt, fuzzy, k)) = zh_count(rest) {
            let after = &rest[k..];
            if let Some((unit, u)) = zh_unit(after) {
                let tail = &after[u..];
                let is_ago =
                    tail.starts_with(&['前']) || tail.starts_with(&['以', '前']) || tail.starts_with(&['之', '前']);
                let month_name = unit == Unit::Month && !after.starts_with(&['个']) && !after.starts_with(&['個']);
                if is_ago && !month_name {
                    let extra = if tail.starts_with(&['前']) { 1 } else { 2 };
                    found = Some((ago(today, unit, cnt, fuzzy), k + u + extra));
                } else if month_name && !fuzzy && (1..=12).contains(&cnt) {
                    // N月, N月M日/号.
                    let m = u32::try_from(cnt).unwrap_or(1);
                    let d = zh_count(tail).filter(|(_, f, _)| !f).and_then(|(dv, _, dk)| {
                        matches!(tail.get(dk), Some('日' | '号' | '號')).then_some((dv, dk + 1))
                    });
                    let year = zh_year_before(&c[..i]);
                    let span = match d {
                        Some((dv, _)) => u32::try_from(dv).ok().and_then(|dv| day_span(today, m, dv, year)),
                        None => month_span(today, m, year),
                    };
                    if let Some(span) = span {
                        found = Some((span, k + u + d.map_or(0, |x| x.1)));
                    }
                }
            }
        }
        match found {
            Some((span, n)) => {
                out.push((offs[i], offs[(i + n).min(c.len())], span.0, span.1));
                i += n.max(1);
            }
            None => i += 1,
        }
    }
}

/// Four digits and 年 at the start of `s`: the year and chars taken.
fn zh_year(s: &[char]) -> Option<(i32, usize)> {
    let digits: String = s.iter().take(4).collect();
    let ok = s.len() >= 5 && s[..4].iter().all(char::is_ascii_digit) && s[4] == '年';
    ok.then(|| digits.parse().ok()).flatten().filter(|y| (1900..=2200).contains(y)).map(|y| (y, 5))
}

/// A year written just before a month (`2023年5月`): the year.
fn zh_year_before(before: &[char]) -> Option<i32> {
    let b = before.strip_suffix(&['年'])?;
    let digits: String =
        b.iter().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
    (digits.len() == 4).then(|| digits.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, 8, 30, 0).single().expect("date")
    }

    fn span(q: &str, r: DateTime<Utc>) -> Option<(String, String)> {
        resolve(q, r).map(|t| (t.from.format("%Y-%m-%d").to_string(), t.to.format("%Y-%m-%d").to_string()))
    }

    fn s(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_string(), b.to_string()))
    }

    #[test]
    fn english_expressions() {
        // 2023-04-01 is a Saturday.
        let r = at(2023, 4, 1);
        assert_eq!(span("Which book did I finish a week ago?", r), s("2023-03-22", "2023-03-29"));
        assert_eq!(span("What did I do two months ago?", r), s("2023-01-17", "2023-02-17"));
        assert_eq!(span("I received a piece of jewelry last Saturday from whom?", r), s("2023-03-25", "2023-03-26"));
        assert_eq!(span("What did I buy last month?", r), s("2023-03-01", "2023-04-01"));
        assert_eq!(span("How many plants did I get in the past month?", r), s("2023-03-01", "2023-04-02"));
        assert_eq!(span("How many doctor's appointments did I go to in March?", r), s("2023-03-01", "2023-04-01"));
        assert_eq!(span("What happened in December?", r), s("2022-12-01", "2023-01-01"));
        assert_eq!(span("I cooked something a couple of days ago.", r), s("2023-03-28", "2023-04-02"));
        assert_eq!(span("What did I do yesterday", r), s("2023-03-31", "2023-04-01"));
        assert_eq!(span("What game did I beat last weekend?", r), s("2023-03-25", "2023-03-27"));
        assert_eq!(span("Where did we go last week?", r), s("2023-03-20", "2023-03-27"));
        assert_eq!(span("What did I get on March 5th, 2022?", r), s("2022-03-05", "2022-03-06"));
        assert_eq!(span("What did Gina find on 1 February, 2023?", r), s("2023-02-01", "2023-02-02"));
        assert_eq!(span("the pet he lost on the 3rd of June", r), s("2022-06-03", "2022-06-04"));
        assert_eq!(span("What setback did Melanie face in October 2023?", r), s("2023-10-01", "2023-11-01"));
        assert_eq!(span("Trips in 2021", r), s("2021-01-01", "2022-01-01"));
        assert_eq!(span("What have I done earlier this month?", r), s("2023-04-01", "2023-04-02"));
        assert_eq!(span("The past few months were busy", r), s("2023-01-01", "2023-04-02"));
    }

    #[test]
    fn words_that_are_not_times() {
        let r = at(2023, 4, 1);
        assert_eq!(span("May I ask what my cat's name is?", r), None);
        assert_eq!(span("What may help with my back pain?", r), None);
        assert_eq!(span("What was the first issue with my car?", r), None);
        assert_eq!(span("How many days did it take?", r), None);
        assert_eq!(span("Who did I meet at the march for climate?", r), None);
        assert_eq!(span("what did i do in march", r), s("2023-03-01", "2023-04-01"));
        assert_eq!(span("Plans for early May", r), s("2022-05-01", "2022-06-01"));
        assert_eq!(span("What did I do on May 3rd?", r), s("2022-05-03", "2022-05-04"));
        assert_eq!(span("Taking 2 may help", r), None);
    }

    #[test]
    fn chinese_expressions() {
        let r = at(2023, 4, 1);
        assert_eq!(span("我上个月买了什么？", r), s("2023-03-01", "2023-04-01"));
        assert_eq!(span("三天前我去了哪里", r), s("2023-03-29", "2023-03-30"));
        assert_eq!(span("两周前我见了谁", r), s("2023-03-15", "2023-03-22"));
        assert_eq!(span("我昨天吃了什么", r), s("2023-03-31", "2023-04-01"));
        assert_eq!(span("上周六我做了什么", r), s("2023-03-25", "2023-03-26"));
        assert_eq!(span("去年我去了哪些国家", r), s("2022-01-01", "2023-01-01"));
        assert_eq!(span("我三月份做了什么", r), s("2023-03-01", "2023-04-01"));
        assert_eq!(span("5月3日我在哪", r), s("2022-05-03", "2022-05-04"));
        assert_eq!(span("2022年5月我在哪", r), s("2022-05-01", "2022-06-01"));
        assert_eq!(span("最近三天我做了什么", r), s("2023-03-29", "2023-04-02"));
        assert_eq!(span("三个月前我开始学什么", r), s("2022-12-17", "2023-01-17"));
        assert_eq!(span("我喜欢什么颜色", r), None);
        assert_eq!(span("一个人去旅行", r), None);
    }

    #[test]
    fn phrases_are_the_querys_own_text() {
        let r = at(2023, 4, 1);
        let q = "Which museum did I visit two  months ago, and what did I eat 上周六?";
        let t = resolve(q, r).expect("span");
        assert_eq!(t.phrase, "two  months ago; 上周六");
        assert_eq!(
            (t.from.date_naive().to_string(), t.to.date_naive().to_string()),
            ("2023-01-17".into(), "2023-03-26".into())
        );
    }

    #[test]
    fn proximity_halves_per_half_span() {
        let r = at(2023, 4, 1);
        let t = resolve("last week", r).expect("span");
        assert_eq!(t.proximity(at(2023, 3, 22)), 1.0);
        let p = t.proximity(midnight(NaiveDate::from_ymd_opt(2023, 3, 30).expect("d")));
        assert!((p - 0.5f32.powf(3.0 / 3.5)).abs() < 1e-3, "{p}");
        assert!(t.proximity(at(2022, 1, 1)) < 0.01);
    }

    #[test]
    fn month_arithmetic_clamps() {
        let d = NaiveDate::from_ymd_opt(2023, 3, 31).expect("d");
        assert_eq!(add_months(d, -1), NaiveDate::from_ymd_opt(2023, 2, 28).expect("d"));
        assert_eq!(add_months(d, -15), NaiveDate::from_ymd_opt(2021, 12, 31).expect("d"));
    }
}
