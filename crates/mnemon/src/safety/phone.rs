//! Telephone-number confirmation for the redactor.
//!
//! The redactor's scanner ([`super::redact`]) proposes loose candidates: runs
//! of digits joined by spaces, dashes, dots or parentheses, optionally after
//! `+` or `00`. This module decides which of them are telephone numbers, with
//! the metadata of Google's libphonenumber (through the `rlibphonenumber`
//! port, metadata release 9.0.42), and which are quantities, dates or codes
//! that merely look like one.
//!
//! # Which numbers are redacted
//!
//! A candidate written **internationally** (`+44 20 7946 0958`,
//! `0044 20 7946 0958`, `(+86) 138 1234 5678`, `+44 (0)20 7946 0958`) is
//! parsed with the region of its own country calling code; the calling code
//! must be written as a group of its own unless the whole number is one run
//! (`+8613812345678`), so a signed quantity such as `+100 000 000` never
//! reads as `+1 00 000 000`.
//!
//! A candidate written **nationally** (`07700 900456`, `(415) 555-0100`,
//! `03-1234-5678`, `13812345678`) is parsed with each of the
//! [`PhoneRegions`] in turn (default [`DEFAULT_PHONE_REGIONS`]: CN, US, GB,
//! DE, FR, JP); the first region under which it is redacted decides. National
//! forms must carry the national (trunk) prefix wherever the region writes
//! one: `020 7946 0958` is a London number, `20 7946 0958` and the French
//! reading of `100 000 000` are not. A prefix the region dials but does not
//! write (NANP `1-415-555-0100`) is accepted. A number read with no prefix at
//! all (NANP `415 555 0100`, CN mobile `138 1234 5678`) has only its grouping
//! to show it is a phone number: the groups must be the library's, with the
//! first one (the area code) set apart, and a single bare run must have 11
//! digits (`13812345678`) or follow a word such as `phone`, `call`,
//! `number`, `电话` or `手机` within 32 characters — a bare `8703211000` is
//! as often a customs, product or order code.
//!
//! A parsed number is then redacted when either
//!
//! 1. libphonenumber says it is **valid** and its type carries personal data:
//!    mobile, fixed line, fixed line or mobile, VoIP, personal number, pager,
//!    voicemail. Toll-free, premium-rate, shared-cost and UAN numbers
//!    (`0800 123 4567`) are service numbers of organisations and stay in
//!    clear, unless another region reads the same national digits as a
//!    personal number; or
//! 2. it is not valid, but it is a **full-length possible number written
//!    with its prefix** (national trunk prefix or country code) **and grouped
//!    the way libphonenumber formats it** (each group boundary of the
//!    candidate is one of the library's, or the number is one run). This
//!    keeps numbers from unallocated and reserved ranges, such as the UK's
//!    drama range `07700 900xxx`, from leaking just because the range is not
//!    in service.
//!
//! Numbers joined by dots, and national numbers of four or more runs of at
//! most three digits (`01 23 45 67 89`, but also `20 25 30 40 50`), must be
//! grouped the library's way even when valid.
//!
//! A CN mobile number (calling code 86, type mobile) is reported as
//! [`PiiKind::CnMobile`], every other number as [`PiiKind::Phone`].
//!
//! # What is never a phone number
//!
//! Checked before the library is asked (shape and context): dates
//! (`2023-11-05`, `05.11.2023`, `11 05 2023`, `20231105`), numbers in
//! thousands grouping written nationally (`13 800 000 000`,
//! `1.234.567.890`), ISBNs (4–5 groups ending in a one-digit check group,
//! checksum verified), IPv4 addresses, decimals (one dot, unless after a
//! trunk-prefixed area code such as `030.123456`), ranges from a lone `0`
//! (`0–4294967295`), amounts (a currency sign just before, or `%`, `‰`,
//! `元`, `万`, `亿`, … just after), identifiers (`#` or `№` just before; a
//! label such as `Order`, `Invoice No.`, `Ref:`, `code`, `ISBN`, `订单号`,
//! `编号` just before), digit chains glued to a word (`DE89 3704 0044 0532
//! 0130 00`, `bjo-2022-321842`, `…/2365515882.py`), and the tail of an
//! international number read as a national one (`+44 901 234 5678` holds no
//! `901 234 5678`). Mixed separators beyond the first, other than spaces
//! then dashes (`+7 912 345-67-89`), break a candidate too
//! (`2023-11-05 12`).
//!
//! # Cost
//!
//! Shape and context checks are a few comparisons per digit run; only a
//! candidate that passes them is parsed: once when written internationally,
//! up to once per region when written nationally (a few microseconds each;
//! `benches/phones.rs` measures both, and real conversation text, against
//! the pattern-only redactor). Verdicts are memoised for the duration of one
//! [`super::Redactor::find`] call, which rescans after replacing.

use std::collections::HashMap;

use rlibphonenumber::enums::Region;
use rlibphonenumber::{NumberLengthType, PhoneNumber, PhoneNumberFormat, PhoneNumberType, PHONE_NUMBER_UTIL};

use super::redact::PiiKind;
use crate::error::{Error, Result};

/// Regions whose national number formats the redactor reads when no
/// [`PhoneRegions`] are configured: mainland China, the United States (and so
/// the NANP), the United Kingdom, Germany, France and Japan. International
/// (`+CC`, `00CC`) numbers of every region are read regardless.
pub const DEFAULT_PHONE_REGIONS: [&str; 6] = ["CN", "US", "GB", "DE", "FR", "JP"];

/// Most regions one [`PhoneRegions`] holds: every region in the library's
/// metadata (245 in release 9.0.42) fits.
pub const MAX_PHONE_REGIONS: usize = 300;

/// A validated, ordered list of regions (ISO 3166-1 alpha-2 codes known to
/// libphonenumber) used to read nationally written phone numbers.
///
/// Order matters only when two regions both accept a candidate: the first
/// decides its kind. Duplicates are dropped. An empty list is allowed and
/// means "international numbers only".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhoneRegions {
    regions: Vec<Region>,
}

impl Default for PhoneRegions {
    /// [`DEFAULT_PHONE_REGIONS`].
    fn default() -> Self {
        Self { regions: vec![Region::CN, Region::US, Region::GB, Region::DE, Region::FR, Region::JP] }
    }
}

impl PhoneRegions {
    /// Parses region codes, case-insensitively, surrounding whitespace
    /// ignored.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `"phone_regions"`) naming the first code
    /// that is not two ASCII letters or that libphonenumber has no metadata
    /// for (`"UK"`, `"EU"`, `"ZZ"`, `"001"`, empty), or when more than
    /// [`MAX_PHONE_REGIONS`] codes are given.
    pub fn new<I, S>(codes: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut regions: Vec<Region> = Vec::new();
        for (i, code) in codes.into_iter().enumerate() {
            if i >= MAX_PHONE_REGIONS {
                return Err(Error::invalid("phone_regions", format!("at most {MAX_PHONE_REGIONS} regions")));
            }
            let code = code.as_ref().trim();
            let region = code
                .parse::<Region>()
                .ok()
                .filter(|r| code.len() == 2 && PHONE_NUMBER_UTIL.get_supported_regions().any(|s| s == *r))
                .ok_or_else(|| {
                    Error::invalid(
                        "phone_regions",
                        format!("{code:?} is not an ISO 3166-1 alpha-2 region with phone-number metadata"),
                    )
                })?;
            if !regions.contains(&region) {
                regions.push(region);
            }
        }
        Ok(Self { regions })
    }

    /// The regions' codes, upper case, in order.
    pub fn codes(&self) -> Vec<String> {
        self.regions.iter().map(|r| r.as_region_str().to_string()).collect()
    }

    /// Whether no region is configured (international numbers only).
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }
}

/// How a candidate's first digits were written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Written {
    /// No international prefix: read with the configured regions.
    National,
    /// After a `+`: the digits start with the country calling code.
    Plus,
    /// After the international prefix `00`, which is part of the digits.
    Idd00,
}

/// A phone candidate as the scanner hands it over: ASCII digits and the
/// lengths of the digit runs they were written in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate<'a> {
    pub(crate) digits: &'a str,
    pub(crate) runs: &'a [usize],
    pub(crate) written: Written,
    /// Valid numbers too must be grouped the way the library formats them.
    pub(crate) strict: bool,
    /// A word naming a phone number comes just before (see
    /// [`phone_word_before`]).
    pub(crate) vouched: bool,
}

/// Verdicts of one scan, keyed by candidate: sub-chains overlap and the
/// redactor rescans after replacing, so the same digits come back.
#[derive(Default)]
pub(crate) struct PhoneCache {
    seen: HashMap<PhoneCacheKey, Option<PiiKind>>,
}

/// What a verdict depends on: the candidate's `written`, `strict` and
/// `vouched`, its digits and its `runs`.
type PhoneCacheKey = (Written, bool, bool, String, Vec<usize>);

/// What the library says about one parsed number.
enum Verdict {
    Personal(PiiKind),
    Service,
    Invalid,
}

/// libphonenumber's number type; a number is valid exactly when its type is
/// known (`isValidNumber` is `getNumberType != UNKNOWN` for the number's
/// region), so one lookup answers both.
fn verdict(n: &PhoneNumber) -> Verdict {
    match n.get_type() {
        PhoneNumberType::Mobile if n.country_code == 86 => Verdict::Personal(PiiKind::CnMobile),
        PhoneNumberType::FixedLine
        | PhoneNumberType::Mobile
        | PhoneNumberType::FixedLineOrMobile
        | PhoneNumberType::VoIP
        | PhoneNumberType::PersonalNumber
        | PhoneNumberType::Pager
        | PhoneNumberType::VoiceMail => Verdict::Personal(PiiKind::Phone),
        PhoneNumberType::TollFree
        | PhoneNumberType::PremiumRate
        | PhoneNumberType::SharedCost
        | PhoneNumberType::UAN => Verdict::Service,
        PhoneNumberType::Unknown => Verdict::Invalid,
    }
}

/// Full length for its region (not only dialable locally).
fn full_length(n: &PhoneNumber) -> bool {
    matches!(n.is_possible_with_reason(), Ok(NumberLengthType::IsPossible))
}

/// Digit offsets at which the second and later runs start.
fn run_starts(runs: &[usize]) -> Vec<usize> {
    runs.iter()
        .take(runs.len().saturating_sub(1))
        .scan(0, |at, &len| {
            *at += len;
            Some(*at)
        })
        .collect()
}

/// Digits in the first group of a formatted number, when it has groups.
fn first_group_len(formatted: &str) -> Option<usize> {
    let digits = formatted.chars().skip_while(|c| !c.is_ascii_digit());
    let n = digits.clone().take_while(char::is_ascii_digit).count();
    (n > 0 && digits.skip(n).any(|c| c.is_ascii_digit())).then_some(n)
}

/// Whether every run boundary inside the national significant number (the
/// last `nsn_len` digits) is a group boundary of the library's `formatted`
/// writing of the number, which must group it at least once.
fn grouped_like(starts: &[usize], n_digits: usize, nsn_len: usize, formatted: &str) -> bool {
    let mut f_starts = Vec::new();
    let mut f_digits: usize = 0;
    let mut gap = false;
    for c in formatted.chars() {
        if c.is_ascii_digit() {
            if gap && f_digits > 0 {
                f_starts.push(f_digits);
            }
            gap = false;
            f_digits += 1;
        } else {
            gap = true;
        }
    }
    let (Some(f_nsn), Some(c_nsn)) = (f_digits.checked_sub(nsn_len), n_digits.checked_sub(nsn_len)) else {
        return false;
    };
    let inside: Vec<usize> = f_starts.iter().filter(|&&s| s > f_nsn).map(|s| s - f_nsn).collect();
    !inside.is_empty() && starts.iter().all(|&s| s <= c_nsn || inside.contains(&(s - c_nsn)))
}

impl PhoneRegions {
    /// The kind to redact `c` as, or `None` when it is not a telephone
    /// number that carries personal data. Memoised in `cache`.
    pub(crate) fn confirm(&self, c: Candidate<'_>, cache: &mut PhoneCache) -> Option<PiiKind> {
        let key = (c.written, c.strict, c.vouched, c.digits.to_owned(), c.runs.to_vec());
        if let Some(&known) = cache.seen.get(&key) {
            return known;
        }
        let starts = run_starts(c.runs);
        let found = match c.written {
            Written::National => self.national(c, &starts),
            Written::Plus => international(c.digits, 0, &starts, c.strict),
            Written::Idd00 => international(c.digits, 2, &starts, c.strict),
        };
        cache.seen.insert(key, found);
        found
    }

    fn national(&self, c: Candidate<'_>, starts: &[usize]) -> Option<PiiKind> {
        let digits = c.digits;
        let mut service = false;
        let mut unallocated = false;
        let mut fallback = None;
        for &region in &self.regions {
            // NANP area codes never start with 0, and its trunk prefix is 1.
            if digits.starts_with('0') && PHONE_NUMBER_UTIL.is_nanpa_country(region) {
                continue;
            }
            let Ok(n) = PHONE_NUMBER_UTIL.parse(digits, Some(region)) else {
                continue;
            };
            if PHONE_NUMBER_UTIL.get_country_code_for_region(region) != Some(n.country_code) {
                continue;
            }
            let nsn = n.get_national_significant_number();
            if !digits.ends_with(nsn.as_str()) {
                continue;
            }
            // Formatting costs as much as the type lookup: an unknown number
            // is only formatted when it may be a reserved-range one (a
            // stripped prefix, full length).
            let verdict = verdict(&n);
            if matches!(verdict, Verdict::Invalid) && (digits.len() == nsn.len() || !full_length(&n)) {
                continue;
            }
            let national = n.format_as(PhoneNumberFormat::National);
            let written_as_formatted = national.chars().filter(char::is_ascii_digit).eq(digits.chars());
            let format_has_prefix = national.chars().filter(char::is_ascii_digit).count() > nsn.len();
            let has_pattern = national.chars().any(|c| !c.is_ascii_digit());
            // The trunk prefix is there when the region writes one; without a
            // format for the number, the library cannot tell, so a prefix
            // must have been written.
            if (format_has_prefix && !written_as_formatted) || (!has_pattern && digits.len() == nsn.len()) {
                continue;
            }
            let grouped = grouped_like(starts, digits.len(), nsn.len(), &national);
            // Without a written prefix, only the grouping says "phone
            // number": it must be the library's, with the first group (the
            // area code) set apart, and one bare run must be 11 digits (a CN
            // mobile) or vouched for by a word before it.
            let bare = digits.len() == nsn.len();
            let bare_ok = grouped
                && match first_group_len(&national) {
                    _ if starts.is_empty() => digits.len() >= 11 || c.vouched,
                    Some(first) => starts.contains(&first),
                    None => false,
                };
            if (c.strict && !grouped) || (bare && !bare_ok) {
                continue;
            }
            // A prefix the region never writes (`0` before a CN mobile) is a
            // reading of last resort: a later region that writes the number
            // exactly so (`01512 3456789`, a German mobile) is the number's.
            let foreign_prefix = !bare && !format_has_prefix;
            match verdict {
                Verdict::Personal(kind) if foreign_prefix => {
                    fallback.get_or_insert(kind);
                }
                Verdict::Personal(kind) => return Some(kind),
                Verdict::Service => service = true,
                Verdict::Invalid => unallocated |= written_as_formatted && format_has_prefix && grouped,
            }
        }
        fallback.or((!service && unallocated).then_some(PiiKind::Phone))
    }
}

/// `digits` (`idd` digits of international prefix, then the country calling
/// code) read with the region of the calling code.
fn international(digits: &str, idd: usize, starts: &[usize], strict: bool) -> Option<PiiKind> {
    let body = digits.get(idd..)?;
    let n = PHONE_NUMBER_UTIL.parse(format!("+{body}"), None).ok()?;
    let cc = n.country_code.to_string();
    let nsn = n.get_national_significant_number();
    if !body.starts_with(cc.as_str()) || !digits.ends_with(nsn.as_str()) {
        return None;
    }
    let cc_end = idd + cc.len();
    let nsn_start = digits.len().checked_sub(nsn.len()).filter(|&s| s >= cc_end)?;
    // The calling code is a group of its own; before the national number
    // (after an optional `(0)`) runs break only at the prefixes' ends.
    if !starts.is_empty() && !starts.contains(&cc_end) {
        return None;
    }
    if starts.iter().any(|&s| s <= nsn_start && s != idd && s != cc_end && s != nsn_start) {
        return None;
    }
    let grouped = || grouped_like(starts, digits.len(), nsn.len(), &n.format_as(PhoneNumberFormat::International));
    if strict && !grouped() {
        return None;
    }
    match verdict(&n) {
        Verdict::Personal(kind) => Some(kind),
        Verdict::Service => None,
        Verdict::Invalid => (full_length(&n) && grouped()).then_some(PiiKind::Phone),
    }
}

// ---------------------------------------------------------------------------
// Shapes and contexts that are never telephone numbers

/// A calendar date in one of the usual digit orders: three runs
/// (`yyyy mm dd`, `dd mm yyyy`, `mm dd yyyy`) or one run of eight
/// (`yyyymmdd`, `ddmmyyyy`, `mmddyyyy`); years 1800–2199.
pub(crate) fn looks_like_date(digits: &str, runs: &[usize]) -> bool {
    let num = |s: &str| s.parse::<u32>().ok();
    let year = |s: &str| s.len() == 4 && num(s).is_some_and(|y| (1800..=2199).contains(&y));
    let month = |s: &str| num(s).is_some_and(|m| (1..=12).contains(&m));
    let day = |s: &str| num(s).is_some_and(|d| (1..=31).contains(&d));
    let ymd = |y: &str, m: &str, d: &str| year(y) && month(m) && day(d);
    let parts: Vec<&str> = match runs {
        [a, b, c] if *a + *b + *c == digits.len() => vec![&digits[..*a], &digits[*a..*a + *b], &digits[*a + *b..]],
        [8] => vec![&digits[..4], &digits[4..6], &digits[6..]],
        _ => return false,
    };
    let (p, q, r) = (parts[0], parts[1], parts[2]);
    if runs == [8] {
        let (d0, d1, y) = (&digits[..2], &digits[2..4], &digits[4..]);
        return ymd(p, q, r) || ymd(y, d1, d0) || ymd(y, d0, d1);
    }
    (p.len() == 4 && q.len() <= 2 && r.len() <= 2 && ymd(p, q, r))
        || (r.len() == 4 && p.len() <= 2 && q.len() <= 2 && (ymd(r, q, p) || ymd(r, p, q)))
}

/// Thousands grouping (`13 800 000 000`, `1.234.567`): a first run of 1–3
/// digits not starting with 0, then at least two runs of exactly three.
pub(crate) fn looks_like_thousands(digits: &str, runs: &[usize]) -> bool {
    matches!(runs, [first, rest @ ..] if (1..=3).contains(first) && rest.len() >= 2 && rest.iter().all(|&r| r == 3))
        && !digits.starts_with('0')
}

/// An IPv4 address: four runs of 1–3 digits, each at most 255 (the caller
/// checks that dots join them).
pub(crate) fn looks_like_ipv4(digits: &str, runs: &[usize]) -> bool {
    if runs.len() != 4 || runs.iter().any(|&r| !(1..=3).contains(&r)) {
        return false;
    }
    let mut at = 0;
    runs.iter().all(|&r| {
        let ok = digits.get(at..at + r).and_then(|s| s.parse::<u16>().ok()).is_some_and(|v| v <= 255);
        at += r;
        ok
    })
}

/// An ISBN written in groups: ISBN-10 in four groups or ISBN-13 (978/979) in
/// five, the last group being the single check digit, with a valid checksum.
pub(crate) fn looks_like_isbn(digits: &str, runs: &[usize]) -> bool {
    let d: Vec<u32> = digits.chars().filter_map(|c| c.to_digit(10)).collect();
    if runs.last() != Some(&1) {
        return false;
    }
    match (d.len(), runs.len()) {
        (10, 4) => {
            let weighted: u32 = d.iter().zip((1..=10).rev()).map(|(x, w)| x * w).sum();
            weighted.is_multiple_of(11)
        }
        (13, 5) if digits.starts_with("978") || digits.starts_with("979") => {
            let weighted: u32 = d.iter().enumerate().map(|(i, x)| if i % 2 == 0 { *x } else { 3 * x }).sum();
            weighted.is_multiple_of(10)
        }
        _ => false,
    }
}

/// Signs that make the digits at `start..end` of `text` an amount or an
/// identifier: a currency sign, `#` or `№` just before (one space allowed);
/// a percent sign or a CJK unit of money or magnitude just after (one space
/// allowed); or a label naming an identifier just before (see
/// [`ends_with_id_label`]).
pub(crate) fn amount_or_id_context(text: &str, start: usize, end: usize) -> bool {
    let before = text.get(..start).unwrap_or("");
    let after = text.get(end..).unwrap_or("");
    let skip_space = |c: Option<char>, mut it: std::str::Chars<'_>, rev: bool| match c {
        Some(' ' | '\u{A0}' | '\u{3000}') => {
            if rev {
                it.next_back()
            } else {
                it.next()
            }
        }
        other => other,
    };
    let mut b = before.chars();
    let prev = b.next_back();
    let prev = skip_space(prev, b, true);
    let mut a = after.chars();
    let next = a.next();
    let next = skip_space(next, a, false);
    const SIGNS_BEFORE: &[char] =
        &['$', '€', '£', '¥', '￥', '＄', '￡', '₩', '₹', '₽', '₺', '₫', '฿', '₴', '₦', '₪', '#', '＃', '№'];
    const SIGNS_AFTER: &[char] =
        &['%', '％', '‰', '€', '$', '£', '¥', '￥', '元', '円', '圆', '圓', '块', '塊', '万', '萬', '亿', '億'];
    // `#` labels an identifier (`#13612345678`, an issue or order number)
    // unless a telephone word says what follows (`phone # 136…`).
    let number_sign = prev.is_some_and(|c| matches!(c, '#' | '＃'));
    prev.is_some_and(|c| SIGNS_BEFORE.contains(&c)) && !(number_sign && phone_word_before(text, start))
        || next.is_some_and(|c| SIGNS_AFTER.contains(&c))
        || ends_with_id_label(before)
}

/// Words that, shortly before a number, say it is a phone number (ASCII
/// ones case-insensitive and whole words): English, messaging apps whose
/// account is a phone number, simplified and traditional Chinese, Japanese
/// and Korean.
#[rustfmt::skip]
const PHONE_WORDS: &[&str] = &[
    "phone", "tel", "telephone", "call", "cell", "mobile", "mob", "fax", "text", "whatsapp", "sms", "dial",
    "contact", "reach", "number", "wechat", "weixin", "wx", "viber", "telegram",
    "电话", "手机", "致电", "拨打", "联系", "号码", "微信", "電話", "手機", "聯繫", "聯絡", "號碼", "携帯", "전화",
    "휴대폰", "연락처",
];

/// Whether one of [`PHONE_WORDS`] is among the 32 characters before byte
/// `start` of `text` (see [`word_before`]).
pub(crate) fn phone_word_before(text: &str, start: usize) -> bool {
    word_before(text, start, PHONE_WORDS)
}

/// Whether one of `words` (lower case) ends among the 32 characters before
/// byte `start` of `text`, ASCII letters in any case: an ASCII word as a
/// whole word (no ASCII letter or digit glued on either side), another
/// anywhere; never inside a placeholder of an earlier redaction pass (a
/// match right after `[`, as in `[PHONE]` or `[SSN]`).
pub(crate) fn word_before(text: &str, start: usize, words: &[&str]) -> bool {
    let before = text.get(..start).unwrap_or("");
    let from = before.char_indices().rev().nth(31).map_or(0, |(i, _)| i);
    let window = before[from..].to_ascii_lowercase();
    words.iter().any(|w| {
        window.match_indices(w).any(|(i, _)| {
            !window[..i].ends_with('[')
                && (!w.is_ascii()
                    || (!window[..i].ends_with(|c: char| c.is_ascii_alphanumeric())
                        && !window[i + w.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())))
        })
    })
}

/// Whether `word` (ASCII, any case) is one of the ASCII [`PHONE_WORDS`]
/// (`tel`, `Mobile`, `CALL`).
pub(crate) fn is_phone_word(word: &str) -> bool {
    PHONE_WORDS.iter().any(|w| w.is_ascii() && w.eq_ignore_ascii_case(word))
}

/// Words that, right before a number, say it is an identifier, not a phone
/// number (ASCII ones case-insensitive and whole words).
#[rustfmt::skip]
const ID_LABELS: &[&str] = &[
    "order", "invoice", "inv", "ticket", "tracking", "ref", "reference", "sku", "serial", "isbn", "isbn-10",
    "isbn-13", "isbn10", "isbn13", "issn", "case", "code", "transaction", "txn", "batch", "lot", "part", "receipt",
    "booking", "confirmation", "订单", "订单号", "单号", "编号", "发票", "发票号", "运单", "运单号", "快递单号",
    "流水号", "工单", "工单号", "批号", "序列号", "货号",
];

/// Whether `before` ends with an identifier label from [`ID_LABELS`],
/// optionally followed by `no`, `no.`, `nr`, `number`, `num`, `#`, `:`,
/// `：`, `-` and spaces (`Order no. `, `Invoice #`, `订单号：`).
pub(crate) fn ends_with_id_label(before: &str) -> bool {
    // Only the last few characters matter; bound the work.
    let tail_start = before.char_indices().rev().nth(31).map_or(0, |(i, _)| i);
    let mut s = before[tail_start..].trim_end_matches(|c: char| c.is_whitespace() || ":：#＃.-".contains(c));
    let lower = s.to_ascii_lowercase();
    for suffix in ["number", "num", "nr", "no"] {
        if lower.ends_with(suffix) {
            let cut = s.len() - suffix.len();
            let head = &s[..cut];
            if head.is_empty() || head.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
                s = head.trim_end_matches(|c: char| c.is_whitespace() || ".-".contains(c));
                break;
            }
        }
    }
    ID_LABELS.iter().any(|label| {
        let n = label.len();
        if s.len() < n || !s.is_char_boundary(s.len() - n) {
            return false;
        }
        let (head, tail) = s.split_at(s.len() - n);
        let ascii = label.is_ascii();
        tail.eq_ignore_ascii_case(label) && (!ascii || !head.ends_with(|c: char| c.is_ascii_alphanumeric()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions() -> PhoneRegions {
        PhoneRegions::default()
    }

    fn confirm(digits: &str, runs: &[usize], written: Written) -> Option<PiiKind> {
        regions()
            .confirm(Candidate { digits, runs, written, strict: false, vouched: false }, &mut PhoneCache::default())
    }

    fn confirm_in(region: &str, digits: &str, runs: &[usize], written: Written) -> Option<PiiKind> {
        let only = PhoneRegions::new([region]).unwrap();
        only.confirm(Candidate { digits, runs, written, strict: false, vouched: false }, &mut PhoneCache::default())
    }

    fn confirm_gb(digits: &str, runs: &[usize], written: Written) -> Option<PiiKind> {
        confirm_in("GB", digits, runs, written)
    }

    #[test]
    fn default_regions_match_the_constant() {
        assert_eq!(PhoneRegions::default().codes(), DEFAULT_PHONE_REGIONS);
        assert_eq!(PhoneRegions::new(DEFAULT_PHONE_REGIONS).unwrap(), PhoneRegions::default());
    }

    #[test]
    fn region_validation() {
        let r = PhoneRegions::new([" gb", "US ", "GB", "in"]).unwrap();
        assert_eq!(r.codes(), ["GB", "US", "IN"]);
        assert!(PhoneRegions::new(Vec::<String>::new()).unwrap().is_empty());
        for bad in ["UK", "EU", "ZZ", "001", "", "G", "GBR", "1A", "中国"] {
            match PhoneRegions::new([bad]) {
                Err(Error::InvalidInput { field, reason }) => {
                    assert_eq!(field, "phone_regions");
                    assert!(reason.contains(&format!("{:?}", bad.trim())), "{reason}");
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        let too_many = vec!["GB"; MAX_PHONE_REGIONS + 1];
        assert!(PhoneRegions::new(too_many).is_err());
    }

    #[test]
    fn national_needs_the_trunk_prefix_where_written() {
        use Written::National as N;
        assert_eq!(confirm("02079460958", &[3, 4, 4], N), Some(PiiKind::Phone));
        assert_eq!(confirm_gb("2079460958", &[2, 4, 4], N), None);
        // Read as NANP, the same digits are a valid Maine number.
        assert_eq!(confirm("2079460958", &[3, 3, 4], N), Some(PiiKind::Phone));
        assert_eq!(confirm("100000000", &[3, 3, 3], N), None);
        // A German pager number has no national format: no prefix, no phone.
        assert_eq!(confirm("1699999999123", &[13], N), None);
        assert_eq!(confirm("01699999999123", &[14], N), Some(PiiKind::Phone));
        assert_eq!(confirm("0123456789", &[2, 2, 2, 2, 2], N), Some(PiiKind::Phone));
        // NANP: the dialled 1 is optional.
        assert_eq!(confirm("14155550100", &[1, 3, 3, 4], N), Some(PiiKind::Phone));
        assert_eq!(confirm("4155550100", &[3, 3, 4], N), Some(PiiKind::Phone));
        assert_eq!(confirm("13812345678", &[11], N), Some(PiiKind::CnMobile));
    }

    #[test]
    fn a_prefix_the_first_region_never_writes_yields_to_a_region_that_does() {
        use Written::National as N;
        // CN reads these as mobiles after a `0` it never writes; DE writes
        // them exactly so: German mobiles.
        for (digits, runs) in [("015123456789", &[5, 7][..]), ("015123456789", &[4, 8]), ("015123456789", &[12])] {
            assert_eq!(confirm(digits, runs, N), Some(PiiKind::Phone), "{digits} {runs:?}");
        }
        assert_eq!(confirm("017612345678", &[4, 8], N), Some(PiiKind::Phone));
        // With only CN to read them, still a CN mobile (the last resort).
        assert_eq!(confirm_in("CN", "015123456789", &[12], N), Some(PiiKind::CnMobile));
        assert_eq!(confirm("13812345678", &[3, 4, 4], N), Some(PiiKind::CnMobile));
    }

    #[test]
    fn reserved_range_needs_prefix_and_library_grouping() {
        use Written::*;
        // UK drama range: not valid, but written as the library writes it.
        assert_eq!(confirm_gb("07700900456", &[5, 6], National), Some(PiiKind::Phone));
        assert_eq!(confirm_gb("07700900456", &[11], National), Some(PiiKind::Phone));
        assert_eq!(confirm("447700900456", &[2, 4, 6], Plus), Some(PiiKind::Phone));
        // Grouped against the library's grouping: not taken.
        assert_eq!(confirm_gb("07700900456", &[3, 4, 4], National), None);
        assert_eq!(confirm("447700900456", &[2, 5, 5], Plus), None);
        // With the default regions the same digits are also a valid German
        // (and Chinese) fixed-line number.
        assert_eq!(confirm("07700900456", &[3, 4, 4], National), Some(PiiKind::Phone));
        // Unknown ranges without a written prefix stay; read as NANP
        // (1 + 281 …) the same digits are a valid Houston number.
        assert_eq!(confirm_in("CN", "12812345678", &[11], National), None);
        assert_eq!(confirm_in("US", "12812345678", &[11], National), Some(PiiKind::Phone));
    }

    #[test]
    fn international_calling_code_is_its_own_group() {
        use Written::*;
        assert_eq!(confirm("100000000", &[3, 3, 3], Plus), None);
        assert_eq!(confirm("441234567890", &[3, 3, 3, 3], Plus), None);
        assert_eq!(confirm("441234567890", &[2, 4, 6], Plus), Some(PiiKind::Phone));
        assert_eq!(confirm("4402079460958", &[2, 1, 2, 4, 4], Plus), Some(PiiKind::Phone));
        assert_eq!(confirm("00442079460958", &[4, 2, 4, 4], Idd00), Some(PiiKind::Phone));
        assert_eq!(confirm("00442079460958", &[2, 2, 2, 4, 4], Idd00), Some(PiiKind::Phone));
        assert_eq!(confirm("8613812345678", &[13], Plus), Some(PiiKind::CnMobile));
    }

    #[test]
    fn service_numbers_stay() {
        use Written::*;
        assert_eq!(confirm("08001234567", &[4, 3, 4], National), None);
        assert_eq!(confirm("448001234567", &[2, 3, 3, 4], Plus), None);
    }

    #[test]
    fn known_type_means_valid() {
        for code in ["CN", "US", "GB", "DE", "FR", "JP", "IN", "BR"] {
            let region: Region = code.parse().unwrap();
            for ty in [PhoneNumberType::Mobile, PhoneNumberType::FixedLine, PhoneNumberType::TollFree] {
                let Ok(n) = PHONE_NUMBER_UTIL.get_example_number_for_type_and_region(region, ty) else { continue };
                assert!(n.is_valid() && n.get_type() != PhoneNumberType::Unknown, "{code} {ty:?}");
            }
            let Ok(bad) = PHONE_NUMBER_UTIL.get_invalid_example_number(region) else { continue };
            assert!(!bad.is_valid() && bad.get_type() == PhoneNumberType::Unknown, "{code}");
        }
    }

    #[test]
    fn shapes() {
        assert!(looks_like_date("20231105", &[4, 2, 2]));
        assert!(looks_like_date("05112023", &[2, 2, 4]));
        assert!(looks_like_date("11052023", &[2, 2, 4]));
        assert!(looks_like_date("20231105", &[8]));
        assert!(looks_like_date("05112023", &[8]));
        assert!(!looks_like_date("05112023", &[4, 4]));
        assert!(!looks_like_date("13812345678", &[3, 4, 4]));
        assert!(!looks_like_date("20231305", &[4, 2, 2]));
        assert!(looks_like_thousands("13800000000", &[2, 3, 3, 3]));
        assert!(looks_like_thousands("100000000", &[3, 3, 3]));
        assert!(!looks_like_thousands("030123456", &[3, 3, 3]));
        assert!(!looks_like_thousands("4155550100", &[3, 3, 4]));
        assert!(looks_like_isbn("0306406152", &[1, 3, 5, 1]));
        assert!(looks_like_isbn("9783161484100", &[3, 1, 2, 6, 1]));
        assert!(!looks_like_isbn("9783161484101", &[3, 1, 2, 6, 1]));
        assert!(!looks_like_isbn("0306406152", &[2, 2, 2, 2, 2]));
    }

    /// A fixed subset of `benches/phones.rs`'s set: every item classified
    /// right by the default redactor.
    #[test]
    fn fixed_subset_classified_right() {
        let r = crate::safety::Redactor::new();
        let phone_spans = |text: &str| -> Vec<String> {
            r.find(text)
                .into_iter()
                .filter(|s| matches!(s.kind, PiiKind::Phone | PiiKind::CnMobile))
                .map(|s| text[s.range()].to_owned())
                .collect()
        };
        // Personal numbers, national and international, with the usual
        // separators: each must be found whole.
        for number in [
            "131 2345 6789",
            "131-2345-6789",
            "13123456789",
            "010 1234 5678",
            "(010) 1234 5678",
            "+86 10 1234 5678",
            "0086 131 2345 6789",
            "(+86) 131-2345-6789",
            "(201) 555-0123",
            "201-555-0123",
            "201.555.0123",
            "1-201-555-0123",
            "+1 201-555-0123",
            "+12015550123",
            "0121 234 5678",
            "07400 123456",
            "07400-123456",
            "0121.234.5678",
            "+44 7400 123456",
            "+44 (0)121 234 5678",
            "0044 121 234 5678",
            "07700 900456",
            "+44 7700 900456",
            "030 123456",
            "01512 3456789",
            "030-123456",
            "+49 1512 3456789",
            "+49 (0)30 123456",
            "01 23 45 67 89",
            "06.12.34.56.78",
            "0612345678",
            "+33 6 12 34 56 78",
            "+33 (0)1 23 45 67 89",
            "03-1234-5678",
            "090-1234-5678",
            "09012345678",
            "+81 90-1234-5678",
            "+91 81234 56789",
            "+55 11 96123-4567",
            "+7 912 345-67-89",
            "(413)583-3564",
            "030.123456",
        ] {
            for text in [format!("Call me at {number} tomorrow."), format!("我的电话是{number}，有事找我。")]
            {
                assert_eq!(phone_spans(&text), [number], "{text:?}");
            }
        }
        // A bare ten-digit run counts when a word names it a phone number.
        for (text, number) in [
            ("Phone: 4055550123", "4055550123"),
            ("call me on 4155550100", "4155550100"),
            ("电话4155550100", "4155550100"),
        ] {
            assert_eq!(phone_spans(text), [number], "{text:?}");
        }
        assert_eq!(phone_spans("Office: 4155550100"), Vec::<String>::new());
        // Service numbers and non-phone numbers: nothing found.
        for text in [
            "Freephone +44 800 123 4567 for orders",
            "Revenue grew by +100 000 000 last year",
            "Revenue grew by 100 000 000 last year",
            "预算为13 800 000 000元。",
            "共13800000000元",
            "The total came to $4,155,550,100, paid in full.",
            "The total came to € 1.234.567.890",
            "world population passed 8 045 311 447 people",
            "Order #2015550123 shipped",
            "Order no. 2015550123 shipped",
            "订单号：201555012345",
            "订单号 20231105123456789012",
            "ref ORD-20231105-0001",
            "IBAN DE89 3704 0044 0532 0130 00",
            "due 2023-11-05 at the latest",
            "due 05.11.2023 at the latest",
            "due 11/05/2023 at the latest",
            "due 20231105 at the latest",
            "due 05112023 at the latest",
            "会议定在2023年11月5日举行",
            "due 2023-11-05 12:34:56 at the latest",
            "due 2023 11 05 at the latest",
            "upgraded to 121.0.4731.114 yesterday",
            "upgraded to 10.0.19045.3693 yesterday",
            "ISBN 978-3-16-148410-0",
            "see 0-306-40615-2 for details",
            "ISBN-10: 0306406152",
            "meet at 39.904200, 116.407400",
            "the run took 12:34:56",
            "conversion rose +12.34% this week",
            "ts=1699999999",
            "created_at 1699999999123",
            "server 174.238.79.148 is down",
            "Angle (Radians) 0.122173048 0.401425728 0.663225116",
            "Percentile 5 10 15 20 25 30 40 50 60 70 80 90",
            "IPv4 IPv6 0 20 40 60 80 100 7.3%",
            "CN Code - 870321 - 9000- used car",
            "new vehicle 8703211000 – used",
            "whole numbers 0–4294967295 10–100",
            "https://doi.org/10.1136/bjo-2022-321842.",
            "ipykernel_9724\\2365515882.py in preprocess",
            "surge-091900530.html",
            "Freephone 1-800-767-1833 for the hard of hearing",
        ] {
            assert_eq!(phone_spans(text), Vec::<String>::new(), "{text:?}");
        }
    }

    #[test]
    fn contexts() {
        let ctx = |text: &str, num: &str| {
            let start = text.find(num).unwrap();
            amount_or_id_context(text, start, start + num.len())
        };
        assert!(ctx("cost $ 4155550100 total", "4155550100"));
        assert!(ctx("共13800000000元", "13800000000"));
        assert!(ctx("up 13800000000 %", "13800000000"));
        assert!(ctx("Order #4155550100", "4155550100"));
        assert!(ctx("Order no. 4155550100", "4155550100"));
        assert!(ctx("invoice: 4155550100", "4155550100"));
        assert!(ctx("订单号：13812345678", "13812345678"));
        assert!(ctx("ISBN 0306406152", "0306406152"));
        assert!(!ctx("call 4155550100", "4155550100"));
        assert!(!ctx("phone number: 4155550100", "4155550100"));
        assert!(!ctx("Tel no. 4155550100", "4155550100"));
        assert!(!ctx("手机号13812345678，", "13812345678"));
        assert!(!ctx("reorder 4155550100", "4155550100"));
        assert!(!ctx("4155550100", "4155550100"));
    }
}
