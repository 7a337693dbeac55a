//! The labelled set of `benches/phones.rs`, generated from a seed.
//!
//! Phone numbers come from libphonenumber's own example numbers (one per
//! region and type) plus variants whose last two digits are drawn from the
//! seed and that the library still says are valid numbers of the same type;
//! each is written nationally and internationally with the usual
//! separators, inside an English or Chinese sentence. Numbers of the UK's
//! drama ranges (`07700 900xxx`, `020 7946 0xxx`, `0113 496 0xxx`) are added
//! as reserved-range phones. Non-phone numbers are amounts, identifiers,
//! dates, versions, ISBNs, coordinates, times, percentages, counts,
//! timestamps and Chinese amounts, drawn from the same seed.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;
use rlibphonenumber::enums::Region;
use rlibphonenumber::{PhoneNumber, PhoneNumberFormat, PhoneNumberType, PHONE_NUMBER_UTIL};

/// What a labelled item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// A personal phone number (mobile, fixed line, VoIP, …): redact.
    Personal,
    /// A valid toll-free, premium-rate, shared-cost or UAN number: keep.
    Service,
    /// Not a phone number: keep.
    NotPhone,
}

/// One text and the number in it.
#[derive(Clone, Debug)]
pub struct Item {
    pub text: String,
    /// Byte range of the number in `text`.
    pub start: usize,
    pub end: usize,
    pub label: Label,
    /// Region code for phones, `-` otherwise.
    pub region: String,
    /// How the phone is written (`national-dashes`, `intl-00`, …) or the
    /// non-phone category (`amount`, `date`, …).
    pub form: String,
}

const EN: &[&str] = &[
    "Call me at {} tomorrow.",
    "My number is {}.",
    "Landlord mobile {}",
    "Office: {}, ask for Sam.",
    "{} is the front desk.",
    "Reach the plumber on {} after 6pm",
];
const ZH: &[&str] = &["我的电话是{}，有事找我。", "请拨打{}联系我", "手机号：{}。", "房东电话{}"];

fn place(rng: &mut SmallRng, number: &str) -> (String, usize, usize) {
    let t = if rng.gen_bool(0.6) { EN.choose(rng) } else { ZH.choose(rng) }.copied().unwrap_or("{}");
    let start = t.find("{}").unwrap_or(0);
    (t.replacen("{}", number, 1), start, start + number.len())
}

fn groups(formatted: &str) -> Vec<String> {
    formatted.split(|c: char| !c.is_ascii_digit()).filter(|g| !g.is_empty()).map(str::to_owned).collect()
}

/// Every writing of `n` used by the set, named.
fn writings(n: &PhoneNumber, national_too: bool) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let nat = n.format_as(PhoneNumberFormat::National).into_owned();
    let intl = n.format_as(PhoneNumberFormat::International).into_owned();
    let g = groups(&nat);
    if national_too {
        out.push(("national".into(), nat.clone()));
        out.push(("national-spaces".into(), g.join(" ")));
        out.push(("national-dashes".into(), g.join("-")));
        out.push(("national-dots".into(), g.join(".")));
        out.push(("national-compact".into(), g.concat()));
        if g.len() >= 3 {
            out.push(("national-parens".into(), format!("({}) {}", g[0], g[1..].join(" "))));
        }
    }
    let gi = groups(&intl);
    out.push(("intl".into(), intl.clone()));
    out.push(("intl-compact".into(), n.format_as(PhoneNumberFormat::E164).into_owned()));
    out.push(("intl-dashes".into(), format!("+{}", gi.join("-"))));
    out.push(("intl-00".into(), format!("00{}", gi.join(" "))));
    if let Some((cc, rest)) = gi.split_first() {
        out.push(("intl-parens".into(), format!("(+{cc}) {}", rest.join(" "))));
        let nsn = n.get_national_significant_number();
        let nat_digits: String = nat.chars().filter(char::is_ascii_digit).collect();
        if nat_digits == format!("0{nsn}") {
            out.push(("intl-trunk0".into(), format!("+{cc} (0){}", rest.join(" "))));
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.1 == b.1);
    out
}

const PERSONAL_TYPES: &[PhoneNumberType] = &[
    PhoneNumberType::FixedLine,
    PhoneNumberType::Mobile,
    PhoneNumberType::VoIP,
    PhoneNumberType::PersonalNumber,
    PhoneNumberType::Pager,
    PhoneNumberType::VoiceMail,
];
const SERVICE_TYPES: &[PhoneNumberType] =
    &[PhoneNumberType::TollFree, PhoneNumberType::PremiumRate, PhoneNumberType::SharedCost, PhoneNumberType::UAN];

/// The example number of `region` and `ty`, plus up to `variants` numbers
/// with other last two digits that stay valid and of the same type.
fn numbers(rng: &mut SmallRng, region: Region, ty: PhoneNumberType, variants: usize) -> Vec<PhoneNumber> {
    let Ok(example) = PHONE_NUMBER_UTIL.get_example_number_for_type_and_region(region, ty) else {
        return Vec::new();
    };
    let nsn = example.get_national_significant_number();
    let mut out = vec![example.clone()];
    for _ in 0..40 {
        if out.len() > variants {
            break;
        }
        let keep = nsn.len().saturating_sub(2);
        let candidate = format!("+{}{}{:02}", example.country_code, &nsn[..keep], rng.gen_range(0..100));
        let Ok(n) = PHONE_NUMBER_UTIL.parse(&candidate, None) else { continue };
        let same_type = n.get_type() == example.get_type();
        if n.is_valid() && same_type && !out.iter().any(|o| o.national_number == n.national_number) {
            out.push(n);
        }
    }
    out
}

/// Regions whose national writings are in the set: the redactor's defaults.
pub const NATIONAL_REGIONS: &[&str] = &["CN", "US", "GB", "DE", "FR", "JP"];
/// Regions in the set only as international writings.
pub const INTL_ONLY_REGIONS: &[&str] = &[
    "IN", "BR", "AU", "KR", "RU", "IT", "ES", "NL", "SG", "HK", "TW", "MX", "ZA", "SE", "CH", "PL", "TR", "ID", "NG",
    "EG", "AR", "CA",
];

pub fn phones(rng: &mut SmallRng) -> Vec<Item> {
    let mut items = Vec::new();
    let mut push = |rng: &mut SmallRng, n: &PhoneNumber, label: Label, region: &str, national_too: bool| {
        for (form, written) in writings(n, national_too) {
            let (text, start, end) = place(rng, &written);
            items.push(Item { text, start, end, label, region: region.to_owned(), form });
        }
    };
    for &code in NATIONAL_REGIONS {
        let Ok(region) = code.parse::<Region>() else { continue };
        let mut seen = Vec::new();
        for &ty in PERSONAL_TYPES.iter().chain(SERVICE_TYPES) {
            let label = if PERSONAL_TYPES.contains(&ty) { Label::Personal } else { Label::Service };
            for n in numbers(rng, region, ty, 2) {
                if seen.contains(&n.national_number) {
                    continue;
                }
                seen.push(n.national_number);
                push(rng, &n, label, code, true);
            }
        }
    }
    for &code in INTL_ONLY_REGIONS {
        let Ok(region) = code.parse::<Region>() else { continue };
        for ty in [PhoneNumberType::Mobile, PhoneNumberType::FixedLine] {
            for n in numbers(rng, region, ty, 1) {
                push(rng, &n, Label::Personal, code, false);
            }
        }
    }
    // Reserved for drama: not valid numbers, but phone numbers as written.
    for prefix in ["+447700900", "+44207946", "+44113496"] {
        for _ in 0..3 {
            let digits = 12 - (prefix.len() - 1);
            let tail: String = (0..digits).map(|_| char::from(b'0' + rng.gen_range(0..10u8))).collect();
            let Ok(n) = PHONE_NUMBER_UTIL.parse(format!("{prefix}{tail}"), None) else { continue };
            push(rng, &n, Label::Personal, "GB-drama", true);
        }
    }
    items
}

fn not_phone(text: String, number: &str, form: &str) -> Item {
    let start = text.find(number).unwrap_or(0);
    Item { end: start + number.len(), start, text, label: Label::NotPhone, region: "-".into(), form: form.into() }
}

/// `n` with `sep` every three digits from the right.
fn thousands(n: u64, sep: &str) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push_str(sep);
        }
        out.push(c);
    }
    out
}

fn digits(rng: &mut SmallRng, n: usize) -> String {
    (0..n).map(|_| char::from(b'0' + rng.gen_range(0..10u8))).collect()
}

fn isbn13(rng: &mut SmallRng) -> String {
    let body = format!("978{}", digits(rng, 9));
    let sum: u32 =
        body.chars().filter_map(|c| c.to_digit(10)).enumerate().map(|(i, d)| if i % 2 == 0 { d } else { 3 * d }).sum();
    let check = (10 - sum % 10) % 10;
    format!("{}-{}-{}-{}-{check}", &body[..3], &body[3..4], &body[4..6], &body[6..])
}

fn isbn10(rng: &mut SmallRng) -> Option<String> {
    for _ in 0..20 {
        let body = digits(rng, 9);
        let sum: u32 = body.chars().filter_map(|c| c.to_digit(10)).zip((2..=10).rev()).map(|(d, w)| d * w).sum();
        let check = (11 - sum % 11) % 11;
        if check < 10 {
            return Some(format!("{}-{}-{}-{check}", &body[..1], &body[1..4], &body[4..]));
        }
    }
    None
}

pub fn not_phones(rng: &mut SmallRng) -> Vec<Item> {
    let mut out = Vec::new();
    // Amounts and counts with separators, signs and currencies.
    for _ in 0..40 {
        let v: u64 = rng.gen_range(1_000_000..100_000_000_000);
        let (sep, pre, post) = [
            (",", "$", ""),
            (",", "USD ", ""),
            (".", "€", ""),
            (" ", "", " €"),
            (" ", "+", ""),
            (" ", "-", ""),
            (",", "¥", ""),
            (",", "人民币", "元"),
            (" ", "", "元"),
            (",", "£", ""),
            (" ", "", ""),
            (".", "", " EUR"),
        ][rng.gen_range(0..12)];
        let n = thousands(v, sep);
        let text = match rng.gen_range(0..3) {
            0 => format!("Revenue grew by {pre}{n}{post} last year"),
            1 => format!("预算为{pre}{n}{post}。"),
            _ => format!("The total came to {pre}{n}{post}, paid in full."),
        };
        out.push(not_phone(text, &format!("{pre}{n}{post}"), "amount"));
    }
    for _ in 0..10 {
        let n = thousands(rng.gen_range(1_000_000_000..9_000_000_000), " ");
        out.push(not_phone(format!("world population passed {n} people"), &n, "count"));
        let n = thousands(rng.gen_range(100_000_000..999_999_999), " ");
        out.push(not_phone(format!("distance {n} km"), &n, "count"));
    }
    for (t, n) in [
        ("Revenue grew by +100 000 000 last year", "+100 000 000"),
        ("3.5亿元的项目", "3.5亿元"),
        ("共计12,345.67元", "12,345.67元"),
        ("13800000000元的合同", "13800000000元"),
        ("人民币 13 800 000 000 元", "13 800 000 000 元"),
        ("用户数 1 411 750 000", "1 411 750 000"),
        ("₹ 1,50,000 per month", "₹ 1,50,000"),
        ("JPY 120,000,000", "JPY 120,000,000"),
        ("1.000.000 EUR Umsatz", "1.000.000 EUR"),
        ("营收增长 +250 000 000", "+250 000 000"),
    ] {
        out.push(not_phone(t.into(), n, "amount"));
    }
    // Identifiers.
    for _ in 0..6 {
        let d = digits(rng, 10);
        out.push(not_phone(format!("Order #{d} shipped"), &d, "id"));
        let d = digits(rng, 10);
        out.push(not_phone(format!("Order no. {d} shipped"), &d, "id"));
        let d = digits(rng, 12);
        out.push(not_phone(format!("订单号：{d}"), &d, "id"));
        let d = format!("ORD-2023{:02}{:02}-{}", rng.gen_range(1..13), rng.gen_range(1..29), digits(rng, 4));
        out.push(not_phone(format!("ref {d}"), &d, "id"));
        let d = digits(rng, 20);
        out.push(not_phone(format!("订单号 {d}"), &d, "id"));
        let d = format!("INV-{}-{}", rng.gen_range(2019..2026), digits(rng, 6));
        out.push(not_phone(format!("invoice {d} is due"), &d, "id"));
    }
    for (t, n) in [
        ("IBAN DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0130 00"),
        ("IBAN GB29 NWBK 6016 1331 9268 19", "GB29 NWBK 6016 1331 9268 19"),
        ("IBAN FR14 2004 1010 0505 0001 3M02 606", "FR14 2004 1010 0505 0001 3M02 606"),
        ("tracking 1Z999AA10123456784", "1Z999AA10123456784"),
        ("uuid 123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"),
        ("SKU 4006381333931", "4006381333931"),
        ("serial SN-8812-3349-01", "SN-8812-3349-01"),
        ("booking ref 4155550123", "4155550123"),
        ("case number 0207946095", "0207946095"),
        ("运单号 0755123456789", "0755123456789"),
    ] {
        out.push(not_phone(t.into(), n, "id"));
    }
    // Dates in many formats.
    for _ in 0..60 {
        let (y, m, d) = (rng.gen_range(1950..2031), rng.gen_range(1..13), rng.gen_range(1..29));
        let (hh, mm, ss) = (rng.gen_range(0..24), rng.gen_range(0..60), rng.gen_range(0..60));
        let s = match rng.gen_range(0..12) {
            0 => format!("{y}-{m:02}-{d:02}"),
            1 => format!("{d:02}.{m:02}.{y}"),
            2 => format!("{d:02}-{m:02}-{y}"),
            3 => format!("{m:02}/{d:02}/{y}"),
            4 => format!("{y}{m:02}{d:02}"),
            5 => format!("{d:02}{m:02}{y}"),
            6 => format!("{y}年{m}月{d}日"),
            7 => format!("{y}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z"),
            8 => format!("{y}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}"),
            9 => format!("{d:02}.{m:02}.{y} {hh:02}:{mm:02}"),
            10 => format!("{y}/{m:02}/{d:02}"),
            _ => format!("{y} {m:02} {d:02}"),
        };
        let text = if rng.gen_bool(0.5) { format!("due {s} at the latest") } else { format!("会议定在{s}举行") };
        out.push(not_phone(text, &s, "date"));
    }
    // Versions.
    for _ in 0..15 {
        let s = match rng.gen_range(0..4) {
            0 => format!("v{}.{}.{}", rng.gen_range(0..20), rng.gen_range(0..50), rng.gen_range(0..300)),
            1 => format!("10.0.{}.{}", rng.gen_range(10000..30000), rng.gen_range(100..9999)),
            2 => format!(
                "{}.{}.{}-rc.{}",
                rng.gen_range(0..5),
                rng.gen_range(0..30),
                rng.gen_range(0..10),
                rng.gen_range(1..9)
            ),
            _ => format!("{}.0.{}.{}", rng.gen_range(90..130), rng.gen_range(1000..9999), rng.gen_range(10..300)),
        };
        out.push(not_phone(format!("upgraded to {s} yesterday"), &s, "version"));
    }
    // ISBNs.
    for _ in 0..10 {
        let s = isbn13(rng);
        out.push(not_phone(format!("ISBN {s}"), &s, "isbn"));
        out.push(not_phone(format!("the book {s} is out of print"), &s, "isbn"));
        if let Some(s) = isbn10(rng) {
            out.push(not_phone(format!("see {s} for details"), &s, "isbn"));
            let compact: String = s.chars().filter(char::is_ascii_digit).collect();
            out.push(not_phone(format!("ISBN-10: {compact}"), &compact, "isbn"));
        }
    }
    // Coordinates, times, percentages, timestamps, addresses.
    for _ in 0..12 {
        let (a, b) = (rng.gen_range(-90.0..90.0f64), rng.gen_range(-180.0..180.0f64));
        let s = match rng.gen_range(0..3) {
            0 => format!("{a:.4}, {b:.4}"),
            1 => format!("{a:.6} {b:.6}"),
            _ => format!("{:.4}° N, {:.4}° E", a.abs(), b.abs()),
        };
        out.push(not_phone(format!("meet at {s}"), &s, "coordinates"));
    }
    for _ in 0..12 {
        let (h, m, s) = (rng.gen_range(0..24), rng.gen_range(0..60), rng.gen_range(0..60));
        let t = match rng.gen_range(0..3) {
            0 => format!("{h:02}:{m:02}:{s:02}"),
            1 => format!("{h:02}:{m:02}-{:02}:{m:02}", (h + 8) % 24),
            _ => format!("{h}h {m}m {s}s"),
        };
        out.push(not_phone(format!("the run took {t}"), &t, "time"));
    }
    for _ in 0..12 {
        let p = format!("{:.2}%", rng.gen_range(0.0..100.0f64));
        let p = if rng.gen_bool(0.5) { p } else { format!("+{p}") };
        out.push(not_phone(format!("conversion rose {p} this week"), &p, "percent"));
    }
    for _ in 0..8 {
        let t = rng.gen_range(1_500_000_000u64..1_800_000_000).to_string();
        out.push(not_phone(format!("ts={t}"), &t, "timestamp"));
        let t = rng.gen_range(1_500_000_000_000u64..1_800_000_000_000).to_string();
        out.push(not_phone(format!("created_at {t}"), &t, "timestamp"));
        let ip = format!(
            "{}.{}.{}.{}",
            rng.gen_range(1..255),
            rng.gen_range(0..255),
            rng.gen_range(0..255),
            rng.gen_range(1..255)
        );
        out.push(not_phone(format!("server {ip} is down"), &ip, "ip"));
    }
    out
}
