//! Chinese time phrases (see the parent module for what is recognised).

use chrono::{Datelike, Duration, NaiveDate, Weekday};

use super::{
    ago, day, day_span, month_span, month_start, previous, previous_weekend, previous_weeks_day, shift, until_today,
    week_start, year_span, year_start, Found, Unit,
};

/// Characters before 前 that make a word of it (之前 "before", 目前 "at
/// present", 出发前 "before leaving"), so that 之前天天 is not 前天.
const FRONT_WORDS: &str = "之以从目提事先生当眼面跟门床饭睡会发考赛课婚战史往向朝空";

/// The days a fixed phrase names, given the reference day.
type DaysOf = fn(NaiveDate) -> (NaiveDate, NaiveDate);

/// Reads the phrases of `query` into `out`.
pub(super) fn find(query: &str, today: NaiveDate, out: &mut Vec<Found>) {
    if !query.chars().any(crate::text::is_cjk) {
        return;
    }
    let c: Vec<char> = query.chars().collect();
    // Byte offset of each char, and of the end.
    let offs: Vec<usize> = query.char_indices().map(|(i, _)| i).chain(std::iter::once(query.len())).collect();
    let mut i = 0;
    while i < c.len() {
        match phrase(query, &c, &offs, i, today) {
            Some((span, n)) => {
                out.push((offs[i], offs[(i + n).min(c.len())], span.0, span.1));
                i += n.max(1);
            }
            None => i += 1,
        }
    }
}

fn is_numeral(ch: char) -> bool {
    ch.is_ascii_digit() || crate::dedup::zh_numeral(ch).is_some() || matches!(ch, '几' | '幾' | '半')
}

/// The phrase starting at char `i`: its days and how many chars it takes.
fn phrase(
    query: &str,
    c: &[char],
    offs: &[usize],
    i: usize,
    today: NaiveDate,
) -> Option<((NaiveDate, NaiveDate), usize)> {
    let rest = &query[offs[i]..];
    let starts = |p: &str| rest.starts_with(p);
    let len = |p: &str| p.chars().count();
    let prev = if i > 0 { Some(c[i - 1]) } else { None };
    let front_word = prev.is_some_and(|p| FRONT_WORDS.contains(p));
    let next = |k: usize| c.get(i + k).copied();
    let fixed: &[(&str, DaysOf)] = &[
        ("大前天", |t| day(t - Duration::days(3))),
        ("昨天", |t| day(t - Duration::days(1))),
        ("昨日", |t| day(t - Duration::days(1))),
        ("昨晚", |t| day(t - Duration::days(1))),
        ("今天", day),
        ("今日", day),
        ("今晚", day),
        ("去年", |t| previous(t, Unit::Year, 1)),
        ("今年", |t| until_today(year_start(t), t)),
        ("上上个月", |t| previous(t, Unit::Month, 2)),
        ("上上個月", |t| previous(t, Unit::Month, 2)),
        ("上上月", |t| previous(t, Unit::Month, 2)),
        ("上个月", |t| previous(t, Unit::Month, 1)),
        ("上個月", |t| previous(t, Unit::Month, 1)),
        ("上月", |t| previous(t, Unit::Month, 1)),
        ("这个月", |t| until_today(month_start(t), t)),
        ("這個月", |t| until_today(month_start(t), t)),
        ("本月", |t| until_today(month_start(t), t)),
        ("上上周", |t| previous(t, Unit::Week, 2)),
        ("上上週", |t| previous(t, Unit::Week, 2)),
        ("上上星期", |t| previous(t, Unit::Week, 2)),
        ("上上个星期", |t| previous(t, Unit::Week, 2)),
        ("上周末", previous_weekend),
        ("上週末", previous_weekend),
        ("半年前", |t| ago(t, Unit::Month, 6, false)),
        ("半个月前", |t| ago(t, Unit::Day, 15, true)),
    ];
    // 去年5月, 今年三月三号, 前年十二月: the month of that year.
    for (p, back) in [("去年", 1), ("今年", 0), ("前年", 2)] {
        if starts(p) && (back != 2 || !front_word) {
            if let Some((span, n)) = month_phrase(c, i + 2, None, today, Some(today.year() - back)) {
                return Some((span, 2 + n));
            }
        }
    }
    for (p, span) in fixed {
        if starts(p) {
            return Some((span(today), len(p)));
        }
    }
    // 前天, 前年, 前几天 — unless 前 belongs to the word before (之前, 目前).
    if !front_word {
        if starts("前天") && next(2) != Some('天') {
            return Some((day(today - Duration::days(2)), 2));
        }
        if starts("前年") {
            return Some((previous(today, Unit::Year, 2), 2));
        }
        for (p, n) in [("前几天", 3), ("前幾天", 3), ("前些天", 3), ("前两天", 2), ("前些日子", 3)] {
            if starts(p) {
                return Some((ago(today, Unit::Day, n, true), len(p)));
            }
        }
    }
    // Last week (and a day of it), this week.
    for p in ["上个星期", "上個星期", "上星期", "上个礼拜", "上礼拜", "上禮拜", "上周", "上週"]
    {
        if starts(p) {
            let n = len(p);
            if matches!(next(n), Some('围' | '圍' | '边' | '邊')) {
                return None;
            }
            let wd = next(n).and_then(zh_weekday).filter(|_| !(next(n) == Some('一') && next(n + 1) == Some('起')));
            return Some(match wd {
                Some(wd) => (day(previous_weeks_day(today, wd)), n + 1),
                None => (previous(today, Unit::Week, 1), n),
            });
        }
    }
    for p in ["这个星期", "這個星期", "这星期", "这周", "這週", "本周", "本週"] {
        if starts(p) && !matches!(next(len(p)), Some('围' | '圍' | '边' | '邊')) {
            return Some((until_today(week_start(today), today), len(p)));
        }
    }
    // 最近三天, 过去两周, 近一年; 最近 alone: 30 days.
    for p in ["最近", "过去", "過去", "近"] {
        if !starts(p) || (p == "近" && prev == Some('最')) {
            continue;
        }
        let n = len(p);
        if let Some((cnt, _, k)) = count(&c[i + n..], None) {
            if let Some((u, m)) = unit(&c[i + n + k..]) {
                let start = shift(today, u, -cnt);
                return (start.year() >= 1).then_some((until_today(start, today), n + k + m));
            }
        }
        if p == "最近" && next(n) != Some('的') {
            return Some((until_today(today - Duration::days(30), today), n));
        }
        return None;
    }
    // 2022年, or 2022年5月 as one phrase (2022年13月, no month, names no time).
    if let Some(y) = year(c, i).filter(|_| !prev.is_some_and(is_numeral)) {
        // 2022年5月: one phrase, year and month.
        if let Some((span, n)) = month_phrase(c, i + 5, Some('年'), today, Some(y)) {
            return Some((span, n + 5));
        }
        let after = &c[i + 5..];
        let month_follows = count(after, None).is_some_and(|(_, _, k)| after.get(k) == Some(&'月'));
        return if month_follows { None } else { Some((year_span(y)?, 5)) };
    }
    // N units ago; N月, N月M日.
    let (cnt, fuzzy, k) = count(&c[i..], prev)?;
    let (u, m) = unit(&c[i + k..])?;
    let tail = &c[i + k + m..];
    let ago_len = match tail {
        ['前', '往' | '进' | '進' | '面' | '后' | '後', ..] => None,
        ['前', ..] => Some(1),
        ['以' | '之', '前', ..] => Some(2),
        _ => None,
    };
    let month_name = u == Unit::Month && !matches!(c[i + k], '个' | '個');
    if let Some(extra) = ago_len.filter(|_| !month_name) {
        return Some((ago(today, u, cnt, fuzzy), k + m + extra));
    }
    month_phrase(c, i, prev, today, year_before(&c[..i]))
}

/// A month (三月, 5月) with an optional day (5月3日, 五月三号) at char `i`,
/// in `year` or the latest such month not after `today`: its days and the
/// chars taken.
fn month_phrase(
    c: &[char],
    i: usize,
    prev: Option<char>,
    today: NaiveDate,
    year: Option<i32>,
) -> Option<((NaiveDate, NaiveDate), usize)> {
    let (cnt, fuzzy, k) = count(c.get(i..)?, prev)?;
    if fuzzy || !(1..=12).contains(&cnt) || c.get(i + k) != Some(&'月') {
        return None;
    }
    let tail = &c[i + k + 1..];
    let month = u32::try_from(cnt).ok()?;
    let date = count(tail, None).filter(|(_, f, _)| !f).and_then(|(d, _, dk)| {
        matches!(tail.get(dk), Some('日' | '号' | '號')).then_some((u32::try_from(d).ok()?, dk + 1))
    });
    let span = match date {
        Some((d, _)) => day_span(today, month, d, year)?,
        None => month_span(today, month, year)?,
    };
    Some((span, k + 1 + date.map_or(0, |x| x.1)))
}

/// A count at the start of `s` (digits, Chinese numerals through 千, 两,
/// 几 = a fuzzy 3, 十几 = a fuzzy 15, 二十几 = a fuzzy 25): value, fuzzy,
/// chars taken. `None` when it continues a number (`prev` a numeral), is
/// zero, or is over 400.
fn count(s: &[char], prev: Option<char>) -> Option<(i64, bool, usize)> {
    if prev.is_some_and(is_numeral) {
        return None;
    }
    let first = *s.first()?;
    if matches!(first, '几' | '幾') {
        return Some((3, true, 1));
    }
    if first.is_ascii_digit() {
        let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
        let v: i64 = s[..n].iter().collect::<String>().parse().ok()?;
        return (1..=400).contains(&v).then_some((v, false, n));
    }
    let n = s.iter().take_while(|c| crate::dedup::zh_numeral(**c).is_some()).count();
    if n == 0 {
        return None;
    }
    let v = crate::dedup::zh_value(&s[..n])?;
    if !(1.0..=400.0).contains(&v) || v.fract() != 0.0 {
        return None;
    }
    let v = v as i64;
    if matches!(s.get(n), Some('几' | '幾')) && s[n - 1] == '十' {
        return Some((v + 5, true, n + 1));
    }
    Some((v, false, n))
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

/// A unit at the start of `s`: unit and chars taken (个月, 周, 星期, 礼拜,
/// 天, 日, 年; 个 before 月 makes a duration, 三月 is March).
fn unit(s: &[char]) -> Option<(Unit, usize)> {
    let (skip, rest) = match s.first() {
        Some('个' | '個') => (1, &s[1..]),
        _ => (0, s),
    };
    let (u, n) = match rest {
        ['月', ..] => (Unit::Month, 1),
        ['周' | '週', ..] => (Unit::Week, 1),
        ['星', '期', ..] | ['礼' | '禮', '拜', ..] => (Unit::Week, 2),
        ['天' | '日', ..] => (Unit::Day, 1),
        ['年', ..] => (Unit::Year, 1),
        _ => return None,
    };
    Some((u, skip + n))
}

/// Four digits (`2022`, or `二〇二二` digit by digit) and 年 at char `i`:
/// the year.
fn year(c: &[char], i: usize) -> Option<i32> {
    let s = c.get(i..i + 5)?;
    if s[4] != '年' {
        return None;
    }
    let mut y = 0i32;
    for ch in &s[..4] {
        let d = match ch.to_digit(10) {
            Some(d) => d,
            None => crate::dedup::zh_numeral(*ch)?.ok()?,
        };
        y = y * 10 + i32::try_from(d).ok()?;
    }
    (1000..=9999).contains(&y).then_some(y)
}

/// A year written just before a month (`2023年5月`): the year.
fn year_before(before: &[char]) -> Option<i32> {
    let b = before.strip_suffix(&['年'])?;
    let start = b.len().checked_sub(4)?;
    year(before, start)
}
