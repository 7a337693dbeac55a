//! Personal-data detection and redaction.
//!
//! [`Redactor::find`] locates personal data and [`Redactor::redact`] replaces
//! each occurrence with a placeholder such as `[PHONE]`. Detection is
//! validation-driven rather than "any long digit run": every built-in kind has
//! a shape, a boundary rule and, where one exists, a checksum.
//!
//! # Built-in detectors
//!
//! | kind | placeholder | count key | accepted shapes |
//! |---|---|---|---|
//! | [`PiiKind::CnId`] | `[CN_ID]` | `CN_ID` | 18 chars (17 digits + digit/`X`), plain or grouped 6-8-4 / 6-4-4-4 / 4-4-4-4-2; province code, birth date and GB 11643-1999 check character verified |
//! | [`PiiKind::BankCard`] | `[CARD]` | `CARD` | 13–19 digits, plain or grouped in fours (last group 1–4) or 4-6-5 / 4-6-4; issuer prefix plausible for the length; Luhn verified |
//! | [`PiiKind::UsSsn`] | `[SSN]` | `US_SSN` | `123-45-6789`; nine digits plain or grouped 3-2-4, 3-6 or 3-3-3 by spaces, dots or dashes (`123 45 6789`, `123.45.6789`, `212-097694`, `123 - 45 - 6789`, `212 097 694`, `123456789`) only after `SSN`, `SSNs` or `social security` (any case, also `social-security`) or `社会安全号`; `SSN` may be glued to them (`ssn212097694`); not after `#` or an identifier label, nor tied to a path or code by `-` `/` `_`; an area other than 000, 666 and 900–999, a group other than 00, a serial other than 0000 (the Social Security Administration's never-issued ranges) |
//! | [`PiiKind::CnMobile`] | `[PHONE]` | `CN_MOBILE` | a telephone number (below) that libphonenumber types as a mobile number of calling code 86: `13812345678`, `138 1234 5678`, `+86 138-1234-5678`, `0086 13812345678` |
//! | [`PiiKind::Phone`] | `[PHONE]` | `PHONE` | every other telephone number (below): `07700 900456`, `(415) 555-0100`, `03-1234-5678`, `01.23.45.67.89`, `+44 (0)20 7946 0958`, `0049 30 123456` |
//! | [`PiiKind::Email`] | `[EMAIL]` | `EMAIL` | `local@domain.tld` in ASCII or internationalised (`renée@bücher.de`, `张三@例子.中国`, `。` as a label separator); a TLD of 2–24 letters, or in a script without case one that the Public Suffix List knows |
//!
//! Telephone numbers: digit runs joined by spaces, dashes, dots or one pair
//! of parentheses, 8–19 digits, optionally after `+` or `00`, confirmed with
//! libphonenumber's metadata. International writings are read with their own
//! country's metadata, national writings with the redactor's
//! [`PhoneRegions`] (default [`DEFAULT_PHONE_REGIONS`](super::DEFAULT_PHONE_REGIONS):
//! CN, US, GB, DE, FR, JP; see [`Redactor::with_phone_regions`]). Valid
//! mobile, fixed-line, VoIP, personal, pager and voicemail numbers are
//! redacted, and so are numbers of reserved or unallocated ranges written in
//! full with their prefix and in the library's own grouping (the UK drama
//! range `07700 900xxx`); toll-free, premium-rate, shared-cost and UAN
//! numbers, quantities (`+100 000 000`), dates, ISBNs, amounts and
//! identifiers are kept. The rules, and what they cost, are in
//! [`super::phone`].
//!
//! Card issuer prefixes (first digits, by total length): 13 → `4`;
//! 14 → `30`, `36`, `38`, `39`; 15 → `34`, `37`; 16 → `2221`–`2720`, `35`, `4`,
//! `5`, `6`, `9`; 17–19 → `35`, `4`, `5`, `6`, `9` (`9` covers domestic
//! Chinese debit cards such as `9558…`). Digit runs starting with `1`, `7`
//! or `8` are never cards, which keeps Unix timestamps (seconds or
//! milliseconds) and compact `yyyymmddHHMMSS` stamps out.
//!
//! # Boundaries
//!
//! Digits are ASCII `0-9` or full-width `０-９`. A candidate always covers
//! whole digit runs: a digit run is never split, so a 20-digit order number
//! never yields an 11-digit "phone". A candidate is rejected when the
//! character before it is an ASCII or full-width letter, digit or `_`
//! (or a `+` it does not use), or when the character after it is a letter,
//! digit, `_`, or an `@` followed by a valid domain (the number is then the
//! local part of an e-mail address, replaced whole as `[EMAIL]`). Three
//! exceptions: a telephone word glued before (`tel13812345678`), an
//! extension glued after (`415-555-0100x12`, `…ext.3`: the number is
//! replaced, the extension kept), and a word joined by a dash outside paths
//! and identifiers (`call-13812345678`; `…/bjo-2022-321842` stays). Chinese
//! characters and punctuation are not word characters here, so
//! `手机号是13812345678，` matches. Runs joined by a
//! single `.` belong together (decimals, versions, IP addresses): a candidate
//! that continues with `.` and more digits on either side is rejected.
//! A grouped card or ID that continues with another group joined the same
//! way (`2023 1105 1234 5678 9012`) is rejected as part of a longer number.
//!
//! # What the detectors read
//!
//! Detectors (custom patterns included) read a view of the text in which
//! invisible characters ([`is_invisible`]: U+200B–U+200D, U+2060, U+00AD,
//! U+FEFF, variation selectors and every other default-ignorable code point)
//! are dropped and full-width, half-width, small-form and mathematical
//! letters, digits and signs are replaced by their NFKC form; digits of
//! other scripts, runs of circled or superscript digits and runs of Chinese
//! or Japanese numerals (`一三九…`, `〇九〇`) read as the digits they stand for.
//! `1381234\u{200B}5678`, `ja\u{00AD}ne@example.com` and
//! `ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ` are found as the number and the address a
//! reader sees. A span found in the view covers the caller's characters from
//! its first to its last, so invisible characters inside it are replaced
//! with the rest; those just outside are kept. Boundaries below apply to the
//! view (an invisible character between a letter and a number does not
//! separate them).
//!
//! # Overlaps
//!
//! When candidates overlap, custom patterns win, then CN ID > card = SSN > phones
//! (CN mobile and other phones rank equal) > e-mail; within a rank the
//! longest candidate wins, then CN mobile over other phones, then the
//! leftmost.
//!
//! # Placeholders, length bound and idempotence
//!
//! Built-in placeholders are 5–7 bytes long ([`MAX_GROWTH_PER_SPAN`] = 8 is
//! their bound); a custom placeholder is `[LABEL]`, `label.len() + 2` bytes.
//! Since each replaced span is at least one byte, the redacted text is never
//! longer than `text.len() + redactor.max_growth_per_span() * spans`, which
//! with only built-in detectors is `text.len() + 8 * spans`.
//!
//! Redaction runs to a fixed point: after replacing the spans found, the text
//! is scanned again (a removed number can no longer block its neighbour) until
//! nothing new is found, so `redact(redact(t).text) == redact(t)` for the
//! built-in detectors. Custom patterns never match inside placeholders during
//! that loop; idempotence with custom patterns holds when a pattern cannot
//! match placeholder text such as `[PHONE]`.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use super::checksum::{cn_id_valid, luhn_valid};
use super::phone::{self, Candidate, PhoneCache, PhoneRegions, Written};
use crate::error::{Error, Result};
use crate::text::is_invisible;

/// What the engine does when a memory's content contains personal data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PiiPolicy {
    /// Replace every occurrence with its placeholder before the content is
    /// embedded or written; only the redacted text is ever stored.
    #[default]
    Redact,
    /// Refuse the write with [`Error::Rejected`] naming the kinds and counts.
    Reject,
    /// Store the content unchanged.
    Off,
}

/// The kind of a personal-data occurrence.
///
/// Built-in kinds have fixed placeholders and count keys (see
/// [`PiiKind::name`]); `Custom(i)` is the `i`-th pattern added with
/// [`Redactor::with_pattern`] (0-based, in order of addition).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PiiKind {
    /// Mainland-China mobile number (calling code 86, libphonenumber type
    /// mobile; national or after `+86`/`0086`). Placeholder `[PHONE]`, count
    /// key `CN_MOBILE`.
    CnMobile,
    /// Mainland-China resident identity number (GB 11643-1999, 18 chars).
    /// Placeholder `[CN_ID]`, count key `CN_ID`.
    CnId,
    /// Payment card number (13–19 digits, Luhn). Placeholder `[CARD]`,
    /// count key `CARD`.
    BankCard,
    /// E-mail address. Placeholder `[EMAIL]`, count key `EMAIL`.
    Email,
    /// United States Social Security number (area-group-serial, 9 digits).
    /// Placeholder `[SSN]`, count key `US_SSN`.
    UsSsn,
    /// Other telephone number carrying personal data, written
    /// internationally (`+…`, `00…`) or nationally for one of the
    /// redactor's [`PhoneRegions`]. Placeholder `[PHONE]`, count key `PHONE`.
    Phone,
    /// A caller-supplied pattern: the index among the redactor's patterns.
    /// Placeholder and count key are the pattern's label.
    Custom(u16),
}

impl PiiKind {
    /// The count key of a built-in kind (`"CN_MOBILE"`, `"CN_ID"`, `"CARD"`,
    /// `"EMAIL"`, `"PHONE"`, `"US_SSN"`); `None` for [`PiiKind::Custom`], whose key is its
    /// label (see [`Redactor::label`]).
    pub const fn name(self) -> Option<&'static str> {
        match self {
            PiiKind::CnMobile => Some("CN_MOBILE"),
            PiiKind::CnId => Some("CN_ID"),
            PiiKind::BankCard => Some("CARD"),
            PiiKind::Email => Some("EMAIL"),
            PiiKind::Phone => Some("PHONE"),
            PiiKind::UsSsn => Some("US_SSN"),
            PiiKind::Custom(_) => None,
        }
    }

    /// The placeholder of a built-in kind (`"[PHONE]"`, `"[CN_ID]"`,
    /// `"[CARD]"`, `"[EMAIL]"`, `"[SSN]"`; CN mobile numbers share `"[PHONE]"`); `None`
    /// for [`PiiKind::Custom`].
    pub const fn placeholder(self) -> Option<&'static str> {
        match self {
            PiiKind::CnMobile | PiiKind::Phone => Some("[PHONE]"),
            PiiKind::CnId => Some("[CN_ID]"),
            PiiKind::BankCard => Some("[CARD]"),
            PiiKind::Email => Some("[EMAIL]"),
            PiiKind::UsSsn => Some("[SSN]"),
            PiiKind::Custom(_) => None,
        }
    }

    /// Overlap precedence: lower wins.
    fn rank(self) -> (u8, u8) {
        match self {
            PiiKind::Custom(_) => (0, 0),
            PiiKind::CnId => (1, 0),
            PiiKind::BankCard => (2, 0),
            PiiKind::UsSsn => (2, 1),
            PiiKind::CnMobile => (3, 0),
            PiiKind::Phone => (3, 1),
            PiiKind::Email => (4, 0),
        }
    }
}

/// One occurrence of personal data: a byte range of the scanned text.
///
/// `start..end` is non-empty and lies on `char` boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PiiSpan {
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
    /// What was found.
    pub kind: PiiKind,
}

impl PiiSpan {
    /// `start..end`, for slicing the scanned text.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}

/// The result of [`Redactor::redact`]: the redacted text and how many
/// occurrences of each kind were replaced. It never contains the values found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redaction {
    /// The input with every occurrence replaced by its placeholder.
    pub text: String,
    /// Occurrences per count key: `"CN_MOBILE"`, `"CN_ID"`, `"CARD"`,
    /// `"EMAIL"`, `"PHONE"` or a custom label. Kinds with no occurrence are
    /// absent.
    pub counts: BTreeMap<String, usize>,
}

impl Redaction {
    /// Total number of replaced occurrences (the sum of [`Redaction::counts`]).
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    /// Whether nothing was replaced.
    pub fn is_clean(&self) -> bool {
        self.counts.is_empty()
    }
}

/// Upper bound, in bytes, on the length of a built-in placeholder and hence on
/// how much one replaced span can grow the text.
pub const MAX_GROWTH_PER_SPAN: usize = 8;

/// Most custom patterns one [`Redactor`] accepts.
pub const MAX_CUSTOM_PATTERNS: usize = 64;

/// Longest custom label, in bytes.
pub const MAX_LABEL_LEN: usize = 32;

#[derive(Clone, Debug)]
struct CustomPattern {
    label: String,
    placeholder: String,
    regex: Regex,
}

/// Finds and replaces personal data; see the [module docs](self) for the
/// detectors, boundaries, precedence and bounds.
///
/// Built once and shared: it is `Send + Sync`, and cloning copies only the
/// custom patterns (compiled regexes share their programs) and the phone
/// regions. All methods are pure functions of the input text. The first
/// phone-number lookup in a process loads libphonenumber's metadata
/// (about 0.2 s, once; `benches/phones.rs` measures it).
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    custom: Vec<CustomPattern>,
    phones: PhoneRegions,
}

impl Redactor {
    /// A redactor with the built-in detectors only, reading national phone
    /// numbers of the [`DEFAULT_PHONE_REGIONS`](super::DEFAULT_PHONE_REGIONS).
    pub fn new() -> Self {
        Self { custom: Vec::new(), phones: PhoneRegions::default() }
    }

    /// Reads nationally written phone numbers (no `+` or `00`) as numbers of
    /// `regions`, in order, instead of the [`DEFAULT_PHONE_REGIONS`](super::DEFAULT_PHONE_REGIONS);
    /// international numbers are read whatever the regions. Build `regions`
    /// with [`PhoneRegions::new`], which validates the codes.
    pub fn with_phone_regions(mut self, regions: PhoneRegions) -> Self {
        self.phones = regions;
        self
    }

    /// The regions nationally written phone numbers are read for.
    pub fn phone_regions(&self) -> &PhoneRegions {
        &self.phones
    }

    /// Adds a caller pattern whose matches are replaced by `[LABEL]` and
    /// counted under `label`. It becomes [`PiiKind::Custom`]`(i)` where `i` is
    /// the number of patterns added before it. Custom matches take precedence
    /// over built-in detections; empty matches are ignored. Several patterns
    /// may share a label.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `"pii_label"` or `"pii_pattern"`) when
    /// `label` is not 1–32 characters of `[A-Z0-9_]`, names a built-in kind
    /// (`CN_MOBILE`, `CN_ID`, `CARD`, `EMAIL`, `PHONE`, `US_SSN`), when `regex` does not
    /// compile (Rust `regex` syntax), or when [`MAX_CUSTOM_PATTERNS`] patterns
    /// are already present.
    pub fn with_pattern(mut self, label: &str, regex: &str) -> Result<Self> {
        if label.is_empty()
            || label.len() > MAX_LABEL_LEN
            || !label.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(Error::invalid(
                "pii_label",
                format!("label must be 1-{MAX_LABEL_LEN} characters of [A-Z0-9_], got {label:?}"),
            ));
        }
        let builtin =
            [PiiKind::CnMobile, PiiKind::CnId, PiiKind::BankCard, PiiKind::Email, PiiKind::Phone, PiiKind::UsSsn];
        if builtin.iter().any(|k| k.name() == Some(label)) {
            return Err(Error::invalid("pii_label", format!("label {label} is reserved for a built-in detector")));
        }
        if self.custom.len() >= MAX_CUSTOM_PATTERNS {
            return Err(Error::invalid("pii_pattern", format!("at most {MAX_CUSTOM_PATTERNS} custom patterns")));
        }
        let compiled =
            Regex::new(regex).map_err(|e| Error::invalid("pii_pattern", format!("pattern for {label}: {e}")))?;
        self.custom.push(CustomPattern { label: label.to_owned(), placeholder: format!("[{label}]"), regex: compiled });
        Ok(self)
    }

    /// The count key of `kind`: the built-in name or the custom label; `None`
    /// for a `Custom` index this redactor does not have.
    pub fn label(&self, kind: PiiKind) -> Option<&str> {
        match kind {
            PiiKind::Custom(i) => self.custom.get(usize::from(i)).map(|p| p.label.as_str()),
            other => other.name(),
        }
    }

    /// The placeholder that replaces `kind`; `None` for a `Custom` index this
    /// redactor does not have.
    pub fn placeholder(&self, kind: PiiKind) -> Option<&str> {
        match kind {
            PiiKind::Custom(i) => self.custom.get(usize::from(i)).map(|p| p.placeholder.as_str()),
            other => other.placeholder(),
        }
    }

    /// The most bytes one replaced span can add: [`MAX_GROWTH_PER_SPAN`] (8),
    /// or the longest custom placeholder (`label.len() + 2`) if that is
    /// longer. `redact(t).text.len() <= t.len() + max_growth_per_span() *
    /// redact(t).total()` always holds.
    pub fn max_growth_per_span(&self) -> usize {
        self.custom.iter().map(|p| p.placeholder.len()).fold(MAX_GROWTH_PER_SPAN, usize::max)
    }

    /// All personal-data occurrences in `text`: byte ranges on `char`
    /// boundaries, non-empty, non-overlapping and sorted by start. These are
    /// exactly the spans [`Redactor::redact`] replaces.
    pub fn find(&self, text: &str) -> Vec<PiiSpan> {
        match DetectionView::of(text) {
            None => self.find_plain(text),
            Some(view) => self.find_plain(&view.text).into_iter().map(|s| view.to_original(s)).collect(),
        }
    }

    /// [`Redactor::find`] on text that is its own detection view.
    fn find_plain(&self, text: &str) -> Vec<PiiSpan> {
        let mut cache = PhoneCache::default();
        let mut spans = self.find_pass(text, &[], &mut cache);
        if spans.is_empty() {
            return spans;
        }
        // Fixed point: rescan the redacted text until nothing new appears.
        // Terminates: every new span covers original bytes not covered before.
        loop {
            let (rendered, placed) = self.render(text, &spans);
            let protected: Vec<(usize, usize)> = placed.iter().map(|p| (p.t_start, p.t_end)).collect();
            let fresh = self.find_pass(&rendered, &protected, &mut cache);
            if fresh.is_empty() {
                return spans;
            }
            for s in fresh {
                // Shift from rendered to original coordinates using the last
                // placeholder that ends at or before the span.
                let idx = placed.partition_point(|p| p.t_end <= s.start);
                let (start, end) = match idx.checked_sub(1).and_then(|i| placed.get(i)) {
                    Some(p) => (s.start - p.t_end + p.o_end, s.end - p.t_end + p.o_end),
                    None => (s.start, s.end),
                };
                spans.push(PiiSpan { start, end, kind: s.kind });
            }
            spans.sort_by_key(|s| s.start);
        }
    }

    /// Replaces every occurrence found by [`Redactor::find`] with its
    /// placeholder and counts them per kind. Never panics; see the module docs
    /// for the length bound and idempotence.
    pub fn redact(&self, text: &str) -> Redaction {
        let spans = self.find(text);
        let (rendered, _) = self.render(text, &spans);
        let mut counts = BTreeMap::new();
        for s in &spans {
            if let Some(label) = self.label(s.kind) {
                *counts.entry(label.to_owned()).or_insert(0) += 1;
            }
        }
        Redaction { text: rendered, counts }
    }

    /// Applies `policy` to `text`: [`PiiPolicy::Redact`] returns
    /// [`Redactor::redact`]; [`PiiPolicy::Off`] returns the text unchanged with
    /// no counts; [`PiiPolicy::Reject`] returns the text unchanged when it is
    /// clean.
    ///
    /// # Errors
    /// [`Error::Rejected`] under [`PiiPolicy::Reject`] when personal data is
    /// found; the message names kinds and counts (e.g.
    /// `personal data: CN_MOBILE=1, EMAIL=2`), never the values.
    pub fn apply(&self, text: &str, policy: PiiPolicy) -> Result<Redaction> {
        match policy {
            PiiPolicy::Off => Ok(Redaction { text: text.to_owned(), counts: BTreeMap::new() }),
            PiiPolicy::Redact => Ok(self.redact(text)),
            PiiPolicy::Reject => {
                let found = self.redact(text);
                if found.is_clean() {
                    return Ok(Redaction { text: text.to_owned(), counts: BTreeMap::new() });
                }
                let kinds: Vec<String> = found.counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
                Err(Error::Rejected(format!("personal data: {}", kinds.join(", "))))
            }
        }
    }

    /// `text` with `spans` (sorted, disjoint) replaced, and where each
    /// placeholder landed.
    fn render(&self, text: &str, spans: &[PiiSpan]) -> (String, Vec<Placed>) {
        let mut out = String::with_capacity(text.len() + spans.len() * MAX_GROWTH_PER_SPAN);
        let mut placed = Vec::with_capacity(spans.len());
        let mut at = 0;
        for s in spans {
            out.push_str(&text[at..s.start]);
            let t_start = out.len();
            out.push_str(self.placeholder(s.kind).unwrap_or("[REDACTED]"));
            placed.push(Placed { t_start, t_end: out.len(), o_end: s.end });
            at = s.end;
        }
        out.push_str(&text[at..]);
        (out, placed)
    }

    /// One scan: every candidate, then overlap resolution. Candidates that
    /// touch a `protected` byte range (a placeholder) are dropped.
    fn find_pass(&self, text: &str, protected: &[(usize, usize)], cache: &mut PhoneCache) -> Vec<PiiSpan> {
        let mut cands: Vec<PiiSpan> = Vec::new();
        for (i, p) in self.custom.iter().enumerate() {
            let kind = PiiKind::Custom(u16::try_from(i).unwrap_or(u16::MAX));
            for m in p.regex.find_iter(text) {
                if m.start() < m.end() {
                    cands.push(PiiSpan { start: m.start(), end: m.end(), kind });
                }
            }
        }
        digit_candidates(text, &mut Phones { regions: &self.phones, cache }, &mut cands);
        email_candidates(text, &mut cands);
        cands.retain(|c| !overlaps(protected, c.start, c.end));
        resolve(cands)
    }
}

/// The text the detectors read when it differs from the caller's: every
/// invisible character ([`is_invisible`]: zero-width space and joiners, word
/// joiner, soft hyphen, BOM, variation selectors, …) dropped and every other
/// character of another width or style ([`reads_as_nfkc`]) replaced by its
/// one-character NFKC form (full-width `＠`, `ｊ` and `１`, mathematical `𝟏`
/// read as `@`, `j`, `1`), so that what a reader sees as one number or
/// address is found as one. Each character of
/// the view remembers the caller's character it came from; a span found in
/// the view covers the caller's characters from its first to its last one,
/// invisible characters between them included, so they are replaced too.
struct DetectionView {
    text: String,
    /// One per caller character kept: (view start, original start, original end).
    segs: Vec<(usize, usize, usize)>,
}

impl DetectionView {
    /// The view of `text`, or `None` when it is `text` itself (always for
    /// ASCII text).
    fn of(text: &str) -> Option<DetectionView> {
        if text.is_ascii() {
            return None;
        }
        let mut view = String::with_capacity(text.len());
        let mut segs = Vec::with_capacity(text.len());
        let mut changed = false;
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let numerals = cjk_numeral_runs(&chars);
        for (k, &(at, c)) in chars.iter().enumerate() {
            let end = at + c.len_utf8();
            if c.is_ascii() {
                segs.push((view.len(), at, end));
                view.push(c);
                continue;
            }
            if is_invisible(c) {
                changed = true;
                continue;
            }
            // Only one-character forms, so that every character of the view
            // stands for exactly one of the caller's and a span never starts
            // or ends inside what one character became (`⑴` is `(1)`).
            let mut nfkc = std::iter::once(c).nfkc();
            // Neighbours as a reader sees them: invisible characters skipped.
            let styled = |d: &(usize, char)| styled_digit(d.1).is_some() || matches!(d.1, '\u{207A}' | '\u{208A}');
            let visible = |d: &&(usize, char)| !is_invisible(d.1);
            let next_styled = || chars[k + 1..].iter().find(visible).is_some_and(styled);
            let prev_styled = || chars[..k].iter().rev().find(visible).is_some_and(styled);
            let read = if let Some(d) = script_digit(c) {
                char::from(b'0' + d)
            } else if let Some(d) = styled_digit(c).filter(|_| next_styled() || prev_styled()) {
                char::from(b'0' + d)
            } else if let Some(d) = cjk_digit(c).filter(|_| numerals.get(k) == Some(&true)) {
                char::from(b'0' + d)
            } else if matches!(c, '\u{207A}' | '\u{208A}') && next_styled() {
                // Superscript or subscript plus before such digits (`⁺⁴⁴`).
                '+'
            } else {
                match (nfkc.next(), nfkc.next()) {
                    (Some(d), None) if reads_as_nfkc(c) => d,
                    _ => c,
                }
            };
            changed |= read != c;
            segs.push((view.len(), at, end));
            view.push(read);
        }
        changed.then_some(DetectionView { text: view, segs })
    }

    /// `span` of the view as a span of the caller's text: from the start of
    /// the character its first byte came from to the end of the character
    /// its last byte came from.
    fn to_original(&self, span: PiiSpan) -> PiiSpan {
        let seg = |byte: usize| self.segs[self.segs.partition_point(|s| s.0 <= byte).saturating_sub(1)];
        PiiSpan { start: seg(span.start).1, end: seg(span.end - 1).2, kind: span.kind }
    }
}

/// For each character of `chars` (empty when there is no numeral at all),
/// whether it is a Chinese or Japanese
/// numeral ([`cjk_digit`]) the detection view reads as a digit: one of a
/// run of two or more (invisible characters inside skipped) that no digit,
/// sign or ASCII letter touches, directly or across the spaces and phone
/// punctuation (`- / . ( )`) between them (`一二13812345678` and
/// `〇〇 13812345678` keep their numerals as words, so the number in digits
/// stays whole: a number is written in numerals or in digits, and read as
/// one run with the digits a numeral prefix would make it an invalid
/// longer number). Linear in the text.
fn cjk_numeral_runs(chars: &[(usize, char)]) -> Vec<bool> {
    if !chars.iter().any(|&(_, c)| cjk_digit(c).is_some()) {
        return Vec::new();
    }
    let mut out = vec![false; chars.len()];
    let visible: Vec<usize> = (0..chars.len()).filter(|&i| !is_invisible(chars[i].1)).collect();
    let blocks = |i: Option<&usize>| {
        i.is_some_and(|&i| {
            let c = chars[i].1;
            digit_value(c).is_some() || c.is_ascii_alphanumeric() || norm_punct(c) == Some(b'+')
        })
    };
    let separator = |p: usize| matches!(norm_punct(chars[visible[p]].1), Some(b' ' | b'-' | b'.' | b'(' | b')'));
    // The first visible character from `p` on (going back when `back`)
    // that is not a separator; `p` itself when it is none.
    let past_separators = |mut p: usize, back: bool| -> Option<usize> {
        while p < visible.len() && separator(p) {
            p = if back { p.checked_sub(1)? } else { p + 1 };
        }
        (p < visible.len()).then_some(p)
    };
    let digit = |p: Option<usize>| p.is_some_and(|p| digit_value(chars[visible[p]].1).is_some());
    let mut v = 0;
    while v < visible.len() {
        if cjk_digit(chars[visible[v]].1).is_none() {
            v += 1;
            continue;
        }
        let start = v;
        while v < visible.len() && cjk_digit(chars[visible[v]].1).is_some() {
            v += 1;
        }
        let before = start.checked_sub(1).and_then(|p| visible.get(p));
        let digit_before = digit(start.checked_sub(1).and_then(|p| past_separators(p, true)));
        let digit_after = digit(past_separators(v, false));
        if v - start >= 2 && !blocks(before) && !blocks(visible.get(v)) && !digit_before && !digit_after {
            for &i in &visible[start..v] {
                out[i] = true;
            }
        }
    }
    out
}

/// The value of a Chinese or Japanese numeral read digit by digit, as
/// phone numbers are spoken and written (`一三九…`, `〇九〇-一二三四-…`):
/// `〇`/`零` 0, `一`/`幺` 1 (幺 is how 1 is read out in numbers), `二` 2 …
/// `九` 9, and the financial forms `壹 贰/貳 … 玖`. The view reads one as a
/// digit only next to another, so a lone
/// `一` (one, a) stays a word.
fn cjk_digit(c: char) -> Option<u8> {
    Some(match c {
        '\u{3007}' | '零' => 0,
        '一' | '幺' | '壹' => 1,
        '二' | '贰' | '貳' => 2,
        '三' | '叁' | '參' => 3,
        '四' | '肆' => 4,
        '五' | '伍' => 5,
        '六' | '陆' | '陸' => 6,
        '七' | '柒' => 7,
        '八' | '捌' => 8,
        '九' | '玖' => 9,
        _ => return None,
    })
}

/// The value of a decimal digit of another script: Arabic-Indic,
/// Persian, N'Ko, the Indic scripts, Sinhala, Thai, Lao, Tibetan, Myanmar,
/// Khmer, Mongolian, Limbu, New Tai Lue, Tai Tham, Balinese, Sundanese,
/// Lepcha, Ol Chiki, Vai, Saurashtra, Kayah Li, Javanese, Cham, Meetei
/// Mayek, Osmanya, Brahmi (the zero of each run of ten, Unicode category Nd).
fn script_digit(c: char) -> Option<u8> {
    const ZEROS: [u32; 37] = [
        0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66, 0x0DE6, 0x0E50,
        0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50,
        0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0x104A0, 0x11066,
    ];
    let u = u32::from(c);
    let i = ZEROS.partition_point(|&z| z <= u).checked_sub(1)?;
    let d = u - ZEROS[i];
    (d < 10).then_some(d as u8)
}

/// The value of a superscript, subscript or circled digit (`¹`, `₃`, `①`,
/// `⓪`, `❶`, `➀`, `➊`). The detectors read one as a digit only next to
/// another such digit (`①③⑧…` is a number written in circles); alone it is
/// a list marker or an exponent (`①13812345678`, `10²`).
fn styled_digit(c: char) -> Option<u8> {
    let u = u32::from(c);
    let d = match u {
        0xB9 => 1,
        0xB2 | 0xB3 => u - 0xB0,
        0x2070 => 0,
        0x2074..=0x2079 => u - 0x2070,
        0x2080..=0x2089 => u - 0x2080,
        0x2460..=0x2468 => u - 0x245F,
        0x24EA => 0,
        0x2776..=0x277E => u - 0x2775,
        0x2780..=0x2788 => u - 0x277F,
        0x278A..=0x2792 => u - 0x2789,
        _ => return None,
    };
    Some(d as u8)
}

/// Whether the detectors read `c` as its NFKC form: full-width and
/// half-width forms (U+FF00–U+FFEF), small form variants (U+FE50–U+FE6F,
/// `﹫`) and mathematical alphanumerics (U+1D400–U+1D7FF, `𝟏`, `𝐣`): letters,
/// digits and signs written in another width or style. Enclosed and
/// superscript digits (`①`, `²`) stay what they are: list markers and
/// exponents, not digits of a number.
fn reads_as_nfkc(c: char) -> bool {
    matches!(c, '\u{FF00}'..='\u{FFEF}' | '\u{FE50}'..='\u{FE6F}' | '\u{1D400}'..='\u{1D7FF}')
}

/// Where a placeholder landed in rendered text, and where its span ended in
/// the original.
struct Placed {
    t_start: usize,
    t_end: usize,
    o_end: usize,
}

/// Whether `start..end` intersects any of the sorted, disjoint `ranges`.
fn overlaps(ranges: &[(usize, usize)], start: usize, end: usize) -> bool {
    let i = ranges.partition_point(|r| r.1 <= start);
    ranges.get(i).is_some_and(|r| r.0 < end)
}

/// Greedy overlap resolution by precedence, then length, then position.
fn resolve(mut cands: Vec<PiiSpan>) -> Vec<PiiSpan> {
    cands.sort_by_key(|c| (c.kind.rank().0, Reverse(c.end - c.start), c.kind.rank().1, c.start, c.kind));
    cands.dedup();
    let mut taken: BTreeMap<usize, PiiSpan> = BTreeMap::new();
    for c in cands {
        let clash = taken.range(..c.end).next_back().is_some_and(|(_, t)| t.end > c.start);
        if !clash {
            taken.insert(c.start, c);
        }
    }
    taken.into_values().collect()
}

// ---------------------------------------------------------------------------
// Characters

/// Value of an ASCII or full-width decimal digit.
fn digit_value(c: char) -> Option<u8> {
    match c {
        '0'..='9' => Some(c as u8 - b'0'),
        '\u{FF10}'..='\u{FF19}' => Some((u32::from(c) - 0xFF10) as u8),
        _ => None,
    }
}

/// The ID check character `X` in ASCII or full width, either case.
fn is_x(c: char) -> bool {
    matches!(c, 'X' | 'x' | '\u{FF38}' | '\u{FF58}')
}

/// ASCII or full-width letter, digit or underscore.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || c == '_'
        || matches!(c, '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' | '\u{FF3F}')
}

/// Punctuation that may appear inside a number, normalised to ASCII.
fn norm_punct(c: char) -> Option<u8> {
    match c {
        ' ' | '\u{A0}' | '\u{3000}' | '\u{2009}' | '\u{202F}' => Some(b' '),
        // Hyphens, dashes and minus signs, the katakana long-vowel mark an
        // input method types for a dash (`090ー1234ー5678`), and the slash
        // of German writing (`030/12345678`).
        '-'
        | '/'
        | '\u{FF0D}'
        | '\u{2010}'..='\u{2015}'
        | '\u{2212}'
        | '\u{2043}'
        | '\u{FE58}'
        | '\u{FE63}'
        | '\u{30FC}'
        | '\u{FF70}' => Some(b'-'),
        '.' | '\u{FF0E}' => Some(b'.'),
        '(' | '\u{FF08}' => Some(b'('),
        ')' | '\u{FF09}' => Some(b')'),
        '+' | '\u{FF0B}' => Some(b'+'),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Digit runs, chains and the digit-based detectors

/// What joins two digit runs into one number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Joiner {
    Space,
    Dash,
    SpacedDash,
    Dot,
    Close,
    CloseSpace,
    CloseDash,
    SpaceOpen,
    /// `(` right after a run: the area code's parentheses of a Japanese
    /// writing (`03(1234)5678`), the `(0)` of `0044(0)20…`.
    Open,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JoinClass {
    Space,
    Dash,
    Dot,
    Paren,
}

impl Joiner {
    fn classify(gap: &str) -> Option<Joiner> {
        let mut buf = [0u8; 3];
        let mut n = 0;
        for c in gap.chars() {
            let b = norm_punct(c)?;
            *buf.get_mut(n)? = b;
            n += 1;
        }
        Some(match &buf[..n] {
            b" " => Joiner::Space,
            b"-" => Joiner::Dash,
            b" - " => Joiner::SpacedDash,
            b"." => Joiner::Dot,
            b")" => Joiner::Close,
            b") " => Joiner::CloseSpace,
            b")-" => Joiner::CloseDash,
            b" (" => Joiner::SpaceOpen,
            b"(" => Joiner::Open,
            _ => return None,
        })
    }

    fn class(self) -> JoinClass {
        match self {
            Joiner::Space => JoinClass::Space,
            Joiner::Dash | Joiner::SpacedDash => JoinClass::Dash,
            Joiner::Dot => JoinClass::Dot,
            Joiner::Close | Joiner::CloseSpace | Joiner::CloseDash | Joiner::SpaceOpen | Joiner::Open => {
                JoinClass::Paren
            }
        }
    }

    fn closes(self) -> bool {
        matches!(self, Joiner::Close | Joiner::CloseSpace | Joiner::CloseDash)
    }
}

/// A maximal run of digits (plus a trailing `X` when one follows directly).
#[derive(Clone, Debug)]
struct Group {
    /// Byte range in the text.
    start: usize,
    end: usize,
    /// Char-index range in the text.
    ci_start: usize,
    ci_end: usize,
    /// Digit values; 10 stands for a trailing `X`.
    digits: Vec<u8>,
    /// Byte offset of a `+` directly before the run.
    plus: Option<usize>,
    /// Byte offset of a `(` directly before the run.
    paren: Option<usize>,
}

impl Group {
    fn has_x(&self) -> bool {
        self.digits.last() == Some(&10)
    }
    fn len(&self) -> usize {
        self.digits.len()
    }
}

/// Scanning context shared by the digit detectors.
struct Scan<'a> {
    text: &'a str,
    chars: &'a [(usize, char)],
}

impl Scan<'_> {
    /// Whether the character before char index `ci` allows a span to start
    /// there. `uses_plus`: the span starts with its own `+`, so a `+` before
    /// `ci` is part of it.
    ///
    /// A word glued to the number blocks it (`A1 234 567`, `DE89 3704 …`:
    /// codes), except a word that says a telephone number follows, directly
    /// or through one `_` ([`phone::is_phone_word`]: `tel13812345678`,
    /// `Mobile07700900456`, `mobile_13812345678`).
    fn left_ok(&self, ci: usize, uses_plus: bool) -> bool {
        let Some(&(_, c)) = ci.checked_sub(1).and_then(|i| self.chars.get(i)) else {
            return true;
        };
        let phone_word = || self.glued_phone_word(if c == '_' { ci - 1 } else { ci });
        (!is_word(c) || phone_word()) && (uses_plus || norm_punct(c) != Some(b'+'))
    }

    /// Whether the ASCII letters right before char index `ci` are a
    /// telephone word, or end with one of five letters or more
    /// (`cellphone`, `myphone`); the run may follow `_` or `-`
    /// (`my_phone_13912345678`) but no digit.
    fn glued_phone_word(&self, ci: usize) -> bool {
        // Telephone words have at most 9 letters; a glued prefix at most 7 more.
        const MAX: usize = 16;
        let letters =
            self.chars[..ci].iter().rev().take(MAX + 1).take_while(|&&(_, c)| c.is_ascii_alphabetic()).count();
        let from = ci - letters;
        if letters == 0 || letters > MAX || from.checked_sub(1).is_some_and(|i| self.chars[i].1.is_ascii_digit()) {
            return false;
        }
        let word: String = self.chars[from..ci].iter().map(|&(_, c)| c.to_ascii_lowercase()).collect();
        (0..word.len()).any(|k| {
            let tail = &word[k..];
            (k == 0 || tail.len() >= 5) && phone::is_phone_word(tail)
        })
    }

    /// Whether the digits from char index `start` to `end` are tied to a
    /// word by punctuation, as in paths, addresses and identifiers:
    /// `…/bjo-2022…`, `…/2365515882`, `…530.html`, `…0958-A`. A `-` before
    /// the digits ties them only inside such a token (one holding one of
    /// `/\:=?&_.#%` among the 64 characters before the `-`); a plain word before a dash does not
    /// (`call-13812345678`, `Tel-07700 900456`).
    fn glued_by_punct(&self, start: usize, end: usize) -> bool {
        let at = |ci: Option<usize>| ci.and_then(|i| self.chars.get(i)).map(|&(_, c)| c);
        let before = match at(start.checked_sub(1)) {
            Some('/') => at(start.checked_sub(2)).is_some_and(|c| c.is_ascii_alphanumeric()),
            Some('-') => {
                at(start.checked_sub(2)).is_some_and(|c| c.is_ascii_alphanumeric())
                    && self.chars[..start - 1]
                        .iter()
                        .rev()
                        .take_while(|&&(_, c)| !c.is_whitespace())
                        .take(64)
                        .any(|&(_, c)| "/\\:=?&_.#%".contains(c))
            }
            _ => false,
        };
        let after = matches!(at(Some(end)), Some('-' | '/' | '.'))
            && at(end.checked_add(1)).is_some_and(|c| c.is_ascii_alphabetic());
        before || after
    }

    /// Whether the character at char index `ci` allows a span to end there.
    fn right_ok(&self, ci: usize) -> bool {
        match self.chars.get(ci) {
            None => true,
            // A number followed by `@` and a domain is the local part of an
            // e-mail address, which the e-mail detector replaces whole.
            Some(&(at, '@')) => domain_len(&self.text[at + 1..]).is_none(),
            Some(&(_, c)) => !is_word(c) || self.extension_at(ci),
        }
    }

    /// Whether an extension glued to a number starts at char index `ci`:
    /// `x`, `ext` or `ext.` (any case), then 1–6 digits and no further
    /// letter or digit (`415-555-0100x12`, `0100ext.3`). The number before
    /// it may end there; the extension itself is kept.
    fn extension_at(&self, ci: usize) -> bool {
        let at = |i: usize| self.chars.get(i).map(|&(_, c)| c);
        let mut i = ci;
        if at(i).is_some_and(is_x) {
            i += 1;
        } else if ['e', 'x', 't']
            .iter()
            .enumerate()
            .all(|(k, &e)| at(ci + k).is_some_and(|c| c.to_ascii_lowercase() == e))
        {
            i += 3;
            if at(i) == Some('.') {
                i += 1;
            }
        } else {
            return false;
        }
        let digits = (i..).take_while(|&k| at(k).and_then(digit_value).is_some()).count();
        (1..=6).contains(&digits) && !at(i + digits).is_some_and(is_word)
    }
}

/// A candidate number: consecutive runs `groups` joined by `inner`, with the
/// joiners that continue the chain on either side.
struct Cand<'a> {
    groups: &'a [Group],
    inner: &'a [Joiner],
    left: Option<Joiner>,
    right: Option<Joiner>,
}

impl Cand<'_> {
    fn total(&self) -> usize {
        self.groups.iter().map(Group::len).sum()
    }
    fn digits(&self) -> Vec<u8> {
        self.groups.iter().flat_map(|g| g.digits.iter().copied()).collect()
    }
    fn lens(&self) -> Vec<usize> {
        self.groups.iter().map(Group::len).collect()
    }
    fn any_x(&self) -> bool {
        self.groups.iter().any(Group::has_x)
    }
    fn first(&self) -> &Group {
        &self.groups[0]
    }
    fn last(&self) -> &Group {
        &self.groups[self.groups.len() - 1]
    }
    /// All inner joiners identical and a space or dash; true when there are none.
    fn uniform_space_or_dash(&self) -> bool {
        uniform_space_or_dash(self.inner)
    }
    /// A grouped number continuing with another group joined the same way.
    fn continues_same_way(&self) -> bool {
        let Some(inner) = self.inner.first().map(|j| j.class()) else {
            return false;
        };
        [self.left, self.right].iter().flatten().any(|j| j.class() == inner)
    }
}

fn uniform_space_or_dash(js: &[Joiner]) -> bool {
    match js.first() {
        None => true,
        Some(&j) => matches!(j.class(), JoinClass::Space | JoinClass::Dash) && js.iter().all(|&k| k == j),
    }
}

fn ascii(digits: &[u8]) -> String {
    digits.iter().map(|&d| if d == 10 { 'X' } else { char::from(b'0' + d) }).collect()
}

/// Finds digit runs, links them into chains, and tries every short sub-chain
/// against every digit-based detector.
fn digit_candidates(text: &str, phones: &mut Phones<'_>, out: &mut Vec<PiiSpan>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_at = |ci: usize| chars.get(ci).map_or(text.len(), |&(b, _)| b);
    let mut groups: Vec<Group> = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        if digit_value(chars[k].1).is_none() {
            k += 1;
            continue;
        }
        let ci_start = k;
        let mut digits = Vec::new();
        while let Some(d) = chars.get(k).and_then(|&(_, c)| digit_value(c)) {
            digits.push(d);
            k += 1;
        }
        if chars.get(k).is_some_and(|&(_, c)| is_x(c)) && !chars.get(k + 1).is_some_and(|&(_, c)| is_word(c)) {
            digits.push(10);
            k += 1;
        }
        let prev = ci_start.checked_sub(1).and_then(|i| chars.get(i)).copied();
        let (plus, paren) = match prev.map(|(b, c)| (b, norm_punct(c))) {
            Some((b, Some(b'+'))) => (Some(b), None),
            Some((b, Some(b'('))) => (None, Some(b)),
            _ => (None, None),
        };
        groups.push(Group { start: chars[ci_start].0, end: byte_at(k), ci_start, ci_end: k, digits, plus, paren });
    }
    let scan = Scan { text, chars: &chars };
    // Split into chains of runs joined by a recognised joiner.
    let mut i = 0;
    while i < groups.len() {
        let mut joiners = Vec::new();
        let mut j = i + 1;
        while j < groups.len() {
            match Joiner::classify(&text[groups[j - 1].end..groups[j].start]) {
                Some(jn) if !groups[j - 1].has_x() => joiners.push(jn),
                _ => break,
            }
            j += 1;
        }
        chain_candidates(&scan, &groups[i..j], &joiners, phones, out);
        i = j;
    }
}

/// Longest sub-chain considered, in runs (`00 33 (0)1 23 45 67 89`).
const MAX_RUNS: usize = 8;
/// Longest sub-chain considered, in digits (19-digit cards).
const MAX_DIGITS: usize = 19;
/// Shortest sub-chain any detector accepts, in digits (`+` and 8 digits).
const MIN_DIGITS: usize = 8;

/// The redactor's phone regions and the verdicts of the current scan.
struct Phones<'a> {
    regions: &'a PhoneRegions,
    cache: &'a mut PhoneCache,
}

fn chain_candidates(
    scan: &Scan<'_>,
    groups: &[Group],
    joiners: &[Joiner],
    phones: &mut Phones<'_>,
    out: &mut Vec<PiiSpan>,
) {
    let n = groups.len();
    if groups.iter().map(Group::len).sum::<usize>() < MIN_DIGITS {
        return;
    }
    // No phone in a chain glued to a letter (`DE89 3704 0044 …`, `A1 234
    // 567`: a code) or that is, as a whole, a date, an ISBN, a number in
    // thousands grouping or an IPv4 address.
    let phones_here = match (groups.first(), groups.last()) {
        (Some(f), Some(l)) => {
            let glued = !scan.left_ok(f.ci_start, true)
                || (scan.chars.get(l.ci_end).is_some_and(|&(_, c)| is_word(c)) && !scan.extension_at(l.ci_end))
                || scan.glued_by_punct(f.ci_start, l.ci_end);
            let all: Vec<u8> = groups.iter().flat_map(|g| g.digits.iter().copied()).collect();
            let lens: Vec<usize> = groups.iter().map(Group::len).collect();
            let digits = ascii(&all);
            let dotted = !joiners.is_empty() && joiners.iter().all(|&j| j == Joiner::Dot);
            let other = glued
                || phone::looks_like_date(&digits, &lens)
                || phone::looks_like_isbn(&digits, &lens)
                || (dotted && phone::looks_like_ipv4(&digits, &lens))
                || (f.plus.is_none() && phone::looks_like_thousands(&digits, &lens));
            !other
        }
        _ => false,
    };
    let in_date = date_runs(scan.text, groups, joiners);
    // The chain starts with an international prefix (`+44 …`, `0044 …`).
    let intl_head = groups.first().is_some_and(|g| g.plus.is_some() || g.digits.starts_with(&[0, 0]));
    for i in 0..n {
        let mut total = 0;
        let mut phone_cands = Vec::new();
        for j in i + 1..=n.min(i + MAX_RUNS) {
            total += groups[j - 1].len();
            if total > MAX_DIGITS {
                break;
            }
            if total < MIN_DIGITS {
                continue;
            }
            let cand = Cand {
                groups: &groups[i..j],
                inner: &joiners[i..j - 1],
                left: i.checked_sub(1).map(|p| joiners[p]),
                right: joiners.get(j - 1).copied(),
            };
            // Decimals, versions, IP addresses: never part of anything.
            if cand.left == Some(Joiner::Dot) || cand.right == Some(Joiner::Dot) {
                continue;
            }
            if !scan.right_ok(cand.last().ci_end) {
                continue;
            }
            let end = cand.last().end;
            if let Some(s) = cn_id(scan, &cand) {
                out.push(PiiSpan { start: s, end, kind: PiiKind::CnId });
            }
            if cand.any_x() {
                continue;
            }
            if let Some(s) = card(scan, &cand) {
                out.push(PiiSpan { start: s, end, kind: PiiKind::BankCard });
            }
            if let Some(s) = us_ssn(scan, &cand) {
                out.push(PiiSpan { start: s, end, kind: PiiKind::UsSsn });
            }
            if phones_here && !in_date[i..j].contains(&true) {
                phone_cands.push(cand);
            }
        }
        // Longest first: a shorter phone at the same start would lose the
        // overlap anyway, so it is not looked up.
        for cand in phone_cands.iter().rev() {
            if let Some((start, kind)) = phone(scan, cand, intl_head, phones) {
                out.push(PiiSpan { start, end: cand.last().end, kind });
                break;
            }
        }
    }
    if phones_here {
        spelled_out(scan, groups, joiners, phones, out);
    }
}

/// Longest number read out digit by digit, in digits: E.164's 15.
const MAX_SPELLED_DIGITS: usize = 15;

/// Numbers read out digit by digit, one digit per run joined by spaces (`1
/// 3 8 1 2 3 4 5 6 7 8`, as dictation and transcribed speech write them) or
/// all by dashes (`1-3-8-1-…`).
/// Such spacing says nothing of the number's grouping, so a stretch of 8 to
/// 15 such digits is confirmed as one bare run, and one of 10 digits or
/// fewer written nationally needs a phone word before it even when it
/// starts with a trunk prefix.
/// The sub-chain search above cannot see them: it stops at 8 runs, and a
/// run of single digits is never the library's grouping.
fn spelled_out(scan: &Scan<'_>, groups: &[Group], joiners: &[Joiner], phones: &mut Phones<'_>, out: &mut Vec<PiiSpan>) {
    let single = |g: &Group| g.digits.len() == 1 && !g.has_x();
    let mut i = 0;
    while i < groups.len() {
        if !single(&groups[i]) {
            i += 1;
            continue;
        }
        // One digit per run, every run joined the same way: a space, a
        // dash or a spaced dash (`1-3-8-…`, as a number is spelled for
        // clarity).
        let joiner = joiners.get(i).copied().filter(|j| matches!(j, Joiner::Space | Joiner::Dash | Joiner::SpacedDash));
        let mut j = i + 1;
        while j < groups.len() && single(&groups[j]) && Some(joiners[j - 1]) == joiner {
            j += 1;
        }
        let cand = Cand {
            groups: &groups[i..j],
            inner: &joiners[i..j - 1],
            left: i.checked_sub(1).map(|p| joiners[p]),
            right: joiners.get(j - 1).copied(),
        };
        let n = j - i;
        i = j;
        // A longer run joined to either end makes it something else (`138 1
        // 2 3 …` is not read out digit by digit).
        let joined_long = |k: Option<usize>| k.and_then(|k| groups.get(k)).is_some_and(|g| g.digits.len() > 1);
        if !(MIN_DIGITS..=MAX_SPELLED_DIGITS).contains(&n)
            || (cand.left.is_some() && joined_long((j - n).checked_sub(1)))
            || (cand.right.is_some() && joined_long(Some(j)))
            || cand.left == Some(Joiner::Dot)
            || cand.right == Some(Joiner::Dot)
            || !scan.right_ok(cand.last().ci_end)
        {
            continue;
        }
        let digits = ascii(&cand.digits());
        let (written, start) = match cand.first().plus {
            Some(_) => (Written::Plus, plus_start(scan, &cand)),
            None if digits.starts_with("00") => (Written::Idd00, plain_start(scan, &cand)),
            None => (Written::National, plain_start(scan, &cand)),
        };
        let Some(start) = start else {
            continue;
        };
        let end = cand.last().end;
        if phone::amount_or_id_context(scan.text, start, end) {
            continue;
        }
        // A trunk prefix does not make a spoken list of digits a number
        // (`0 1 2 3 4 5 6 7 8 9` reads as a French one): under 11 digits, a
        // phone word before it must vouch for it whatever its prefix.
        let vouched = n <= 10 && phone::phone_word_before(scan.text, start);
        if n <= 10 && written == Written::National && !vouched {
            continue;
        }
        let c = Candidate { digits: &digits, runs: &[n], written, strict: false, vouched };
        if let Some(kind) = phones.regions.confirm(c, phones.cache) {
            out.push(PiiSpan { start, end, kind });
        }
    }
}

/// Which runs of a chain belong to a date written with `/`, `-` or `.`:
/// a year (19xx, 20xx) then a month and a day (`2023/04/05`), or a day and
/// a month then the year (`05-04-2023`, `4.5.2023`), months and days of 1–2
/// digits; or a month, a slash and a year (`02/2015`, where a German
/// writing has an area code: `030/12345678`). No telephone number overlaps
/// them, so a range of dates (`2023/04/05-2023/05/06`, `02/2015 - 11/2018`)
/// is not read as one.
fn date_runs(text: &str, groups: &[Group], joiners: &[Joiner]) -> Vec<bool> {
    let mut out = vec![false; groups.len()];
    let year = |g: &Group| g.len() == 4 && matches!(g.digits[..2], [1, 9] | [2, 0]);
    let small = |g: &Group, max: u8| {
        (1..=2).contains(&g.len()) && !g.has_x() && (1..=max).contains(&g.digits.iter().fold(0u8, |a, &d| a * 10 + d))
    };
    let tight = |j: Joiner| matches!(j, Joiner::Dash | Joiner::Dot);
    for k in 0..groups.len().saturating_sub(2) {
        if !tight(joiners[k]) || !tight(joiners[k + 1]) {
            continue;
        }
        let (a, b, c) = (&groups[k], &groups[k + 1], &groups[k + 2]);
        let ymd = year(a) && small(b, 12) && small(c, 31);
        let dmy = year(c) && small(a, 31) && small(b, 31) && (small(a, 12) || small(b, 12));
        if ymd || dmy {
            out[k..k + 3].fill(true);
        }
    }
    for k in 0..groups.len().saturating_sub(1) {
        let (a, b) = (&groups[k], &groups[k + 1]);
        if year(b) && small(a, 12) && text[a.end..b.start].contains('/') {
            out[k..k + 2].fill(true);
        }
    }
    out
}

/// A telephone number: a loose shape check here, then confirmation with
/// libphonenumber metadata in [`super::phone`]. Returns the span start and
/// kind.
fn phone(scan: &Scan<'_>, c: &Cand<'_>, intl_head: bool, phones: &mut Phones<'_>) -> Option<(usize, PiiKind)> {
    let first = c.first();
    let digits = ascii(&c.digits());
    let lens = c.lens();
    // Whether the span starts with a `(` that the candidate closes.
    let (written, start, mut open) = if let Some(plus) = first.plus {
        let start = plus_start(scan, c)?;
        (Written::Plus, start, start < plus)
    } else {
        let first_paren = c.inner.iter().find(|j| j.class() == JoinClass::Paren);
        let (start, open) = match first.paren {
            Some(p) if first_paren.is_some_and(|j| j.closes()) => {
                (scan.left_ok(first.ci_start.checked_sub(1)?, false).then_some(p)?, true)
            }
            _ => (plain_start(scan, c)?, false),
        };
        let idd = first.len() >= 2 && digits.starts_with("00") && !digits[2..].starts_with('0');
        (if idd { Written::Idd00 } else { Written::National }, start, open)
    };
    // Parentheses: at most one pair, opened before it is closed, all inside.
    let mut pairs = usize::from(open);
    for j in c.inner {
        match j {
            Joiner::SpaceOpen | Joiner::Open if !open => {
                open = true;
                pairs += 1;
            }
            Joiner::Close | Joiner::CloseSpace | Joiner::CloseDash if open => open = false,
            Joiner::SpaceOpen | Joiner::Open | Joiner::Close | Joiner::CloseSpace | Joiner::CloseDash => return None,
            _ => {}
        }
    }
    if open || pairs > 1 {
        return None;
    }
    // The tail of an international number is not a national one
    // (`+44 901 234 5678` holds no `901 234 5678`).
    if c.left.is_some() && intl_head {
        return None;
    }
    // Dots join phone groups only as the one separator (`415.555.0100`), and
    // a single dot only after a trunk-prefixed area code (`030.123456`) or
    // an international prefix (`+44.7911123456`); otherwise it is a decimal
    // (`0.401425728`, `12.3456789`).
    let dots = c.inner.iter().filter(|&&j| j == Joiner::Dot).count();
    let trunk_area = first.len() >= 2 && first.digits.first() == Some(&0);
    let intl = matches!(written, Written::Plus | Written::Idd00);
    if dots > 0
        && ((dots == 1 && !trunk_area && !intl)
            || c.inner.iter().any(|&j| j != Joiner::Dot && j.class() != JoinClass::Paren))
    {
        return None;
    }
    // A lone 0 before a dash opens a range (`0–4294967295`).
    if first.digits == [0] && matches!(c.inner.first(), Some(Joiner::Dash | Joiner::SpacedDash)) {
        return None;
    }
    // Separators after the first run and outside parentheses: one kind, or
    // spaces then dashes (`+86 138-1234-5678`, `(0755) 1234 5678`,
    // `+7 912 345-67-89`), never dashes then spaces (`2023-11-05 12`).
    let seps: Vec<Joiner> = c.inner.iter().skip(1).filter(|j| j.class() != JoinClass::Paren).copied().collect();
    let switch = seps.windows(2).position(|w| w[0] != w[1]);
    if let Some(at) = switch {
        let (before, after) = seps.split_at(at + 1);
        let spaces_then_dashes = before.iter().all(|&j| j == Joiner::Space) && after.iter().all(|&j| j == Joiner::Dash);
        if !spaces_then_dashes {
            return None;
        }
    }
    if phone::looks_like_date(&digits, &lens)
        || phone::looks_like_isbn(&digits, &lens)
        || (written == Written::National && phone::looks_like_thousands(&digits, &lens))
        || phone::amount_or_id_context(scan.text, start, c.last().end)
    {
        return None;
    }
    // Dots also join versions and addresses, and lists of small numbers
    // (`20 25 30 40 50`) have many short runs: such numbers must be grouped
    // as the library groups them (`415.555.0100`, `01 23 45 67 89`).
    // With an international prefix the writer's grouping is free
    // (`+44.7911.123.456`): the prefix already says it is a number to dial,
    // so only a signed number in thousands grouping (`+12.345.678.901`) is
    // kept.
    let short_runs = lens.len() >= 4 && lens.iter().all(|&l| l <= 3);
    if intl && dots > 0 && phone::looks_like_thousands(&digits, &lens) {
        return None;
    }
    let strict = (c.inner.contains(&Joiner::Dot) && !intl) || (written == Written::National && short_runs);
    // A bare run of 10 digits or fewer is as often a code as a number; a
    // word such as "phone" or "电话" just before vouches for it.
    let vouched = lens.len() == 1 && digits.len() <= 10 && phone::phone_word_before(scan.text, start);
    let cand = Candidate { digits: &digits, runs: &lens, written, strict, vouched };
    let kind = phones.regions.confirm(cand, phones.cache)?;
    Some((start, kind))
}

/// Span start of an unprefixed candidate, if its left side allows one.
fn plain_start(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    scan.left_ok(c.first().ci_start, false).then_some(c.first().start)
}

/// Span start of a checksum-verified candidate (ID, card): as
/// [`plain_start`], and also right after a letter or `_` (`card_4111…`,
/// `visa4111…`, `id_1101…`): a check digit, a birth date or an issuer
/// prefix with Luhn vouch for the value where a glued word would make a
/// phone-shaped run a code.
fn verified_start(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let ci = c.first().ci_start;
    let glued_word = ci
        .checked_sub(1)
        .and_then(|i| scan.chars.get(i))
        .is_some_and(|&(_, ch)| is_word(ch) && digit_value(ch).is_none());
    (glued_word && !digits_earlier_in_token(scan, ci) || scan.left_ok(ci, false)).then_some(c.first().start)
}

/// Whether the word characters glued before char index `ci` hold a digit:
/// the run is then the tail of an alphanumeric identifier (`2954ef3a1a…`
/// of a hexadecimal id), not a word labelling a number (`card`, `visa_`).
fn digits_earlier_in_token(scan: &Scan<'_>, ci: usize) -> bool {
    scan.chars[..ci].iter().rev().take_while(|&&(_, ch)| is_word(ch)).any(|&(_, ch)| digit_value(ch).is_some())
}

/// United States Social Security number: `3-2-4` joined by dashes, or, after
/// a word naming it (which may be glued to it), nine digits plain or
/// grouped 3-2-4, 3-6 or 3-3-3 by spaces, dots or dashes; never-issued
/// areas, groups and serials refused.
fn us_ssn(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let lens = c.lens();
    // Dashes written as dashes (not `/`, which the joiners fold in).
    let dashes = c.groups.windows(2).all(|w| {
        matches!(&scan.text[w[0].end..w[1].start], "-" | "\u{2010}" | "\u{2011}" | "\u{2012}" | "\u{2013}" | "\u{2212}")
    });
    let dashed = lens == [3, 2, 4] && dashes;
    // A word naming a Social Security number before it (`SSN# …`,
    // `SSN-123-45-6789`) vouches for it whatever the punctuation around.
    let vouched = ssn_word_before(scan.text, c.first().start);
    // After such a word, the nine digits plain or grouped 3-2-4, 3-6 or
    // 3-3-3, joined by spaces, dots or dashes (`123 45 6789`,
    // `212.09.7694`, `212-097694`, `123 - 45 - 6789`, `212097694`); not a
    // ZIP+4 (5-4) or an employer number (2-7), not joined by `/`.
    let seps_ok = c.groups.windows(2).all(|w| {
        let sep = scan.text[w[0].end..w[1].start].trim_matches(' ');
        matches!(sep, "" | "." | "-" | "\u{2010}" | "\u{2011}" | "\u{2012}" | "\u{2013}" | "\u{2212}")
    });
    let named = vouched && seps_ok && matches!(lens.as_slice(), [9] | [3, 2, 4] | [3, 6] | [3, 3, 3]);
    // Part of a path, URL or identifier (`/orders/123-45-6789`,
    // `case-123-45-6789`, `123-45-6789-x`): not a number of its own.
    let at = |ci: Option<usize>| ci.and_then(|i| scan.chars.get(i)).map(|&(_, ch)| ch);
    let tied_before = matches!(at(c.first().ci_start.checked_sub(1)), Some('-' | '/' | '_' | '\\'))
        && at(c.first().ci_start.checked_sub(2)).is_some_and(|ch| ch.is_alphanumeric());
    let tied_after = matches!(at(Some(c.last().ci_end)), Some('-' | '/' | '_' | '\\'))
        && at(Some(c.last().ci_end + 1)).is_some_and(|ch| ch.is_alphanumeric());
    // An identifier after `#` or a label (`order #212-09-7694`).
    let labelled_id = || phone::amount_or_id_context(scan.text, c.first().start, c.last().end);
    if !(dashed || named)
        || (!vouched && labelled_id())
        || (!vouched && tied_before)
        || tied_after
        || c.continues_same_way()
        || c.left == Some(Joiner::Dash)
        || c.right == Some(Joiner::Dash)
        || scan.glued_by_punct(c.first().ci_start, c.last().ci_end)
    {
        return None;
    }
    let d = c.digits();
    let num = |r: std::ops::Range<usize>| d[r].iter().fold(0u32, |n, &x| n * 10 + u32::from(x));
    let (area, group, serial) = (num(0..3), num(3..5), num(5..9));
    if area == 0 || area == 666 || area >= 900 || group == 0 || serial == 0 {
        return None;
    }
    // The word may be glued to the number (`ssn212097694`).
    if ssn_word_glued(scan.text, c.first().start) {
        verified_start(scan, c)
    } else {
        plain_start(scan, c)
    }
}

/// Whether `text` right before byte `start` ends with `SSN` or `SSNs` (any
/// case) glued to the number (`ssn212097694`).
fn ssn_word_glued(text: &str, start: usize) -> bool {
    let before = text.get(..start).unwrap_or("").to_ascii_lowercase();
    let word = before.trim_end_matches(['#', ':', '=', '-', '_']);
    ["ssns", "ssn"]
        .iter()
        .any(|w| word.strip_suffix(w).is_some_and(|rest| !rest.ends_with(|c: char| c.is_ascii_alphanumeric())))
}

/// Whether a word naming a Social Security number (`SSN`, `SSNs`, `social
/// security`, `social-security`, `社会安全号`, any case) ends within the 32
/// characters before byte `start`.
fn ssn_word_before(text: &str, start: usize) -> bool {
    phone::word_before(
        text,
        start,
        &[
            "ssn",
            "ssns",
            "ss#",
            "social security",
            "social-security",
            "socialsecurity",
            "社会安全号",
            "社會安全號",
            "社安号",
        ],
    )
}

/// Mainland-China resident ID: 18 chars, `[18]` or `[6, 8, 4]`, verified.
fn cn_id(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let lens = c.lens();
    if !matches!(lens.as_slice(), [18] | [6, 8, 4] | [6, 4, 4, 4] | [4, 4, 4, 4, 2])
        || !c.uniform_space_or_dash()
        || c.continues_same_way()
    {
        return None;
    }
    if c.groups[..c.groups.len() - 1].iter().any(Group::has_x) {
        return None;
    }
    if !cn_id_valid(&ascii(&c.digits())) {
        return None;
    }
    verified_start(scan, c)
}

/// Payment card: 13–19 digits, grouping, issuer prefix, Luhn.
fn card(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let total = c.total();
    if !(13..=19).contains(&total) || !c.uniform_space_or_dash() || c.continues_same_way() {
        return None;
    }
    let lens = c.lens();
    let grouping_ok = match lens.as_slice() {
        [_] => true,
        [4, 6, 5] | [4, 6, 4] => true,
        [init @ .., last] => init.len() >= 2 && init.iter().all(|&l| l == 4) && (1..=4).contains(last),
        [] => false,
    };
    if !grouping_ok {
        return None;
    }
    let digits = c.digits();
    if !issuer_plausible(&digits) || !luhn_valid(&ascii(&digits)) {
        return None;
    }
    verified_start(scan, c)
}

/// First digits a card of this length can start with (see module docs).
fn issuer_plausible(d: &[u8]) -> bool {
    let prefix = |n: usize| d.iter().take(n).fold(0u32, |a, &x| a * 10 + u32::from(x));
    let (p1, p2, p4) = (prefix(1), prefix(2), prefix(4));
    match d.len() {
        13 => p1 == 4,
        14 => matches!(p2, 30 | 36 | 38 | 39),
        15 => matches!(p2, 34 | 37),
        16 => (2221..=2720).contains(&p4) || p2 == 35 || matches!(p1, 4 | 5 | 6 | 9),
        17..=19 => p2 == 35 || matches!(p1, 4 | 5 | 6 | 9),
        _ => false,
    }
}

/// Span start of a candidate whose first run follows a `+`: the `+`, or the
/// `(` before it when the country code is parenthesised (`(+86) 138…`).
fn plus_start(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let first = c.first();
    let plus = first.plus?;
    let plus_ci = first.ci_start.checked_sub(1)?;
    if c.inner.first().is_some_and(|j| j.closes()) {
        let open_ci = plus_ci.checked_sub(1)?;
        let &(open, ch) = scan.chars.get(open_ci)?;
        return (norm_punct(ch) == Some(b'(') && scan.left_ok(open_ci, false)).then_some(open);
    }
    scan.left_ok(plus_ci, true).then_some(plus)
}

// ---------------------------------------------------------------------------
// E-mail

fn is_local_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn is_domain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-')
}

/// A letter of an internationalised address (RFC 6531 local parts, IDN
/// labels) in a cased alphabet: a non-ASCII Latin, Greek, Cyrillic,
/// Armenian, … letter (`renée`, `müller`, `bücher`, `иван`, `рф`).
fn is_intl_letter(c: char) -> bool {
    !c.is_ascii() && (c.is_lowercase() || c.is_uppercase())
}

/// A letter of a script without case (Chinese, Japanese, Korean, Arabic,
/// Thai, …): `张三@例子.中国`. Such text runs into an address without a
/// space (`联系jane@example.com`, `发给张三@例子.中国`), so the address's
/// edges are found by the rules in [`email_candidates`].
///
/// Combining marks count as letters here: Thai tone marks, Devanagari
/// viramas and other vowel signs are part of the word they sit in
/// (`ตัวอย่าง`, `उदाहरण`).
fn is_uncased_letter(c: char) -> bool {
    !c.is_ascii()
        && ((c.is_alphabetic() && !c.is_lowercase() && !c.is_uppercase())
            || unicode_normalization::char::is_combining_mark(c))
}

fn is_local_char(c: char) -> bool {
    if c.is_ascii() {
        is_local_byte(c as u8)
    } else {
        is_intl_letter(c)
    }
}

/// A character of a domain: ASCII letters, digits, `-` and `.`, letters of
/// any script, and the ideographic full stop `。` that IDNA (UTS #46) reads
/// as a label separator.
fn is_domain_char(c: char) -> bool {
    if c.is_ascii() {
        is_domain_byte(c as u8)
    } else {
        c.is_alphabetic() || is_uncased_letter(c) || c == '\u{3002}'
    }
}

/// Longest local part of an address in scripts without case, in bytes
/// (RFC 5321 §4.5.3.1.1: 64 octets).
const MAX_LOCAL_BYTES: usize = 64;

/// Byte offset where the local part of an address ending at `at` (the `@`)
/// starts; `at` itself when there is none. The local part is the run of
/// ASCII `letters digits . _ % + -` and cased letters before the `@`, with
/// leading dots dropped. When the character just before the `@` is a letter
/// of a script without case (`张三@`), letters of such scripts belong to the
/// run too, up to [`MAX_LOCAL_BYTES`]: where a name ends and the sentence
/// before it begins cannot be told (`发给张三@…` is replaced from `发`),
/// and replacing a word too many is the side that loses no data. Otherwise
/// such a letter ends the run (`联系jane@…` keeps `联系`).
fn local_start(text: &str, at: usize) -> usize {
    let before = &text[..at];
    let uncased = before.chars().next_back().is_some_and(is_uncased_letter);
    let mut start = at;
    for (i, c) in before.char_indices().rev() {
        let ok = is_local_char(c) || (uncased && is_uncased_letter(c));
        if !ok || (uncased && at - i > MAX_LOCAL_BYTES) {
            break;
        }
        start = i;
    }
    start + text[start..at].bytes().take_while(|&b| b == b'.').count()
}

/// Length in bytes of the address's domain at the start of `rest` (the text
/// after the `@`), if it holds one: see [`valid_domain`].
fn domain_len(rest: &str) -> Option<usize> {
    let end = rest.char_indices().find(|&(_, c)| !is_domain_char(c)).map_or(rest.len(), |(i, _)| i);
    valid_domain(&rest[..end])
}

/// `local@domain.tld` around every `@` (full-width `＠` and `．` are read as
/// these by the detection view): the local part of [`local_start`] and the
/// domain of [`domain_len`]; rejected when a letter of a cased alphabet, a
/// digit or `_` follows the address directly.
fn email_candidates(text: &str, out: &mut Vec<PiiSpan>) {
    for (at, _) in text.match_indices('@') {
        let start = local_start(text, at);
        if start == at {
            continue;
        }
        let Some(domain_end) = domain_len(&text[at + 1..]) else {
            continue;
        };
        let end = at + 1 + domain_end;
        if text[end..].chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || is_intl_letter(c)) {
            continue;
        }
        out.push(PiiSpan { start, end, kind: PiiKind::Email });
    }
}

/// Longest top-level domain considered, in characters.
const MAX_TLD_CHARS: usize = 24;

/// Length in bytes of the top-level domain at the start of `label`, if it
/// starts with one; the rest of the label is text after the address.
///
/// - A label of ASCII or cased letters is a TLD when it has 2–24 letters
///   (`com`, `technology`, `рф`), as at every TLD registry; a word of a
///   script without case right after it is not part of it (`example.com吗`
///   ends at `com`).
/// - A label of a script without case holds no letter that could mark its
///   end, so its TLD is the longest prefix of up to 24 characters that
///   Mozilla's Public Suffix List knows (`中国`, `公司`, `香港` in `中国吗`);
///   a made-up ending (`我们`) is not a TLD.
///
/// `listed_only`: the label follows an ideographic full stop `。`, which
/// also ends sentences (`…@example.com。aa`), so even a cased TLD counts
/// only when the Public Suffix List knows it (`例子。com`).
fn tld_len(label: &str, listed_only: bool) -> Option<usize> {
    let listed = |l: &str| psl::suffix(l.as_bytes()).is_some_and(|s| s.is_known() && s.as_bytes().len() == l.len());
    let cut = label.char_indices().find(|&(_, c)| is_uncased_letter(c)).map_or(label.len(), |(i, _)| i);
    if cut > 0 {
        let head = &label[..cut];
        let n = head.chars().count();
        let ok = (2..=MAX_TLD_CHARS).contains(&n)
            && head.chars().all(char::is_alphabetic)
            && (!listed_only || listed(&head.to_lowercase()));
        return ok.then_some(cut);
    }
    let mut best = None;
    for (n, (i, c)) in label.char_indices().enumerate() {
        if n >= MAX_TLD_CHARS || !(c.is_alphabetic() || is_uncased_letter(c)) {
            break;
        }
        let end = i + c.len_utf8();
        if listed(&label[..end]) {
            best = Some(end);
        }
    }
    best
}

/// Length of the longest prefix of `d` that is a valid domain: two or more
/// labels of 1–63 bytes of letters, digits or inner hyphens, separated by
/// `.` or `。`, the last starting with a TLD ([`tld_len`]; the domain ends
/// where the TLD ends).
fn valid_domain(d: &str) -> Option<usize> {
    let label_ok = |l: &str| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-');
    // Labels up to the first malformed one; the longest such prefix whose
    // last label is a TLD wins. Each label's TLD test is bounded, so this is
    // linear in the length of `d`.
    let mut best = None;
    let mut at = 0;
    let mut after_full_stop = false;
    for (i, label) in d.split(['.', '\u{3002}']).enumerate() {
        if i >= 1 {
            if let Some(t) = tld_len(label, after_full_stop) {
                best = Some(at + t);
                if t < label.len() {
                    break;
                }
            }
        }
        if !label_ok(label) {
            break;
        }
        at += label.len();
        // The separator after this label, if any (`.` is 1 byte, `。` 3).
        let sep = d[at..].chars().next();
        after_full_stop = sep == Some('\u{3002}');
        // After a complete domain, `。` ends the sentence
        // (`jane@example.com。中国…`), not the domain.
        if after_full_stop && best.is_some() {
            break;
        }
        at += sep.map_or(0, char::len_utf8);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> Redactor {
        Redactor::new()
    }

    fn kinds(text: &str) -> Vec<(String, PiiKind)> {
        r().find(text).into_iter().map(|s| (text[s.range()].to_owned(), s.kind)).collect()
    }

    fn assert_untouched(text: &str) {
        let out = r().redact(text);
        assert_eq!(out.text, text, "false positive in {text:?}: {:?}", r().find(text));
        assert!(out.is_clean());
    }

    #[test]
    fn send_sync_clone() {
        fn check<T: Send + Sync + Clone + 'static>() {}
        check::<Redactor>();
        check::<Redaction>();
        check::<PiiSpan>();
    }

    #[test]
    fn case_c09_chinese() {
        let text = "我的手机号是13812345678，身份证号11010519491231002X，卡号6222020200112233446";
        let out = r().redact(text);
        assert_eq!(out.text, "我的手机号是[PHONE]，身份证号[CN_ID]，卡号[CARD]");
        for leaked in ["13812345678", "11010519491231002X", "6222020200112233446", "1381", "2233"] {
            assert!(!out.text.contains(leaked));
        }
        assert!(!out.text.chars().any(|c| c.is_ascii_digit()));
        assert_eq!(out.counts.get("CN_MOBILE"), Some(&1));
        assert_eq!(out.counts.get("CN_ID"), Some(&1));
        assert_eq!(out.counts.get("CARD"), Some(&1));
        assert_eq!(out.total(), 3);
    }

    #[test]
    fn case_c09_english() {
        let text = "Reach me at jane.roe@example.com or +1 415 555 0100";
        let out = r().redact(text);
        assert_eq!(out.text, "Reach me at [EMAIL] or [PHONE]");
        assert!(!out.text.chars().any(|c| c.is_ascii_digit()));
        assert!(!out.text.contains("jane") && !out.text.contains("example"));
        assert_eq!(out.counts.get("EMAIL"), Some(&1));
        assert_eq!(out.counts.get("PHONE"), Some(&1));
    }

    #[test]
    fn case_c09_values_pass_their_checksums() {
        assert!(cn_id_valid("11010519491231002X"));
        assert!(luhn_valid("6222020200112233446"));
    }

    #[test]
    fn cn_mobile_shapes() {
        for (text, m) in [
            ("我的手机号是13812345678，", "13812345678"),
            ("电话：138 1234 5678。", "138 1234 5678"),
            ("电话 138-1234-5678", "138-1234-5678"),
            ("call +86 138 1234 5678 now", "+86 138 1234 5678"),
            ("call +86-13812345678", "+86-13812345678"),
            ("call (+86) 138 1234 5678", "(+86) 138 1234 5678"),
            ("微信同号１３８１２３４５６７８＠", "１３８１２３４５６７８"),
            ("call +8613812345678", "+8613812345678"),
            ("拨打0086 13812345678", "0086 13812345678"),
            ("拨打008613812345678", "008613812345678"),
            ("(13912345678)", "13912345678"),
            ("手机１３８１２３４５６７８吧", "１３８１２３４５６７８"),
            ("13812345678,13912345678", "13812345678"),
        ] {
            let found = kinds(text);
            assert_eq!(found.first(), Some(&(m.to_owned(), PiiKind::CnMobile)), "{text:?}");
        }
        assert_eq!(kinds("13812345678,13912345678").len(), 2);
        let out = r().redact("我的手机号是13812345678，");
        assert_eq!(out.text, "我的手机号是[PHONE]，");
    }

    /// Numbers read out digit by digit (dictation, transcribed calls).
    #[test]
    fn spelled_out_digit_by_digit() {
        for (text, m, kind) in [
            ("my number is 1 3 8 1 2 3 4 5 6 7 8 thanks", "1 3 8 1 2 3 4 5 6 7 8", PiiKind::CnMobile),
            ("手机 1 3 8 1 2 3 4 5 6 7 8。", "1 3 8 1 2 3 4 5 6 7 8", PiiKind::CnMobile),
            ("call +4 4 7 9 1 1 1 2 3 4 5 6", "+4 4 7 9 1 1 1 2 3 4 5 6", PiiKind::Phone),
            ("phone 4 1 5 5 5 5 2 6 7 1", "4 1 5 5 5 5 2 6 7 1", PiiKind::Phone),
            ("call me at 1-3-8-1-2-3-4-5-6-7-8", "1-3-8-1-2-3-4-5-6-7-8", PiiKind::CnMobile),
            (
                "手机 1 - 3 - 8 - 1 - 2 - 3 - 4 - 5 - 6 - 7 - 8",
                "1 - 3 - 8 - 1 - 2 - 3 - 4 - 5 - 6 - 7 - 8",
                PiiKind::CnMobile,
            ),
        ] {
            let found = kinds(text);
            assert_eq!(found.first(), Some(&(m.to_owned(), kind)), "{text:?}: {found:?}");
        }
        assert_eq!(r().redact("it is 1 3 8 1 2 3 4 5 6 7 8.").text, "it is [PHONE].");
        // Ten digits or fewer need a phone word before them; counting, a
        // shorter list, a longer run joined to it, and 16+ digits are kept.
        for text in [
            "scores 4 1 5 5 5 5 2 6 7 1",
            "count 0 1 2 3 4 5 6 7 8 9 done",
            "v1.3 8 1 2 3 4 5 6 7 8 9",
            "1 2 3 4 5 6 7 8 9",
            "138 1 2 3 4 5 6 7 8",
            "1 3 8 1 2 3 4 5 6 7 8 9 0 1 2 3",
            "ids 1 3 8 1 2 3 4 5 6 7 8x",
            "1-3-8 1 2 3 4 5 6 7 8",
            "steps 1-2-3-4-5-6-7-8-9",
        ] {
            assert!(kinds(text).is_empty(), "{text:?}: {:?}", kinds(text));
        }
    }

    #[test]
    fn us_social_security_numbers() {
        for (text, m) in [
            ("my SSN is 123-45-6789.", "123-45-6789"),
            ("SSN: 123 45 6789", "123 45 6789"),
            ("social security number 123456789", "123456789"),
            ("ssn=078051120", "078051120"),
            ("社会安全号 123-45-6789", "123-45-6789"),
            ("SSN: 212.09.7694", "212.09.7694"),
            ("SSN# 123-45-6789", "123-45-6789"),
            ("SS# 123-45-6789", "123-45-6789"),
            ("SSN-123-45-6789", "123-45-6789"),
            ("SSN 212-097694", "212-097694"),
            ("my ssn212097694 is on file", "212097694"),
            ("social security number: 212 097 694", "212 097 694"),
            ("SSNs: 212 097 694", "212 097 694"),
            ("social-security number 123456789", "123456789"),
            ("SSN is: 123 - 45 - 6789", "123 - 45 - 6789"),
            ("SSN 212 097 694", "212 097 694"),
        ] {
            assert_eq!(kinds(text), vec![(m.to_owned(), PiiKind::UsSsn)], "{text:?}");
        }
        assert_eq!(r().redact("my SSN is 123-45-6789.").text, "my SSN is [SSN].");
        // Never-issued ranges, no word for spaces or a bare run, a longer
        // dashed chain, and a glued word are kept.
        for text in [
            "000-12-3456",
            "666-12-3456",
            "912-12-3456",
            "123-00-4567",
            "123-45-0000",
            "part 123 45 6789",
            "order 123456789",
            "12-123-45-6789",
            "123-45-6789-1",
            "x123-45-6789",
            "see /orders/123-45-6789 today",
            "case-123-45-6789",
            "123/45/6789",
            "ref 123-45-6789-x",
            "order #212-09-7694 was refunded",
            "SSN/EIN: 12-3456789",
            "SSN on file; zip 10001-1234",
            "SSN: 212/097/694",
            "SSN redacted; user id abc123456789",
            "Part number ABC-212-09-7694-X",
        ] {
            assert!(kinds(text).iter().all(|(_, k)| *k != PiiKind::UsSsn), "{text:?}: {:?}", kinds(text));
        }
    }

    /// Found by the `redact` fuzz target: the `[SSN]` placeholder left by
    /// the first pass vouched for the next 9-digit run in the second.
    #[test]
    fn a_placeholder_names_no_number() {
        let text = "x 4111 1111 1111 111 555-01-0100 012691356";
        let r = r();
        let once = r.redact(text);
        assert_eq!(once.text, "x 4111 1111 1111 111 [SSN] 012691356");
        assert_eq!(once.total(), r.find(text).len());
        assert_eq!(r.redact(&once.text).text, once.text);
    }

    #[test]
    fn cn_mobile_rejects() {
        for text in [
            "12812345678",  // 12x is not a mobile prefix
            "1381234567",   // 10 digits
            "138123456789", // 12 digits
            "a13812345678", // glued to a word
            "13812345678b",
            "13812345678_x",
            "x_13812345678",
            "2023110513812345678", // inside a longer run
            "13812345678.5",       // decimal
            "1.13812345678",
        ] {
            assert!(kinds(text).iter().all(|(_, k)| *k != PiiKind::CnMobile), "{text:?}: {:?}", kinds(text));
        }
    }

    #[test]
    fn cn_id_shapes() {
        assert_eq!(kinds("身份证号11010519491231002X，")[0].1, PiiKind::CnId);
        assert_eq!(kinds("id 11010519491231002x")[0].0, "11010519491231002x");
        assert_eq!(kinds("ID: 110105 19491231 002X")[0], ("110105 19491231 002X".into(), PiiKind::CnId));
        assert_eq!(kinds("身份证：110105 1949 1231 002X")[0].1, PiiKind::CnId);
        assert_eq!(
            kinds("我的身份证号是1101 0519 4912 3100 2X"),
            vec![("1101 0519 4912 3100 2X".into(), PiiKind::CnId)]
        );
        assert_eq!(r().redact("ID 1101-0519-4912-3100-2X ok").text, "ID [CN_ID] ok");
        assert_eq!(kinds("证件４４０３０４１９９００１０１００１１")[0].1, PiiKind::CnId);
        assert_eq!(r().redact("身份证11010519491231002X").text, "身份证[CN_ID]");
    }

    #[test]
    fn cn_id_failing_checksum_is_kept() {
        assert_untouched("身份证号110105194912310021，");
        assert_untouched("证件号 11010519491231002Y");
        // Right checksum but impossible birth date.
        let body = "11010519901301001";
        let c = crate::safety::cn_id_check_char(body).unwrap_or('0');
        assert_untouched(&format!("号码{body}{c}。"));
    }

    #[test]
    fn card_shapes() {
        for (text, m) in [
            ("卡号6222020200112233446", "6222020200112233446"),
            ("card 4111 1111 1111 1111.", "4111 1111 1111 1111"),
            ("card 4111-1111-1111-1111", "4111-1111-1111-1111"),
            ("amex 3782 822463 10005", "3782 822463 10005"),
            ("amex 378282246310005", "378282246310005"),
            ("卡 6222 0202 0011 2233 446", "6222 0202 0011 2233 446"),
            ("mc 5500005555555559 ok", "5500005555555559"),
        ] {
            assert_eq!(kinds(text), vec![(m.to_owned(), PiiKind::BankCard)], "{text:?}");
        }
    }

    #[test]
    fn card_rejects() {
        assert_untouched("card 4111111111111112");
        assert_untouched("number 4111 1111 1111 1112");
        // Luhn-valid, but no card issuer prefix starts with 1 (timestamps).
        for t in ["1000000000009", "1234567812345670"] {
            assert!(luhn_valid(t));
            assert_untouched(t);
        }
        // Part of a longer uniformly grouped number.
        assert_untouched("ref 4111 1111 1111 1111 1111 1111");
    }

    #[test]
    fn email_shapes() {
        for (text, m) in [
            ("Reach me at jane.roe@example.com.", "jane.roe@example.com"),
            ("邮箱jane_roe+tag@mail.example.co.uk，谢谢", "jane_roe+tag@mail.example.co.uk"),
            ("qq 12345678@qq.com", "12345678@qq.com"),
            ("<a.b-c@sub-domain.example.org>", "a.b-c@sub-domain.example.org"),
            ("...jane@example.com", "jane@example.com"),
        ] {
            assert_eq!(kinds(text), vec![(m.to_owned(), PiiKind::Email)], "{text:?}");
        }
        for text in ["a@b", "user@localhost", "@example.com", "x@.com", "x@example.c", "x@example.com1"] {
            assert!(kinds(text).is_empty(), "{text:?}: {:?}", kinds(text));
        }
    }

    #[test]
    fn long_inputs_stay_linear() {
        // Many labels after one `@`, many `@`, a long digit chain.
        let t = format!("a@{}com", "b.".repeat(200_000));
        assert_eq!(r().find(&t).len(), 1);
        let t = "a@".repeat(100_000);
        assert!(r().find(&t).is_empty());
        let t = "1 ".repeat(200_000);
        assert!(r().find(&t).is_empty());
    }

    #[test]
    fn phone_shapes() {
        for (text, m) in [
            ("call +1 415 555 0100 today", "+1 415 555 0100"),
            ("call (415) 555-0100 today", "(415) 555-0100"),
            ("call +44 20 7946 0958", "+44 20 7946 0958"),
            ("call 415-555-0100", "415-555-0100"),
            ("call 415.555.0100", "415.555.0100"),
            ("call 1-415-555-0100", "1-415-555-0100"),
            ("call +1 (415) 555-0100", "+1 (415) 555-0100"),
            ("call +14155550100", "+14155550100"),
            ("call +49 30 12345678", "+49 30 12345678"),
            ("call (+44) 20 7946 0958", "(+44) 20 7946 0958"),
            ("北京 010-12345678", "010-12345678"),
            ("深圳(0755) 1234 5678", "(0755) 1234 5678"),
            ("London 020 7946 0958", "020 7946 0958"),
        ] {
            assert_eq!(kinds(text), vec![(m.to_owned(), PiiKind::Phone)], "{text:?}");
        }
        assert_eq!(r().redact("call (415) 555-0100.").text, "call [PHONE].");
    }

    #[test]
    fn false_positives_kept() {
        for text in [
            "订单号 20231105123456789012",
            "订单号20231105123456789012，请查收",
            "2023-11-05 12:34:56",
            "timestamp 1699999999",
            "ts=1699999999123",
            "compact 20231105123456",
            "v1.2.3",
            "Windows 10.0.19045",
            "server 192.168.100.200 and 10.0.0.1",
            "price $1,299.99 or ¥4999.00",
            "in 2023 and 1999",
            "pi is 3.14159",
            "pi is 3.14159265358979",
            "due 2023-11-05",
            "card 4111111111111112",
            "身份证 110105194912310021",
            "room 415 and 555",
            "05-11-2023",
            "call me at 5550100",
            "ratio 100-200-3000",
            "isbn 978-3-16-148410-0",
            "uuid 123e4567-e89b-12d3-a456-426614174000",
            "hash a3f13812345678b9",
        ] {
            assert_untouched(text);
        }
    }

    #[test]
    fn precedence_and_overlap() {
        // CN mobile vs generic international: same span, mobile kind wins.
        assert_eq!(kinds("+86 138 1234 5678")[0].1, PiiKind::CnMobile);
        // E-mail whose local part is a mobile number stays one e-mail.
        assert_eq!(kinds("13812345678@qq.com"), vec![("13812345678@qq.com".into(), PiiKind::Email)]);
        let spans = r().find("a 13812345678 b x@y.com c 4111111111111111 d 11010519491231002X");
        let ks: Vec<PiiKind> = spans.iter().map(|s| s.kind).collect();
        assert_eq!(ks, vec![PiiKind::CnMobile, PiiKind::Email, PiiKind::BankCard, PiiKind::CnId]);
        assert!(spans.windows(2).all(|w| w[0].end <= w[1].start));
    }

    #[test]
    fn fixed_point_rescan() {
        // The trailing card is only separable once the phone is gone.
        let text = "x 4111 1111 1111 1111 138 1234 5678";
        let out = r().redact(text);
        assert_eq!(out.text, "x [CARD] [PHONE]");
        let again = r().redact(&out.text);
        assert_eq!(again.text, out.text);
        assert!(again.is_clean());
    }

    #[test]
    fn length_bound() {
        let r = r();
        for text in [
            "a@b.co",
            "x 13812345678 y",
            "a@b.co a@b.co a@b.co",
            "我的手机号是13812345678，身份证号11010519491231002X，卡号6222020200112233446",
            "",
        ] {
            let out = r.redact(text);
            assert!(out.text.len() <= text.len() + MAX_GROWTH_PER_SPAN * out.total());
        }
        // The shortest built-in span (a 6-byte e-mail) grows by one byte.
        assert_eq!(r.redact("a@b.co").text.len(), 7);
        assert_eq!(r.max_growth_per_span(), MAX_GROWTH_PER_SPAN);
    }

    #[test]
    fn length_bound_with_long_custom_label() {
        let label = "A".repeat(32);
        let r = Redactor::new().with_pattern(&label, "z").unwrap();
        assert_eq!(r.max_growth_per_span(), 34);
        let out = r.redact("zzz");
        assert_eq!(out.total(), 3);
        assert_eq!(out.text.len(), 3 * 34);
        assert!(out.text.len() <= 3 + r.max_growth_per_span() * out.total());
    }

    #[test]
    fn placeholders_well_formed() {
        let text = "13812345678 +1 415 555 0100 a@b.com 4111111111111111 11010519491231002X EMP-12345";
        let r = Redactor::new().with_pattern("EMPLOYEE_ID", r"EMP-\d{5}").unwrap();
        let out = r.redact(text);
        assert_eq!(out.text, "[PHONE] [PHONE] [EMAIL] [CARD] [CN_ID] [EMPLOYEE_ID]");
        let re = Regex::new(r"^\[[A-Z0-9_]{1,32}\]$").unwrap();
        for k in [
            PiiKind::CnMobile,
            PiiKind::CnId,
            PiiKind::BankCard,
            PiiKind::Email,
            PiiKind::Phone,
            PiiKind::UsSsn,
            PiiKind::Custom(0),
        ] {
            let p = r.placeholder(k).unwrap();
            assert!(re.is_match(p), "{p}");
            assert!(p.len() <= r.max_growth_per_span());
        }
        assert_eq!(r.placeholder(PiiKind::Custom(1)), None);
        assert_eq!(r.label(PiiKind::Custom(0)), Some("EMPLOYEE_ID"));
        assert_eq!(r.label(PiiKind::CnMobile), Some("CN_MOBILE"));
        assert_eq!(out.counts.get("EMPLOYEE_ID"), Some(&1));
        assert_eq!(out.counts.get("PHONE"), Some(&1));
        assert_eq!(out.counts.get("CN_MOBILE"), Some(&1));
    }

    #[test]
    fn custom_patterns() {
        let r = Redactor::new()
            .with_pattern("PLATE", r"[京沪粤][A-Z][0-9A-Z]{5}")
            .unwrap()
            .with_pattern("TICKET", r"T-\d+")
            .unwrap();
        let out = r.redact("车牌京A12345，工单T-9, T-10");
        assert_eq!(out.text, "车牌[PLATE]，工单[TICKET], [TICKET]");
        assert_eq!(out.counts.get("TICKET"), Some(&2));
        assert_eq!(out.counts.get("PLATE"), Some(&1));
        // Custom patterns win overlaps with built-ins.
        let r = Redactor::new().with_pattern("ACCOUNT", r"\d{11}").unwrap();
        let out = r.redact("acct 13812345678");
        assert_eq!(out.text, "acct [ACCOUNT]");
        assert_eq!(out.counts.get("CN_MOBILE"), None);
        // Empty matches are ignored.
        let r = Redactor::new().with_pattern("Z", "z*").unwrap();
        assert_eq!(r.redact("abc").text, "abc");
        assert_eq!(r.redact("azzb").text, "a[Z]b");
    }

    #[test]
    fn custom_pattern_errors() {
        let bad = |label: &str, re: &str| Redactor::new().with_pattern(label, re).is_err();
        assert!(bad("", "x"));
        assert!(bad("lower", "x"));
        assert!(bad("WITH SPACE", "x"));
        assert!(bad("[X]", "x"));
        assert!(bad(&"A".repeat(33), "x"));
        assert!(bad("PHONE", "x"));
        assert!(bad("CN_ID", "x"));
        assert!(bad("OK", "(unclosed"));
        assert!(!bad(&"A".repeat(32), "x"));
        match Redactor::new().with_pattern("OK", "(") {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "pii_pattern"),
            other => panic!("unexpected {other:?}"),
        }
        match Redactor::new().with_pattern("bad", "x") {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "pii_label"),
            other => panic!("unexpected {other:?}"),
        }
        let mut r = Redactor::new();
        for i in 0..MAX_CUSTOM_PATTERNS {
            r = r.with_pattern(&format!("P{i}"), "x").unwrap();
        }
        assert!(r.with_pattern("ONE_MORE", "x").is_err());
    }

    #[test]
    fn policies() {
        let r = r();
        let text = "mail a@b.com twice a@b.com and 13812345678";
        assert_eq!(r.apply(text, PiiPolicy::Off).unwrap().text, text);
        assert_eq!(r.apply(text, PiiPolicy::Redact).unwrap(), r.redact(text));
        match r.apply(text, PiiPolicy::Reject) {
            Err(Error::Rejected(msg)) => {
                assert_eq!(msg, "personal data: CN_MOBILE=1, EMAIL=2");
                assert!(!msg.contains("a@b.com") && !msg.contains("138"));
            }
            other => panic!("unexpected {other:?}"),
        }
        let clean = r.apply("nothing here", PiiPolicy::Reject).unwrap();
        assert_eq!(clean.text, "nothing here");
        assert!(clean.is_clean());
        assert_eq!(PiiPolicy::default(), PiiPolicy::Redact);
    }

    #[test]
    fn spans_are_sorted_disjoint_and_on_boundaries() {
        let text = "①13812345678②a@b.com③+1 415 555 0100④１３８１２３４５６７８";
        let spans = r().find(text);
        assert_eq!(spans.len(), 4);
        for s in &spans {
            assert!(s.start < s.end && text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
        }
        assert!(spans.windows(2).all(|w| w[0].end <= w[1].start));
    }

    /// Invisible characters of every class, each inserted at every inner
    /// position of every kind of value: the whole value, the invisible
    /// character included, becomes the placeholder.
    #[test]
    fn invisible_characters_inside_values_are_redacted_with_them() {
        let invisible = [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{2062}',
            '\u{00AD}',
            '\u{FEFF}',
            '\u{180E}',
            '\u{FE0F}',
            '\u{034F}',
            '\u{200E}',
            '\u{E0020}',
        ];
        let values = [
            ("13812345678", "[PHONE]"),
            ("+44 20 7946 0958", "[PHONE]"),
            ("jane.roe@example.com", "[EMAIL]"),
            ("6222020200112233446", "[CARD]"),
            ("11010519491231002X", "[CN_ID]"),
        ];
        for c in invisible {
            assert!(is_invisible(c), "U+{:04X}", u32::from(c));
            for (value, placeholder) in values {
                let chars: Vec<char> = value.chars().collect();
                for at in 1..chars.len() {
                    let hidden: String = chars[..at].iter().chain([&c]).chain(&chars[at..]).collect();
                    let text = format!("手机 {hidden}，ok");
                    let out = r().redact(&text);
                    assert_eq!(
                        out.text,
                        format!("手机 {placeholder}，ok"),
                        "U+{:04X} at {at} in {value}",
                        u32::from(c)
                    );
                    assert_eq!(out.total(), 1);
                }
                // Outside the value it stays where it was.
                let text = format!("a {c}{value}{c} b");
                assert_eq!(r().redact(&text).text, format!("a {c}{placeholder}{c} b"));
            }
        }
    }

    #[test]
    fn case_invisible_characters_in_one_sentence() {
        let text = "phone 1381234\u{200B}5678, mail ja\u{200B}ne.roe@example.com, card 6222\u{2060}020200112233446, \
                    id 110105\u{200D}19491231002X, again jane\u{00AD}.doe@example.org";
        let out = r().redact(text);
        assert_eq!(out.text, "phone [PHONE], mail [EMAIL], card [CARD], id [CN_ID], again [EMAIL]");
        assert_eq!(out.total(), 5);
        assert!(!out.text.chars().any(|c| c.is_ascii_digit() || is_invisible(c)));
    }

    #[test]
    fn other_widths_and_styles_read_as_their_letters() {
        let out = r().redact("写信到 ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ 或 jane﹫example.com，电话 𝟏𝟑𝟖𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖。");
        assert_eq!(out.text, "写信到 [EMAIL] 或 [EMAIL]，电话 [PHONE]。");
        // Enclosed digits are list markers, not digits of the number.
        assert_eq!(r().redact("①13812345678").text, "①[PHONE]");
    }

    #[test]
    fn numbers_in_other_scripts_and_dashes_are_found() {
        for (text, out) in [
            ("phone ١٣٨١٢٣٤٥٦٧٨ ok", "phone [PHONE] ok"),
            ("phone ۱۳۸۱۲۳۴۵۶۷۸ ok", "phone [PHONE] ok"),
            ("phone १३८१२३४५६७८ ok", "phone [PHONE] ok"),
            ("phone ๑๓๘๑๒๓๔๕๖๗๘ ok", "phone [PHONE] ok"),
            ("phone ၁၃၈၁၂၃၄၅၆၇၈ ok", "phone [PHONE] ok"),
            ("phone ¹³⁸¹²³⁴⁵⁶⁷⁸ ok", "phone [PHONE] ok"),
            ("phone ①③⑧①②③④⑤⑥⑦⑧ ok", "phone [PHONE] ok"),
            ("Please call Sam on 030/12345678 tomorrow", "Please call Sam on [PHONE] tomorrow"),
            ("Please call Sam on 0151/23456789 tomorrow", "Please call Sam on [PHONE] tomorrow"),
            ("Please call Sam on 090ー1234ー5678 tomorrow", "Please call Sam on [PHONE] tomorrow"),
            ("Please call Sam on 415—555—0100 tomorrow", "Please call Sam on [PHONE] tomorrow"),
            ("Please call Sam on 415−555−0100 tomorrow", "Please call Sam on [PHONE] tomorrow"),
            ("Please call Sam on 03(1234)5678 tomorrow", "Please call Sam on [PHONE] tomorrow"),
            ("Please call Sam on ０３（１２３４）５６７８ tomorrow", "Please call Sam on [PHONE] tomorrow"),
            ("Please call Sam on 0044(0)7911123456 tomorrow", "Please call Sam on [PHONE] tomorrow"),
        ] {
            assert_eq!(r().redact(text).text, out, "{text}");
        }
        // Alone, a circled or superscript digit is a marker or an exponent.
        assert_eq!(r().redact("① 13812345678").text, "① [PHONE]");
        assert_eq!(r().redact("area 10² m").text, "area 10² m");
        assert_untouched("in 2023/11/05 we met");
    }

    #[test]
    fn addresses_with_letters_of_other_alphabets_are_found_whole() {
        for (text, out) in [
            ("mail renée.dupont@example.fr now", "mail [EMAIL] now"),
            ("mail müller.jan@example.de now", "mail [EMAIL] now"),
            ("mail jan@bücher.de now", "mail [EMAIL] now"),
            ("mail иван@пример.рф now", "mail [EMAIL] now"),
            ("联系jane@example.com，谢谢", "联系[EMAIL]，谢谢"),
        ] {
            assert_eq!(r().redact(text).text, out, "{text}");
        }
    }

    #[test]
    fn addresses_in_scripts_without_case_are_found() {
        for (text, out) in [
            ("mail 用户@例子.中国 now", "mail [EMAIL] now"),
            ("写信到 用户名@公司.公司 吧", "写信到 [EMAIL] 吧"),
            ("contact 张三@example.com today", "contact [EMAIL] today"),
            ("邮箱：张三@example.com。", "邮箱：[EMAIL]。"),
            // The ideographic full stop separates labels (IDNA), and text
            // after a TLD without a space is not part of the address.
            ("地址是 用户@例子。中国 吧", "地址是 [EMAIL] 吧"),
            ("发到 用户@例子.中国吗？", "发到 [EMAIL]吗？"),
            ("发到 张三@example.com吗？", "发到 [EMAIL]吗？"),
            ("メール 山田@例え.jp です", "メール [EMAIL] です"),
            ("メール 山田@例え.コム です", "メール [EMAIL] です"),
            ("이메일 홍길동@예시.한국 입니다", "이메일 [EMAIL] 입니다"),
            ("full width ｊａｎｅ＠例子．中国 ok", "full width [EMAIL] ok"),
            ("half width 用户@例子｡中国 ok", "half width [EMAIL] ok"),
            ("mail jane@example。com ok", "mail [EMAIL] ok"),
            ("发到jane@example.com。aa", "发到[EMAIL]。aa"),
            ("发到jane@example.com。中国人很多", "发到[EMAIL]。中国人很多"),
            ("อีเมล สมชาย@ตัวอย่าง.ไทย ครับ", "อีเมล [EMAIL] ครับ"),
            ("ईमेल राम@उदाहरण.भारत है", "ईमेल [EMAIL] है"),
            ("بريد محمد@مثال.مصر الآن", "بريد [EMAIL] الآن"),
        ] {
            assert_eq!(r().redact(text).text, out, "{text}");
        }
        // Where a name ends and the sentence before it begins cannot be
        // told, so the address is replaced with the words glued to it.
        assert_eq!(r().redact("请发给张三@例子.中国").text, "[EMAIL]");
        // An `@` in Chinese text without a real domain is no address.
        for text in ["张三@李四 你好", "我们在@公司。我们明天见", "价格@5元.件", "@张三 看这里"]
        {
            assert_untouched(text);
        }
    }

    #[test]
    fn extensions_dotted_international_and_words_glued_by_a_dash() {
        for (text, out) in [
            ("call me at 415-555-0100x12 tonight", "call me at [PHONE]x12 tonight"),
            ("my number is 138-1234-5678x3", "my number is [PHONE]x3"),
            ("office (415) 555-0100 ext.12", "office [PHONE] ext.12"),
            ("office 415-555-0100ext12.", "office [PHONE]ext12."),
            ("my uk mobile +44.7911.123.456 ok", "my uk mobile [PHONE] ok"),
            ("my uk mobile +44.7911.123456 ok", "my uk mobile [PHONE] ok"),
            ("or 0044.7911.123.456", "or [PHONE]"),
            ("paris +33.1.23.45.67.89", "paris [PHONE]"),
            ("call-13812345678 please", "call-[PHONE] please"),
            ("Tel-07700 900456", "Tel-[PHONE]"),
            ("wechat-13812345678", "wechat-[PHONE]"),
            ("tel13812345678", "tel[PHONE]"),
            ("Mobile07700900456 ok", "Mobile[PHONE] ok"),
            ("mobile_13812345678", "mobile_[PHONE]"),
            ("wx_13812345678", "wx_[PHONE]"),
            ("my_phone_13912345671 saved", "my_phone_[PHONE] saved"),
            ("cellphone13912345671", "cellphone[PHONE]"),
            ("我的电话是一三九一二三四五六七八", "我的电话是[PHONE]"),
            ("我的手机：幺三九幺二三四五六七八", "我的手机：[PHONE]"),
            ("电话：一三九 一二三四 五六一一", "电话：[PHONE]"),
            ("私の携帯は〇九〇-一二三四-五六七八です", "私の携帯は[PHONE]です"),
            // Numerals beside a number in digits stay words: the number is found whole.
            ("〇〇 13812345678", "〇〇 [PHONE]"),
            ("13812345678 一二", "[PHONE] 一二"),
            ("一二-13812345678", "一二-[PHONE]"),
            ("三四 (138) 1234 5678", "三四 [PHONE]"),
            ("tel ⁺¹ ⁴¹⁵ ⁵⁵⁵ ⁰¹⁰⁷", "tel [PHONE]"),
            // Numerals glued to written digits stay words.
            ("一二13812345678", "一二[PHONE]"),
            ("电话：壹叁玖壹贰叁肆伍陆柒捌 是小王的", "电话：[PHONE] 是小王的"),
            ("phone#13612345678 for Xu", "phone#[PHONE] for Xu"),
            ("phone # 13612345676", "phone # [PHONE]"),
            ("call #4155550111 now", "call #[PHONE] now"),
            ("card_4111111111111111", "card_[CARD]"),
            ("visa4111111111111111", "visa[CARD]"),
            ("id_11010519491231002X glued", "id_[CN_ID] glued"),
            ("card\u{200B}6217000000123451 zw", "card\u{200B}[CARD] zw"),
            ("電話 0312345678", "電話 [PHONE]"),
        ] {
            assert_eq!(r().redact(text).text, out, "{text}");
        }
        for text in [
            // A signed amount in thousands grouping, a DOI and paths.
            "balance +12.345.678.901 units",
            "https://doi.org/10.1136/bjo-2022-321842.",
            "see a_b-13812345678 in the log",
            "img/photo-13812345678.jpg",
            // Hexadecimal ids whose digit runs pass a checksum.
            "482c14fd04702954ef3a1a4845113792729 7-173",
            "id a1b4111111111111111 done",
            // A code glued to letters, a hexadecimal value, a size.
            "part AB13812345678",
            "user_13812345678",
            "fixed in #13612345678 yesterday",
            "hash a7f13812345678",
            "一二三四五六七八九十",
            "他一个人走了三四五里路",
            "0x13812345678",
            "resolution 13812345678x12345678",
            // Month/year ranges with slashes.
            "Solutions Inc. 02/2015 - 11/2018  Ottawa",
            "from 11/2018 - 02/2020 in Berlin",
            "Stay 2023/04/05-2023/05/06 booked",
            "2023/04/05 - 2023/05/06",
            "2023-04-05-2023-05-06",
            "2023/04/05–2023/05/06",
            "05.04.2023-06.05.2023",
        ] {
            assert_untouched(text);
        }
    }

    #[test]
    fn a_number_before_at_is_an_address_only_with_a_domain() {
        assert_eq!(r().redact("13812345678@qq.com").text, "[EMAIL]");
        assert_eq!(r().redact("call 13812345678@ now").text, "call [PHONE]@ now");
        assert_eq!(r().redact("微信同号１３８１２３４５６７８＠").text, "微信同号[PHONE]＠");
    }

    #[test]
    fn serde_shapes() {
        let out = r().redact("a@b.com");
        let json = serde_json::to_string(&out).unwrap();
        assert_eq!(json, r#"{"text":"[EMAIL]","counts":{"EMAIL":1}}"#);
        let back: Redaction = serde_json::from_str(&json).unwrap();
        assert_eq!(back, out);
        assert_eq!(serde_json::to_string(&PiiPolicy::Reject).unwrap(), r#""Reject""#);
    }
}
