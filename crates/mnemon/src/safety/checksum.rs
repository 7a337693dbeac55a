//! Check-digit algorithms used to confirm that a digit run really is a card
//! number or a resident ID before it is redacted.
//!
//! - Bank cards: the Luhn (mod 10) algorithm of ISO/IEC 7812-1, Annex B.
//! - Mainland-China resident identity numbers: GB 11643-1999, whose check
//!   character is ISO 7064 MOD 11-2 over the first 17 digits; the birth date
//!   (digits 7–14) and the province code (digits 1–2) are checked too.
//!
//! All functions take ASCII text and never panic.

/// Whether `digits` passes the Luhn (mod 10) check of ISO/IEC 7812-1.
///
/// `digits` must consist of ASCII digits only (no spaces or dashes) and be at
/// least 2 long; anything else returns `false`. The rightmost digit is the
/// check digit: counting from it, every second digit is doubled (minus 9 when
/// above 9) and the total must be a multiple of 10.
///
/// ```
/// use mnemon::safety::luhn_valid;
/// assert!(luhn_valid("4111111111111111"));
/// assert!(!luhn_valid("4111111111111112"));
/// ```
pub fn luhn_valid(digits: &str) -> bool {
    if digits.len() < 2 {
        return false;
    }
    let mut sum = 0u32;
    for (i, b) in digits.bytes().rev().enumerate() {
        if !b.is_ascii_digit() {
            return false;
        }
        let mut d = u32::from(b - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum.is_multiple_of(10)
}

/// ISO 7064 MOD 11-2 weights for positions 1..=17 (`2^(18-i) mod 11`).
const ID_WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
/// Check character for each value of `sum mod 11`.
const ID_CHECK: [char; 11] = ['1', '0', 'X', '9', '8', '7', '6', '5', '4', '3', '2'];
/// Province-level codes (first two digits) of GB/T 2260, plus 71 (Taiwan),
/// 81 (Hong Kong), 82 (Macao) and 83 (residence permits for Taiwan residents).
const ID_PROVINCES: [u8; 35] = [
    11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52, 53, 54, 61, 62, 63,
    64, 65, 71, 81, 82, 83,
];

/// The GB 11643-1999 check character (`'0'..='9'` or `'X'`) for the first 17
/// digits of a resident identity number.
///
/// Returns `None` unless `first17` is exactly 17 ASCII digits. The check is
/// ISO 7064 MOD 11-2: `sum(d_i * w_i) mod 11` with weights
/// `7 9 10 5 8 4 2 1 6 3 7 9 10 5 8 4 2`, mapped through `10X98765432`.
///
/// ```
/// use mnemon::safety::cn_id_check_char;
/// assert_eq!(cn_id_check_char("11010519491231002"), Some('X'));
/// ```
pub fn cn_id_check_char(first17: &str) -> Option<char> {
    let bytes = first17.as_bytes();
    if bytes.len() != 17 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let sum: u32 = bytes.iter().zip(ID_WEIGHTS).map(|(b, w)| u32::from(b - b'0') * w).sum();
    ID_CHECK.get((sum % 11) as usize).copied()
}

/// Whether `id` is a well-formed 18-character mainland-China resident
/// identity number (GB 11643-1999).
///
/// Checks, in order: 17 ASCII digits followed by a digit or `X`/`x`; a known
/// province code in the first two digits; a real calendar date
/// `YYYYMMDD` in digits 7–14 with the year in `1900..=2099`; and the
/// ISO 7064 MOD 11-2 check character. The older 15-digit numbers (issued
/// before 1999, no check digit) are not accepted.
///
/// ```
/// use mnemon::safety::cn_id_valid;
/// assert!(cn_id_valid("11010519491231002X"));
/// assert!(!cn_id_valid("110105194912310021")); // wrong check character
/// ```
pub fn cn_id_valid(id: &str) -> bool {
    let bytes = id.as_bytes();
    if bytes.len() != 18 {
        return false;
    }
    let Some(expected) = id.get(..17).and_then(cn_id_check_char) else {
        return false;
    };
    let last = bytes[17].to_ascii_uppercase() as char;
    if last != expected {
        return false;
    }
    let num =
        |r: std::ops::Range<usize>| -> u32 { bytes[r].iter().fold(0u32, |acc, b| acc * 10 + u32::from(b - b'0')) };
    let province = num(0..2) as u8;
    if !ID_PROVINCES.contains(&province) {
        return false;
    }
    plausible_date(num(6..10), num(10..12), num(12..14))
}

/// A real Gregorian date with the year in `1900..=2099`.
fn plausible_date(year: u32, month: u32, day: u32) -> bool {
    if !(1900..=2099).contains(&year) || !(1..=12).contains(&month) || day == 0 {
        return false;
    }
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    day <= days
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_valid_examples() {
        for n in [
            "4111111111111111",
            "5500005555555559",
            "378282246310005",
            "6222020200112233446",
            "30569309025904",
            "79927398713",
        ] {
            assert!(luhn_valid(n), "{n} should pass Luhn");
        }
    }

    #[test]
    fn luhn_invalid_examples() {
        for n in ["4111111111111112", "6222020200112233447", "79927398710", "", "0", "4111 1111", "41a1"] {
            assert!(!luhn_valid(n), "{n:?} should fail Luhn");
        }
    }

    #[test]
    fn id_check_char_examples() {
        assert_eq!(cn_id_check_char("11010519491231002"), Some('X'));
        assert_eq!(cn_id_check_char("44030419900101001"), Some('1'));
        assert_eq!(cn_id_check_char("1101051949123100"), None);
        assert_eq!(cn_id_check_char("1101051949123100a"), None);
        assert_eq!(cn_id_check_char("你好"), None);
    }

    #[test]
    fn id_valid_examples() {
        assert!(cn_id_valid("11010519491231002X"));
        assert!(cn_id_valid("11010519491231002x"));
        assert!(cn_id_valid("440304199001010011"));
    }

    #[test]
    fn id_invalid_examples() {
        // Wrong check characters.
        assert!(!cn_id_valid("110105194912310021"));
        assert!(!cn_id_valid("440304199001010012"));
        // Right checksum, impossible date (Feb 30) or unknown province.
        let bad_date = format!("1101051990023000{}", "1");
        let c = cn_id_check_char(&bad_date).unwrap_or('?');
        assert!(!cn_id_valid(&format!("{bad_date}{c}")));
        let bad_province = "99010519491231002";
        let c = cn_id_check_char(bad_province).unwrap_or('?');
        assert!(!cn_id_valid(&format!("{bad_province}{c}")));
        // Year out of range.
        let old = "11010518001231002";
        let c = cn_id_check_char(old).unwrap_or('?');
        assert!(!cn_id_valid(&format!("{old}{c}")));
        // Shapes.
        assert!(!cn_id_valid(""));
        assert!(!cn_id_valid("11010519491231002"));
        assert!(!cn_id_valid("11010519491231002XX"));
        assert!(!cn_id_valid("1101051949123100XX"));
        assert!(!cn_id_valid("一二三四五六"));
    }

    #[test]
    fn leap_years() {
        assert!(plausible_date(2000, 2, 29));
        assert!(plausible_date(2024, 2, 29));
        assert!(!plausible_date(1900, 2, 29));
        assert!(!plausible_date(2023, 2, 29));
        assert!(!plausible_date(2023, 4, 31));
        assert!(!plausible_date(2023, 13, 1));
        assert!(!plausible_date(2023, 1, 0));
    }
}
