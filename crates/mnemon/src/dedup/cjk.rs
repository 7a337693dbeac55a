//! The signature of CJK runs: numerals, clock times, negations and content
//! characters.

use super::numbers::{canonical, clock, read_digits, zh_numeral, zh_value, Digits};
use super::FactSignature;
use crate::text::lexicon::{
    zh_classifier, zh_function_char, zh_marker, zh_relation, ZH_FUNCTION_WORDS, ZH_NEGATIONS, ZH_NOT_NEGATIONS,
};

/// Ideographs, kana and Hangul syllables.
pub(super) fn is_cjk_char(c: char) -> bool {
    crate::text::is_cjk(c) || matches!(c, '\u{AC00}'..='\u{D7AF}' | '\u{1100}'..='\u{11FF}')
}

/// CJK punctuation (ideographic space, `、。「」《》…`) and the full-width
/// forms left after NFKC.
pub(super) fn is_cjk_punct(c: char) -> bool {
    !is_cjk_char(c) && matches!(c, '\u{3000}'..='\u{303F}' | '\u{FF00}'..='\u{FFEF}' | '\u{FE30}'..='\u{FE4F}')
}

fn starts_with(rest: &[char], w: &str) -> bool {
    let mut n = 0;
    for (a, b) in rest.iter().zip(w.chars()) {
        if *a != b {
            return false;
        }
        n += 1;
    }
    n == w.chars().count()
}

fn find<'w>(rest: &[char], words: &[&'w str]) -> Option<&'w str> {
    words.iter().copied().find(|w| starts_with(rest, w))
}

/// Adds the facts of one CJK run to `sig`.
pub(super) fn extract(s: &str, sig: &mut FactSignature) {
    // One spelling for "week": 星期二 / 礼拜二 / 周二.
    let s = s.replace("星期", "周").replace("礼拜", "周").replace("周天", "周日");
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    // The previous token was a count or a demonstrative, so a classifier
    // after it carries nothing of its own.
    let mut after_count = false;
    while i < chars.len() {
        let c = chars[i];
        let rest = &chars[i..];
        if c.is_ascii_digit() {
            let (d, j) = read_digits(&chars, i);
            // A minus sign after a character or a space opens the number
            // (气温-5度); after a digit or letter it is a hyphen (3-5天).
            let minus = i >= 1
                && matches!(chars[i - 1], '-' | '\u{2212}')
                && (i == 1 || !(chars[i - 2].is_ascii_alphanumeric() || matches!(chars[i - 2], '-' | '.' | ',' | '/')));
            i = match d {
                Digits::Clock(h, m) => {
                    sig.numbers.insert(clock(h, m));
                    j
                }
                Digits::Value(v) => number_tail(&chars, j, if minus { -v } else { v }, sig),
            };
            after_count = true;
            continue;
        }
        if let Some(w) = find(rest, ZH_NOT_NEGATIONS) {
            sig.names.insert(w.to_string());
            i += w.chars().count();
            after_count = false;
            continue;
        }
        if let Some(w) = find(rest, ZH_FUNCTION_WORDS) {
            let len = w.chars().count();
            let next = chars.get(i + len).copied();
            let prev = i.checked_sub(1).map(|k| chars[k]);
            let is_number = match w {
                // 十分钟: ten minutes, not "very".
                "十分" => next == Some('钟'),
                // 下午一点 / 一点半: one o'clock, not "a little".
                "一点" => {
                    matches!(next, Some('半' | '钟' | '零'))
                        || next.is_some_and(|n| n.is_ascii_digit() || zh_numeral(n).is_some())
                        || matches!(prev, Some('午' | '上' | '晚' | '晨' | '早'))
                }
                _ => false,
            };
            if !is_number {
                note_function_word(w, sig);
                i += len;
                after_count = false;
                continue;
            }
        }
        if let Some((w, canon)) = ZH_NEGATIONS.iter().find(|(w, _)| starts_with(rest, w)) {
            sig.negations.push((*canon).to_string());
            i += w.chars().count();
            after_count = false;
            continue;
        }
        if zh_numeral(c).is_some() {
            let mut j = i;
            while j < chars.len() && zh_numeral(chars[j]).is_some() {
                j += 1;
            }
            // 一个 / 一只 / 一场 before a noun is the indefinite article
            // ("a"), as `a` is in English; other counts are numbers.
            if j == i + 1 && c == '一' && chars.get(j).is_some_and(|n| zh_classifier(*n)) {
                i = j + 1;
                after_count = false;
                continue;
            }
            if let Some(v) = zh_value(&chars[i..j]) {
                i = number_tail(&chars, j, v, sig);
                after_count = true;
                continue;
            }
        }
        i += 1;
        if c == '半' {
            sig.numbers.insert(canonical(0.5));
            after_count = true;
            continue;
        }
        if after_count && zh_classifier(c) {
            after_count = false;
            continue;
        }
        after_count = matches!(c, '这' | '那' | '每' | '几' | '哪' | '某');
        if zh_function_char(c) {
            note_function_word(c.encode_utf8(&mut [0; 4]), sig);
            continue;
        }
        if !is_cjk_char(c) {
            continue;
        }
        sig.names.insert(c.to_string());
    }
}

/// Keeps a function word that qualifies the claim or relates its parts
/// (`会`, `过`, `把`, `从`; see [`zh_marker`] and [`zh_relation`]).
fn note_function_word(w: &str, sig: &mut FactSignature) {
    if let Some(m) = zh_marker(w) {
        sig.markers.push(m.to_string());
    } else if let Some(r) = zh_relation(w) {
        sig.relations.push(r.to_string());
    }
}

/// Records the number `v` that ends before `chars[j]`, reading what may
/// follow it: a scale (`3万`), a clock time (`九点半`, `10点30分`), a
/// currency (`50元`, `一千二百块钱`). Returns the index after all of it.
fn number_tail(chars: &[char], mut j: usize, mut v: f64, sig: &mut FactSignature) -> usize {
    match chars.get(j) {
        Some('万') => {
            v *= 10_000.0;
            j += 1;
        }
        Some('亿') => {
            v *= 100_000_000.0;
            j += 1;
        }
        _ => {}
    }
    if chars.get(j) == Some(&'点') && v.fract() == 0.0 && (0.0..=24.0).contains(&v) {
        let h = v as u32;
        j += 1;
        let mut m = 0u32;
        if chars.get(j) == Some(&'半') {
            m = 30;
            j += 1;
        } else if let Some((mv, end)) = minutes(chars, j) {
            m = mv;
            j = end;
        } else if chars.get(j) == Some(&'钟') {
            j += 1;
        }
        sig.numbers.insert(clock(h, m));
        return j;
    }
    sig.numbers.insert(canonical(v));
    let next = chars.get(j).copied();
    let after = chars.get(j + 1).copied();
    let money_block = next == Some('块') && after.is_none_or(|a| a == '钱' || !is_cjk_char(a));
    if next == Some('元') || money_block {
        sig.numbers.insert("¥".to_string());
        j += 1;
        if chars.get(j) == Some(&'钱') {
            j += 1;
        }
    }
    j
}

/// Minutes after `点`: `30分`, `十五`, `15`.
fn minutes(chars: &[char], j: usize) -> Option<(u32, usize)> {
    let (v, mut end) = if chars.get(j).is_some_and(char::is_ascii_digit) {
        match read_digits(chars, j) {
            (Digits::Value(v), end) => (v, end),
            _ => return None,
        }
    } else {
        let mut end = j;
        while end < chars.len() && zh_numeral(chars[end]).is_some() {
            end += 1;
        }
        (zh_value(&chars[j..end])?, end)
    };
    if v.fract() != 0.0 || !(0.0..60.0).contains(&v) {
        return None;
    }
    if chars.get(end) == Some(&'分') {
        end += 1;
    } else if v < 10.0 {
        // 九点一起去: a lone small numeral after 点 is not minutes.
        return None;
    }
    Some((v as u32, end))
}
