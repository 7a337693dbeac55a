//! English time phrases (see the parent module for what is recognised).

use chrono::{Datelike, Duration, NaiveDate, Weekday};

use super::{
    ago, day, day_span, last_weekday, month_span, period, previous, previous_weekend, shift, until_today, year_span,
    Found, Unit,
};

/// Words before a month name that make it one ("in March", "early May").
const MONTH_PREPOSITIONS: &[&str] =
    &["in", "of", "since", "during", "until", "till", "early", "late", "mid", "by", "before", "after", "through"];

/// Words before "last" that make it an order, not a time ("my last day").
const POSSESSIVES: &[&str] = &["my", "your", "his", "her", "our", "their", "its", "s"];

/// One word: lower-cased, as written, and its byte range.
struct Word<'a> {
    lower: String,
    raw: &'a str,
    start: usize,
    end: usize,
}

/// The ASCII words of `s` (letters and digits), with their byte ranges;
/// other scripts are left to the Chinese reader.
fn words(s: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        match (c.is_ascii_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                out.push(Word { lower: s[a..i].to_ascii_lowercase(), raw: &s[a..i], start: a, end: i });
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// A calendar unit word (`day`, `weeks`, `mos`, `yrs`: the fact signature's
/// [`crate::text::lexicon::en_unit`]).
fn unit(w: &str) -> Option<Unit> {
    Some(match crate::text::lexicon::en_unit(w)? {
        "day" => Unit::Day,
        "week" => Unit::Week,
        "month" => Unit::Month,
        "year" => Unit::Year,
        _ => return None,
    })
}

fn plural(w: &str) -> bool {
    w.ends_with('s')
}

fn weekday(w: &str) -> Option<Weekday> {
    Some(match crate::text::lexicon::en_weekday(w)? {
        "monday" => Weekday::Mon,
        "tuesday" => Weekday::Tue,
        "wednesday" => Weekday::Wed,
        "thursday" => Weekday::Thu,
        "friday" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        _ => Weekday::Sun,
    })
}

/// A month name at word `i` (any spelling the fact signature knows):
/// month (1-based) and whether it was a short form (`mar`, `sept`).
fn month(w: &str) -> Option<(u32, bool)> {
    let name = crate::text::lexicon::en_month(w, true)?;
    let m = crate::text::lexicon::EN_MONTHS.iter().position(|x| *x == name)?;
    Some((u32::try_from(m + 1).ok()?, name != w))
}

/// Written with a capital first letter (`May`, `MAY`).
fn capital(raw: &str) -> bool {
    raw.starts_with(|c: char| c.is_ascii_uppercase())
}

fn ordinal_day(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if !matches!(&w[digits.len()..], "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
}

fn year_of(w: &str) -> Option<i32> {
    (w.len() == 4).then(|| w.parse::<i32>().ok()).flatten().filter(|y| (1000..=9999).contains(y))
}

/// Reads the phrases of `query` into `out`.
pub(super) fn find(query: &str, today: NaiveDate, out: &mut Vec<Found>) {
    let ws = words(query);
    let w: Vec<&str> = ws.iter().map(|x| x.lower.as_str()).collect();
    let mut i = 0;
    while i < w.len() {
        let n = match phrase(query, &ws, &w, i, today) {
            Some((span, n)) => {
                out.push((ws[i].start, ws[i + n - 1].end, span.0, span.1));
                n
            }
            None => 1,
        };
        i += n;
    }
}

/// The phrase starting at word `i`: its days and how many words it takes.
fn phrase(
    query: &str,
    ws: &[Word<'_>],
    w: &[&str],
    i: usize,
    today: NaiveDate,
) -> Option<((NaiveDate, NaiveDate), usize)> {
    let at = |k: usize| w.get(i + k).copied().unwrap_or("");
    let prev = if i > 0 { w[i - 1] } else { "" };
    match at(0) {
        "today" | "tonight" => return Some((day(today), 1)),
        "this" if matches!(at(1), "morning" | "afternoon" | "evening") => return Some((day(today), 2)),
        "yesterday" => return Some((day(today - Duration::days(1)), 1)),
        "last" if at(1) == "night" => return Some((day(today - Duration::days(1)), 2)),
        "the" if at(1) == "day" && at(2) == "before" && at(3) == "yesterday" => {
            return Some((day(today - Duration::days(2)), 4))
        }
        "recently" | "lately" => return Some((until_today(today - Duration::days(30), today), 1)),
        "last" | "past" | "previous" | "this" | "earlier" if !POSSESSIVES.contains(&prev) => {
            // A month right after last/this ("last March", "this June"),
            // separated by spaces only, never after "the"/"a" ("the last
            // march"), written with a capital where the name is also a word
            // ("this may help", "this march was long"), and not followed by
            // a day or year, which the month reader below takes whole
            // ("last March 5th", "this March 2022").
            let month_ok = ws.get(i + 1).is_some_and(|x| {
                query[ws[i].end..x.start].chars().all(char::is_whitespace)
                    && !matches!(prev, "the" | "a")
                    && crate::text::lexicon::en_month(&x.lower, capital(x.raw)).is_some()
                    && ordinal_day(at(2)).is_none()
                    && year_of(at(2)).is_none()
            });
            return relative(w, i, today, month_ok).filter(|(_, n)| at(*n) != "of");
        }
        "the" if matches!(at(1), "last" | "past" | "previous") => {
            return rolling(w, i + 2, today).map(|(span, n)| (span, n + 2)).filter(|(_, n)| at(*n) != "of");
        }
        // Not a year written with 年, which the Chinese reader takes with
        // its month ("in 2024年3月").
        "in" | "during"
            if year_of(at(1)).is_some()
                && month(at(2)).is_none()
                && !ws.get(i + 1).is_some_and(|x| query[x.end..].starts_with('年')) =>
        {
            return Some((year_span(year_of(at(1))?)?, 2));
        }
        _ => {}
    }
    // A day before its month: "1 February, 2023", "the 3rd of June".
    if let Some(d) = ordinal_day(w[i]) {
        let of = usize::from(at(1) == "of");
        if let Some((m, _)) = month(at(1 + of)).filter(|_| at(1 + of) != "may" || capital(ws[i + 1 + of].raw)) {
            let year = year_of(at(2 + of));
            return Some((day_span(today, m, d, year)?, 2 + of + usize::from(year.is_some())));
        }
    }
    // An ISO date: 2026-05-03.
    if let (Some(y), true) = (year_of(w[i]), i + 2 < ws.len()) {
        let dashed = |a: usize| &query[ws[a].end..ws[a + 1].start] == "-";
        if dashed(i) && dashed(i + 1) && w[i + 1].len() <= 2 && w[i + 2].len() <= 2 {
            if let (Ok(m), Ok(d)) = (w[i + 1].parse::<u32>(), w[i + 2].parse::<u32>()) {
                return Some((day_span(today, m, d, Some(y))?, 3));
            }
        }
    }
    // N units ago ("1.5 years ago" is not "5 years ago").
    let decimal = i > 0 && ws[i - 1].end + 1 == ws[i].start && matches!(&query[ws[i - 1].end..ws[i].start], "." | ",");
    if let Some((n, fuzzy, k)) = count(w, i).filter(|_| !decimal) {
        if let Some(u) = unit(at(k)) {
            if at(k + 1) == "ago" {
                return Some((ago(today, u, n, fuzzy), k + 2));
            }
        }
    }
    // Month names, next to a preposition or a number.
    let (m, short) = month(w[i])?;
    let day_n = ordinal_day(at(1));
    let year = year_of(at(1)).or_else(|| day_n.and_then(|_| year_of(at(2))));
    let numbered = day_n.is_some() || year.is_some();
    let after_preposition = MONTH_PREPOSITIONS.contains(&prev);
    let may_ok = w[i] != "may" || capital(ws[i].raw) || after_preposition;
    if !(may_ok && (numbered || after_preposition && !short)) {
        return None;
    }
    let span = match day_n {
        Some(d) => day_span(today, m, d, year)?,
        None => month_span(today, m, year)?,
    };
    Some((span, 1 + usize::from(day_n.is_some()) + usize::from(year.is_some())))
}

/// A count at word `i`: value, whether it is fuzzy, words taken.
fn count(w: &[&str], i: usize) -> Option<(i64, bool, usize)> {
    let at = |k: usize| w.get(i + k).copied().unwrap_or("");
    match (at(0), at(1)) {
        ("a" | "an", "couple") if at(2) == "of" => return Some((2, true, 3)),
        ("couple", "of") => return Some((2, true, 2)),
        ("a", "few") => return Some((3, true, 2)),
        ("few" | "several", _) => return Some((3, true, 1)),
        ("a" | "an" | "one", _) => return Some((1, false, 1)),
        _ => {}
    }
    if let Ok(n) = at(0).parse::<i64>() {
        return (1..=400).contains(&n).then_some((n, false, 1));
    }
    match crate::text::lexicon::en_number(at(0))? {
        crate::text::lexicon::NumberWord::Unit(v) if v >= 1.0 && v.fract() == 0.0 => Some((v as i64, false, 1)),
        _ => None,
    }
}

/// `last|past|previous|this|earlier …` at word `i`.
/// `month_ok`: the word after may be read as a month name (see `phrase`).
fn relative(w: &[&str], i: usize, today: NaiveDate, month_ok: bool) -> Option<((NaiveDate, NaiveDate), usize)> {
    let at = |k: usize| w.get(i + k).copied().unwrap_or("");
    let month_name = |word: &str| month(word).filter(|(_, short)| !short && month_ok);
    match (w[i], at(1)) {
        ("earlier", "this") => {
            let u = unit(at(2)).filter(|u| *u != Unit::Day && !plural(at(2)))?;
            Some((until_today(period(today, u).0, today), 3))
        }
        // "this March": the month of this year; "last March": the latest
        // March before this month (asked in March, a year ago). Full month
        // names only ("last mar" is not a date anyone writes).
        ("this", word) if month_name(word).is_some() => {
            let (m, _) = month_name(word)?;
            Some((month_span(today, m, Some(today.year()))?, 2))
        }
        ("last" | "previous", word) if month_name(word).is_some() => {
            let (m, _) = month_name(word)?;
            let y = if m < today.month() { today.year() } else { today.year() - 1 };
            Some((month_span(today, m, Some(y))?, 2))
        }
        ("this", word) => {
            let u = unit(word).filter(|u| *u != Unit::Day && !plural(word))?;
            Some((until_today(period(today, u).0, today), 2))
        }
        ("last" | "previous", "weekend") => Some((previous_weekend(today), 2)),
        ("last" | "previous", word) if weekday(word).is_some() && !plural(word) => {
            Some((day(last_weekday(today, weekday(word)?)), 2))
        }
        ("last" | "previous", word) if unit(word).is_some() && !plural(word) => {
            let u = unit(word)?;
            if u == Unit::Day {
                return Some((until_today(today - Duration::days(1), today), 2));
            }
            Some((previous(today, u, 1), 2))
        }
        ("past" | "last", _) => rolling(w, i + 1, today).map(|(span, n)| (span, n + 1)),
        _ => None,
    }
}

/// `[N] units` at word `i` after "past" / "the last": from N units back to
/// today.
fn rolling(w: &[&str], i: usize, today: NaiveDate) -> Option<((NaiveDate, NaiveDate), usize)> {
    let (n, _, k) = count(w, i).unwrap_or((1, false, 0));
    let u = unit(w.get(i + k).copied().unwrap_or(""))?;
    let start = shift(today, u, -n);
    (start.year() >= 1).then_some((until_today(start, today), k + 1))
}
