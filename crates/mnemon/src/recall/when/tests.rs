use chrono::{FixedOffset, TimeZone};

use super::*;

/// 08:30 UTC on that day.
fn at(y: i32, m: u32, d: u32) -> DateTime<FixedOffset> {
    Utc.with_ymd_and_hms(y, m, d, 8, 30, 0).single().expect("date").fixed_offset()
}

/// Each phrase's days, `[from, to)`, as `YYYY-MM-DD`.
fn spans(q: &str, r: DateTime<FixedOffset>) -> Vec<(String, String, String)> {
    resolve(q, r)
        .map(|t| {
            t.spans
                .iter()
                .map(|s| (s.phrase.clone(), s.from.format("%Y-%m-%d").to_string(), s.to.format("%Y-%m-%d").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn one(q: &str, r: DateTime<FixedOffset>) -> Option<(String, String)> {
    let s = spans(q, r);
    assert!(s.len() <= 1, "{q}: {s:?}");
    s.into_iter().next().map(|(_, a, b)| (a, b))
}

fn s(a: &str, b: &str) -> Option<(String, String)> {
    Some((a.to_string(), b.to_string()))
}

#[test]
fn english_expressions() {
    // 2023-04-01 is a Saturday.
    let r = at(2023, 4, 1);
    assert_eq!(one("Which book did I finish a week ago?", r), s("2023-03-22", "2023-03-29"));
    assert_eq!(one("What did I do two months ago?", r), s("2023-01-17", "2023-02-17"));
    assert_eq!(one("I received a piece of jewelry last Saturday from whom?", r), s("2023-03-25", "2023-03-26"));
    assert_eq!(one("What did I buy last month?", r), s("2023-03-01", "2023-04-01"));
    assert_eq!(one("How many plants did I get in the past month?", r), s("2023-03-01", "2023-04-02"));
    assert_eq!(one("How many doctor's appointments did I go to in March?", r), s("2023-03-01", "2023-04-01"));
    assert_eq!(one("what did i do in march", r), s("2023-03-01", "2023-04-01"));
    assert_eq!(one("What happened in December?", r), s("2022-12-01", "2023-01-01"));
    assert_eq!(one("I cooked something a couple of days ago.", r), s("2023-03-28", "2023-04-02"));
    assert_eq!(one("What did I do yesterday", r), s("2023-03-31", "2023-04-01"));
    assert_eq!(one("What did we eat last night?", r), s("2023-03-31", "2023-04-01"));
    assert_eq!(one("What game did I beat last weekend?", r), s("2023-03-25", "2023-03-27"));
    assert_eq!(one("Where did we go last week?", r), s("2023-03-20", "2023-03-27"));
    assert_eq!(one("What did I get on March 5th, 2022?", r), s("2022-03-05", "2022-03-06"));
    assert_eq!(one("What did Gina find on 1 February, 2023?", r), s("2023-02-01", "2023-02-02"));
    assert_eq!(one("the pet he lost on the 3rd of June", r), s("2022-06-03", "2022-06-04"));
    assert_eq!(one("What setback did Melanie face in October 2023?", r), s("2023-10-01", "2023-11-01"));
    assert_eq!(one("Trips in 2021", r), s("2021-01-01", "2022-01-01"));
    assert_eq!(one("What have I done earlier this month?", r), s("2023-04-01", "2023-04-02"));
    assert_eq!(one("The past few months were busy", r), s("2023-01-01", "2023-04-02"));
    assert_eq!(one("What did I do on May 3rd?", r), s("2022-05-03", "2022-05-04"));
    assert_eq!(one("Plans for early May", r), s("2022-05-01", "2022-06-01"));
    assert_eq!(one("Where was I on February 29?", r), s("2020-02-29", "2020-03-01"));
    assert_eq!(one("What happened on 2022-05-03?", r), s("2022-05-03", "2022-05-04"));
    assert_eq!(one("WHAT HAPPENED ON MAY 3", r), s("2022-05-03", "2022-05-04"));
}

#[test]
fn english_words_that_are_not_times() {
    let r = at(2023, 4, 1);
    for q in [
        "May I ask what my cat's name is?",
        "What may help with my back pain?",
        "What was the first issue with my car?",
        "How many days did it take?",
        "Who did I meet at the march for climate?",
        "What did April say about the trip?",
        "Did June like the cake?",
        "Taking 2 may help",
        "What did I do on my last day at work?",
        "What happened in the last year of college?",
        "Jon's last week was hard",
        "The pipeline moved 1.5 years ago",
    ] {
        assert_eq!(spans(q, r), Vec::<(String, String, String)>::new(), "{q}");
    }
    // "the last week of June" is June, not last week.
    assert_eq!(one("What did I do the last week of June?", r), s("2022-06-01", "2022-07-01"));
}

#[test]
fn chinese_expressions() {
    let r = at(2023, 4, 1);
    assert_eq!(one("我上个月买了什么？", r), s("2023-03-01", "2023-04-01"));
    assert_eq!(one("三天前我去了哪里", r), s("2023-03-29", "2023-03-30"));
    assert_eq!(one("两周前我见了谁", r), s("2023-03-15", "2023-03-22"));
    assert_eq!(one("我昨天吃了什么", r), s("2023-03-31", "2023-04-01"));
    assert_eq!(one("上周六我做了什么", r), s("2023-03-25", "2023-03-26"));
    assert_eq!(one("上周末去哪玩了", r), s("2023-03-25", "2023-03-27"));
    assert_eq!(one("去年我去了哪些国家", r), s("2022-01-01", "2023-01-01"));
    assert_eq!(one("我三月份做了什么", r), s("2023-03-01", "2023-04-01"));
    assert_eq!(one("十二月我在哪", r), s("2022-12-01", "2023-01-01"));
    assert_eq!(one("5月3日我在哪", r), s("2022-05-03", "2022-05-04"));
    assert_eq!(one("2022年5月我在哪", r), s("2022-05-01", "2022-06-01"));
    assert_eq!(one("2022年我在哪", r), s("2022-01-01", "2023-01-01"));
    assert_eq!(one("最近三天我做了什么", r), s("2023-03-29", "2023-04-02"));
    assert_eq!(one("最近我在忙什么", r), s("2023-03-02", "2023-04-02"));
    assert_eq!(one("三个月前我开始学什么", r), s("2022-12-17", "2023-01-17"));
    assert_eq!(one("前几天我买了什么", r), s("2023-03-27", "2023-04-01"));
    assert_eq!(one("半年前我在哪工作", r), s("2022-09-16", "2022-10-17"));
    assert_eq!(one("上上周我见了谁", r), s("2023-03-13", "2023-03-20"));
    assert_eq!(one("十几天前的事", r), s("2023-03-15", "2023-03-20"));
    assert_eq!(one("去年5月我在哪", r), s("2022-05-01", "2022-06-01"));
    assert_eq!(one("今年三月三号我见了谁", r), s("2023-03-03", "2023-03-04"));
    assert_eq!(one("二〇二二年五月我在哪", r), s("2022-05-01", "2022-06-01"));
    // A year with its month is one phrase, named whole.
    let phrases = |q: &str| spans(q, r).into_iter().map(|(p, _, _)| p).collect::<Vec<_>>();
    assert_eq!(phrases("2022年5月我在哪"), ["2022年5月"]);
    assert_eq!(phrases("二〇二二年五月三号我在哪"), ["二〇二二年五月三号"]);
    assert_eq!(one("二〇二二年五月三号我在哪", r), s("2022-05-03", "2022-05-04"));
    assert_eq!(phrases("2021年我在哪"), ["2021年"]);
    // An English preposition before a Chinese year-month takes nothing apart.
    assert_eq!(phrases("What happened in 2024年3月?"), ["2024年3月"]);
    assert_eq!(one("What happened in 2024年3月?", r), s("2024-03-01", "2024-04-01"));
    assert_eq!(phrases("What happened in 2024?"), ["in 2024"]);
}

#[test]
fn last_and_this_with_a_month() {
    // 2023-04-01: "last March" is March 2023, "last April" April 2022
    // (asked in April, the April before), "last December" December 2022.
    let r = at(2023, 4, 1);
    assert_eq!(one("What did I do last March?", r), s("2023-03-01", "2023-04-01"));
    assert_eq!(one("Where was I last April?", r), s("2022-04-01", "2022-05-01"));
    assert_eq!(one("the trip previous December", r), s("2022-12-01", "2023-01-01"));
    assert_eq!(one("Which concert did I see last May?", r), s("2022-05-01", "2022-06-01"));
    assert_eq!(one("What are my plans for this June?", r), s("2023-06-01", "2023-07-01"));
    assert_eq!(one("What did I do this March?", r), s("2023-03-01", "2023-04-01"));
    let phrases = spans("What did I do last March?", r).into_iter().map(|(p, _, _)| p).collect::<Vec<_>>();
    assert_eq!(phrases, ["last March"]);
    // Not months: a possessive before "last", and a short form.
    assert_eq!(one("my last march for peace", r), None);
    assert_eq!(one("last mar", r), None);
    // "may" the verb: only a capitalised May after last/this is the month.
    assert_eq!(one("this may help with the garden", r), None);
    assert_eq!(one("At last may I ask about the garden", r), None);
    assert_eq!(one("What did I plant this May?", r), s("2023-05-01", "2023-06-01"));
    assert_eq!(one("At last, May I ask about the garden?", r), None);
    assert_eq!(one("I joined the last march", r), None);
    assert_eq!(one("How long was this march?", r), None);
    assert_eq!(one("what did i do last march?", r), None);
    // A day or a year after the month is read with it.
    assert_eq!(one("What did I do last March 5th?", r), s("2023-03-05", "2023-03-06"));
    assert_eq!(one("Where was I this March 2022?", r), s("2022-03-01", "2022-04-01"));
}

#[test]
fn chinese_words_that_are_not_times() {
    let r = at(2023, 4, 1);
    for q in [
        "我喜欢什么颜色",
        "一个人去旅行",
        "最近的超市在哪",
        "我们靠近日本吗",
        "接近日落的时候",
        "附近天气怎么样",
        "走过去天安门",
        "出发前天气很好",
        "之前天天加班",
        "爬上周围的山",
        "三天前往北京",
        "一周两次",
    ] {
        assert_eq!(spans(q, r), Vec::<(String, String, String)>::new(), "{q}");
    }
    // A count never starts inside a longer number.
    assert_eq!(spans("1200天前", r), Vec::<(String, String, String)>::new());
    // 上周一起 is "together last week", not last Monday.
    assert_eq!(one("上周一起吃饭的是谁", r), s("2023-03-20", "2023-03-27"));
}

#[test]
fn each_phrase_keeps_its_span_and_the_query_its_text() {
    let r = at(2023, 4, 1);
    let q = "Which museum did I visit two  months ago, and what did I eat 上周六?";
    let t = resolve(q, r).expect("span");
    assert_eq!(t.phrase, "two  months ago; 上周六");
    assert_eq!(t.spans.len(), 2);
    // A memory from early March is near neither span: the union would
    // have held it.
    let march = Utc.with_ymd_and_hms(2023, 3, 5, 12, 0, 0).single().expect("t");
    assert!(t.proximity(march) < 0.5, "{}", t.proximity(march));
    assert_eq!(t.proximity(Utc.with_ymd_and_hms(2023, 3, 25, 12, 0, 0).single().expect("t")), 1.0);
}

#[test]
fn days_begin_in_the_reference_times_offset() {
    // 07:00 on 1 April in UTC+8 is still 31 March in UTC.
    let east = FixedOffset::east_opt(8 * 3600).expect("offset");
    let r = east.with_ymd_and_hms(2023, 4, 1, 7, 0, 0).single().expect("t");
    let t = resolve("我昨天吃了什么", r).expect("span");
    assert_eq!(t.from, Utc.with_ymd_and_hms(2023, 3, 30, 16, 0, 0).single().expect("t"));
    assert_eq!(t.to, Utc.with_ymd_and_hms(2023, 3, 31, 16, 0, 0).single().expect("t"));
}

#[test]
fn spans_outside_rfc_3339_years_are_none() {
    let r = Utc.with_ymd_and_hms(9999, 12, 31, 12, 0, 0).single().expect("t").fixed_offset();
    assert_eq!(resolve("today", r), None);
    let r = Utc.with_ymd_and_hms(1, 1, 3, 12, 0, 0).single().expect("t").fixed_offset();
    assert_eq!(resolve("last week", r), None);
}

#[test]
fn a_reference_at_the_edge_of_chronos_range_is_no_time() {
    let west = FixedOffset::west_opt(3600).expect("offset");
    assert_eq!(resolve("last week", DateTime::<Utc>::MIN_UTC.with_timezone(&west)), None);
    let east = FixedOffset::east_opt(3600).expect("offset");
    assert_eq!(resolve("yesterday", DateTime::<Utc>::MAX_UTC.with_timezone(&east)), None);
}

#[test]
fn proximity_halves_per_half_span() {
    let r = at(2023, 4, 1);
    let t = resolve("last week", r).expect("span");
    assert_eq!(t.proximity(Utc.with_ymd_and_hms(2023, 3, 22, 8, 0, 0).single().expect("t")), 1.0);
    let p = t.proximity(Utc.with_ymd_and_hms(2023, 3, 30, 0, 0, 0).single().expect("t"));
    assert!((p - 0.5f32.powf(3.0 / 3.5)).abs() < 1e-3, "{p}");
    assert!(t.proximity(Utc.with_ymd_and_hms(2022, 1, 1, 0, 0, 0).single().expect("t")) < 0.01);
}

#[test]
fn month_arithmetic_clamps() {
    let d = NaiveDate::from_ymd_opt(2023, 3, 31).expect("d");
    assert_eq!(add_months(d, -1), NaiveDate::from_ymd_opt(2023, 2, 28).expect("d"));
    assert_eq!(add_months(d, -15), NaiveDate::from_ymd_opt(2021, 12, 31).expect("d"));
}
