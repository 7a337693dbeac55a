//! Numbers written with digits, and Chinese numerals, in canonical form.

/// A number read from digits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Digits {
    /// A plain or decimal number.
    Value(f64),
    /// A clock time `H:MM` (hours may exceed 23 only as written).
    Clock(u32, u32),
}

/// Canonical text of a number: `1200`, `3.5`, `0.5` (Rust's shortest
/// round-trip form, which drops a zero fraction).
pub(super) fn canonical(v: f64) -> String {
    format!("{v}")
}

/// Canonical text of a clock time.
pub(super) fn clock(h: u32, m: u32) -> String {
    format!("{h}:{m:02}")
}

/// Reads a number starting at `chars[i]` (an ASCII digit): digits with
/// thousands separators (`1,200`), a decimal part (`3.5`), or a clock time
/// (`9:30`). Returns the number and the index after it.
pub(super) fn read_digits(chars: &[char], i: usize) -> (Digits, usize) {
    let run = |from: usize| {
        let mut j = from;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut end = run(i);
    let mut int: String = chars[i..end].iter().collect();
    // Thousands separators: a comma followed by exactly three digits.
    while end + 3 < chars.len() + 1
        && chars.get(end) == Some(&',')
        && run(end + 1) == end + 4
        && (end + 4 >= chars.len() || !chars[end + 4].is_ascii_digit())
    {
        int.extend(&chars[end + 1..end + 4]);
        end += 4;
    }
    if chars.get(end) == Some(&':') && run(end + 1) == end + 3 {
        let h = int.parse::<u32>().unwrap_or(u32::MAX);
        let m: String = chars[end + 1..end + 3].iter().collect();
        let m = m.parse::<u32>().unwrap_or(0);
        if h <= 24 && m < 60 {
            return (Digits::Clock(h, m), end + 3);
        }
    }
    let mut text = int;
    if chars.get(end) == Some(&'.') && end + 1 < chars.len() && chars[end + 1].is_ascii_digit() {
        let frac_end = run(end + 1);
        text.push('.');
        text.extend(&chars[end + 1..frac_end]);
        end = frac_end;
    }
    (Digits::Value(text.parse::<f64>().unwrap_or(f64::NAN)), end)
}

/// Value of a Chinese numeral character: `Some(Ok(digit))` for 〇零一二两俩
/// 三…九, `Some(Err(unit))` for 十百千万亿, `None` otherwise.
pub(crate) fn zh_numeral(c: char) -> Option<Result<u32, u64>> {
    Some(match c {
        '零' | '〇' => Ok(0),
        '一' => Ok(1),
        '二' | '两' | '俩' => Ok(2),
        '三' => Ok(3),
        '四' => Ok(4),
        '五' => Ok(5),
        '六' => Ok(6),
        '七' => Ok(7),
        '八' => Ok(8),
        '九' => Ok(9),
        '十' => Err(10),
        '百' => Err(100),
        '千' => Err(1000),
        '万' => Err(10_000),
        '亿' => Err(100_000_000),
        _ => return None,
    })
}

/// Value of a run of Chinese numerals: positional (`二十五` = 25, `一千零二`
/// = 1002, `三万五` = 35000 and `一千二` = 1200, as spoken) or, without unit
/// characters, digit by digit (`二〇二四` = 2024).
pub(crate) fn zh_value(run: &[char]) -> Option<f64> {
    let parts: Vec<Result<u32, u64>> = run.iter().map(|c| zh_numeral(*c)).collect::<Option<_>>()?;
    if parts.is_empty() {
        return None;
    }
    if parts.len() > 1 && parts.iter().all(|p| p.is_ok()) {
        let s: String = parts.iter().filter_map(|p| p.ok()).map(|d| char::from(b'0' + d as u8)).collect();
        return s.parse::<f64>().ok();
    }
    let (mut total, mut section, mut digit) = (0f64, 0f64, None::<f64>);
    // The unit a trailing digit counts in when spoken without one (一千二).
    let mut implied = 1f64;
    for p in parts {
        match p {
            Ok(0) => {
                if let Some(d) = digit.take() {
                    section += d;
                }
                implied = 1.0;
            }
            Ok(d) => digit = Some(f64::from(d)),
            Err(u) if u >= 10_000 => {
                let u = u as f64;
                section += digit.take().unwrap_or(0.0);
                if section == 0.0 {
                    section = 1.0;
                }
                // 亿 scales everything before it; 万 only its own section.
                if u >= 100_000_000.0 {
                    total = (total + section) * u;
                } else {
                    total += section * u;
                }
                section = 0.0;
                implied = u / 10.0;
            }
            Err(u) => {
                let u = u as f64;
                section += digit.take().unwrap_or(1.0) * u;
                implied = u / 10.0;
            }
        }
    }
    if let Some(d) = digit {
        section += d * implied.max(1.0);
    }
    Some(total + section)
}
