//! The pattern-only personal-data redactor that preceded phone-number
//! confirmation with libphonenumber metadata, frozen as the same-run baseline
//! of `benches/phones.rs`. Phones were accepted by shape alone: `+` and 8–15
//! digits, North-American `3-3-4`, trunk-prefixed `0AA(A) SSSS SSSS`, and CN
//! mobile `1[3-9]` + 9 digits. Not part of the product; only the imports and
//! the documentation differ from that version.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

use mnemon::safety::{cn_id_valid, luhn_valid};
use mnemon::{Error, Result};

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
    /// Mainland-China mobile number (`1[3-9]` + 9 digits, optional `+86`/`0086`).
    /// Placeholder `[PHONE]`, count key `CN_MOBILE`.
    CnMobile,
    /// Mainland-China resident identity number (GB 11643-1999, 18 chars).
    /// Placeholder `[CN_ID]`, count key `CN_ID`.
    CnId,
    /// Payment card number (13–19 digits, Luhn). Placeholder `[CARD]`,
    /// count key `CARD`.
    BankCard,
    /// E-mail address. Placeholder `[EMAIL]`, count key `EMAIL`.
    Email,
    /// Other telephone number (international `+…`, North-American, or
    /// trunk-prefixed national). Placeholder `[PHONE]`, count key `PHONE`.
    Phone,
    /// A caller-supplied pattern: the index among the redactor's patterns.
    /// Placeholder and count key are the pattern's label.
    Custom(u16),
}

impl PiiKind {
    /// The count key of a built-in kind (`"CN_MOBILE"`, `"CN_ID"`, `"CARD"`,
    /// `"EMAIL"`, `"PHONE"`); `None` for [`PiiKind::Custom`], whose key is its
    /// label (see [`Redactor::label`]).
    pub const fn name(self) -> Option<&'static str> {
        match self {
            PiiKind::CnMobile => Some("CN_MOBILE"),
            PiiKind::CnId => Some("CN_ID"),
            PiiKind::BankCard => Some("CARD"),
            PiiKind::Email => Some("EMAIL"),
            PiiKind::Phone => Some("PHONE"),
            PiiKind::Custom(_) => None,
        }
    }

    /// The placeholder of a built-in kind (`"[PHONE]"`, `"[CN_ID]"`,
    /// `"[CARD]"`, `"[EMAIL]"`; CN mobile numbers share `"[PHONE]"`); `None`
    /// for [`PiiKind::Custom`].
    pub const fn placeholder(self) -> Option<&'static str> {
        match self {
            PiiKind::CnMobile | PiiKind::Phone => Some("[PHONE]"),
            PiiKind::CnId => Some("[CN_ID]"),
            PiiKind::BankCard => Some("[CARD]"),
            PiiKind::Email => Some("[EMAIL]"),
            PiiKind::Custom(_) => None,
        }
    }

    /// Overlap precedence: lower wins.
    fn rank(self) -> (u8, u8) {
        match self {
            PiiKind::Custom(_) => (0, 0),
            PiiKind::CnId => (1, 0),
            PiiKind::BankCard => (2, 0),
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
/// custom patterns (compiled regexes share their programs). All methods are
/// pure functions of the input text.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    custom: Vec<CustomPattern>,
}

impl Redactor {
    /// A redactor with the built-in detectors only.
    pub fn new() -> Self {
        Self { custom: Vec::new() }
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
    /// (`CN_MOBILE`, `CN_ID`, `CARD`, `EMAIL`, `PHONE`), when `regex` does not
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
        let builtin = [PiiKind::CnMobile, PiiKind::CnId, PiiKind::BankCard, PiiKind::Email, PiiKind::Phone];
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
        let mut spans = self.find_pass(text, &[]);
        if spans.is_empty() {
            return spans;
        }
        // Fixed point: rescan the redacted text until nothing new appears.
        // Terminates: every new span covers original bytes not covered before.
        loop {
            let (rendered, placed) = self.render(text, &spans);
            let protected: Vec<(usize, usize)> = placed.iter().map(|p| (p.t_start, p.t_end)).collect();
            let fresh = self.find_pass(&rendered, &protected);
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
    fn find_pass(&self, text: &str, protected: &[(usize, usize)]) -> Vec<PiiSpan> {
        let mut cands: Vec<PiiSpan> = Vec::new();
        for (i, p) in self.custom.iter().enumerate() {
            let kind = PiiKind::Custom(u16::try_from(i).unwrap_or(u16::MAX));
            for m in p.regex.find_iter(text) {
                if m.start() < m.end() {
                    cands.push(PiiSpan { start: m.start(), end: m.end(), kind });
                }
            }
        }
        digit_candidates(text, &mut cands);
        email_candidates(text, &mut cands);
        cands.retain(|c| !overlaps(protected, c.start, c.end));
        resolve(cands)
    }
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
        '-' | '\u{FF0D}' | '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' => Some(b'-'),
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
            _ => return None,
        })
    }

    fn class(self) -> JoinClass {
        match self {
            Joiner::Space => JoinClass::Space,
            Joiner::Dash | Joiner::SpacedDash => JoinClass::Dash,
            Joiner::Dot => JoinClass::Dot,
            Joiner::Close | Joiner::CloseSpace | Joiner::CloseDash | Joiner::SpaceOpen => JoinClass::Paren,
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
    chars: &'a [(usize, char)],
}

impl Scan<'_> {
    /// Whether the character before char index `ci` allows a span to start
    /// there. `uses_plus`: the span starts with its own `+`, so a `+` before
    /// `ci` is part of it.
    fn left_ok(&self, ci: usize, uses_plus: bool) -> bool {
        let Some(&(_, c)) = ci.checked_sub(1).and_then(|i| self.chars.get(i)) else {
            return true;
        };
        !is_word(c) && (uses_plus || norm_punct(c) != Some(b'+'))
    }

    /// Whether the character at char index `ci` allows a span to end there.
    fn right_ok(&self, ci: usize) -> bool {
        match self.chars.get(ci) {
            None => true,
            Some(&(_, c)) => !is_word(c) && c != '@',
        }
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
fn digit_candidates(text: &str, out: &mut Vec<PiiSpan>) {
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
    let scan = Scan { chars: &chars };
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
        chain_candidates(&scan, &groups[i..j], &joiners, out);
        i = j;
    }
}

/// Longest sub-chain considered, in runs.
const MAX_RUNS: usize = 6;
/// Longest sub-chain considered, in digits (19-digit cards).
const MAX_DIGITS: usize = 19;
/// Shortest sub-chain any detector accepts, in digits (`+` and 8 digits).
const MIN_DIGITS: usize = 8;

fn chain_candidates(scan: &Scan<'_>, groups: &[Group], joiners: &[Joiner], out: &mut Vec<PiiSpan>) {
    let n = groups.len();
    for i in 0..n {
        let mut total = 0;
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
            let mut push = |start: usize, kind: PiiKind| out.push(PiiSpan { start, end, kind });
            if let Some(s) = cn_id(scan, &cand) {
                push(s, PiiKind::CnId);
            }
            if cand.any_x() {
                continue;
            }
            if let Some(s) = card(scan, &cand) {
                push(s, PiiKind::BankCard);
            }
            if let Some(s) = cn_mobile(scan, &cand) {
                push(s, PiiKind::CnMobile);
            }
            if let Some(s) = plus_phone(scan, &cand) {
                push(s, PiiKind::Phone);
            }
            if let Some(s) = nanp_phone(scan, &cand) {
                push(s, PiiKind::Phone);
            }
            if let Some(s) = trunk_phone(scan, &cand) {
                push(s, PiiKind::Phone);
            }
        }
    }
}

/// Span start of an unprefixed candidate, if its left side allows one.
fn plain_start(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    scan.left_ok(c.first().ci_start, false).then_some(c.first().start)
}

/// Mainland-China resident ID: 18 chars, `[18]` or `[6, 8, 4]`, verified.
fn cn_id(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let lens = c.lens();
    if !matches!(lens.as_slice(), [18] | [6, 8, 4] | [6, 4, 4, 4])
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
    plain_start(scan, c)
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
    plain_start(scan, c)
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

/// 11-digit CN mobile body: `1[3-9]`, grouped `[11]`, `[3,4,4]` or `[3,8]`.
fn mobile_body(digits: &[u8], lens: &[usize], joiners: &[Joiner]) -> bool {
    digits.len() == 11
        && digits[0] == 1
        && (3..=9).contains(&digits[1])
        && matches!(lens, [11] | [3, 4, 4] | [3, 8])
        && uniform_space_or_dash(joiners)
}

fn cn_mobile(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let digits = c.digits();
    let lens = c.lens();
    let first = c.first();
    let prefixed = |code: &[u8]| -> Option<usize> {
        let start = match first.plus {
            Some(_) => plus_start(scan, c)?,
            None => plain_start(scan, c)?,
        };
        let body = &digits[code.len()..];
        if first.digits == code && c.groups.len() >= 2 {
            mobile_body(body, &lens[1..], &c.inner[1..]).then_some(())?;
        } else if c.groups.len() == 1 && first.digits.starts_with(code) {
            mobile_body(body, &[body.len()], &[]).then_some(())?;
        } else {
            return None;
        }
        Some(start)
    };
    if first.plus.is_some() {
        return if digits.starts_with(&[8, 6]) { prefixed(&[8, 6]) } else { None };
    }
    if digits.starts_with(&[0, 0, 8, 6]) {
        return prefixed(&[0, 0, 8, 6]);
    }
    if mobile_body(&digits, &lens, c.inner) {
        return plain_start(scan, c);
    }
    None
}

/// International notation: `+` and 8–15 digits in any grouping.
fn plus_phone(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    c.first().plus?;
    let total = c.total();
    if !(8..=15).contains(&total) || c.first().digits.first() == Some(&0) {
        return None;
    }
    if c.inner.contains(&Joiner::SpaceOpen) && !c.inner.iter().any(|j| j.closes()) {
        return None;
    }
    plus_start(scan, c)
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

/// North-American notation: `[3,3,4]`, optionally after a `1` run.
fn nanp_phone(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    if c.first().plus.is_some() {
        return None;
    }
    let lens = c.lens();
    let o = match lens.as_slice() {
        [3, 3, 4] => 0,
        [1, 3, 3, 4] if c.first().digits == [1] => 1,
        _ => return None,
    };
    let area = &c.groups[o];
    let exchange = &c.groups[o + 1];
    if area.digits[0] < 2 || exchange.digits[0] < 2 {
        return None;
    }
    let (j_area, j_exch) = (c.inner[o], c.inner[o + 1]);
    let paren = area.paren.is_some() && j_area.closes();
    let body_ok = if paren {
        matches!(j_exch, Joiner::Dash | Joiner::Space | Joiner::Dot)
    } else {
        j_area == j_exch && matches!(j_area, Joiner::Dash | Joiner::Space | Joiner::Dot)
    };
    if !body_ok {
        return None;
    }
    if o == 1 {
        let lead = c.inner[0];
        let lead_ok = match lead {
            Joiner::SpaceOpen => paren,
            Joiner::Space | Joiner::Dash | Joiner::Dot => true,
            _ => false,
        };
        return (lead_ok && scan.left_ok(c.first().ci_start, false)).then_some(c.first().start);
    }
    if paren {
        let p = area.paren?;
        return scan.left_ok(area.ci_start - 1, false).then_some(p);
    }
    plain_start(scan, c)
}

/// Trunk-prefixed national number: `0` + 2–3 digit area code, then 6–8
/// subscriber digits in one or two runs of at least 3.
fn trunk_phone(scan: &Scan<'_>, c: &Cand<'_>) -> Option<usize> {
    let area = c.first();
    if area.plus.is_some() || c.groups.len() < 2 || c.groups.len() > 3 {
        return None;
    }
    if !(3..=4).contains(&area.len()) || area.digits[0] != 0 || area.digits[1] == 0 {
        return None;
    }
    let rest = &c.groups[1..];
    let sub: usize = rest.iter().map(Group::len).sum();
    if !(6..=8).contains(&sub) || rest.iter().any(|g| g.len() < 3) {
        return None;
    }
    if !uniform_space_or_dash(&c.inner[1..]) {
        return None;
    }
    let j = c.inner[0];
    if area.paren.is_some() && j.closes() {
        let p = area.paren?;
        return scan.left_ok(area.ci_start - 1, false).then_some(p);
    }
    if !matches!(j, Joiner::Space | Joiner::Dash | Joiner::SpacedDash) {
        return None;
    }
    plain_start(scan, c)
}

// ---------------------------------------------------------------------------
// E-mail

fn is_local_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn is_domain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-')
}

/// `local@domain.tld` around every `@`: the longest ASCII local part before
/// it (leading dots dropped) and the longest run of domain labels after it
/// whose last label is 2–24 letters; rejected when a letter, digit or `_`
/// follows the address directly.
fn email_candidates(text: &str, out: &mut Vec<PiiSpan>) {
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices('@') {
        let mut start = at;
        while start > 0 && is_local_byte(bytes[start - 1]) {
            start -= 1;
        }
        while start < at && bytes[start] == b'.' {
            start += 1;
        }
        if start == at {
            continue;
        }
        let mut end = at + 1;
        while end < bytes.len() && is_domain_byte(bytes[end]) {
            end += 1;
        }
        let Some(domain_end) = valid_domain(&text[at + 1..end]) else {
            continue;
        };
        let end = at + 1 + domain_end;
        if bytes.get(end).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        out.push(PiiSpan { start, end, kind: PiiKind::Email });
    }
}

/// Length of the longest prefix of `d` that is a valid domain (two or more
/// labels of 1–63 letters, digits or inner hyphens; the last 2–24 letters).
fn valid_domain(d: &str) -> Option<usize> {
    let label_ok = |l: &str| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-');
    let tld_ok = |l: &str| (2..=24).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_alphabetic());
    // Labels up to the first malformed one; the longest such prefix whose
    // last label is a TLD wins. Linear in the length of `d`.
    let mut best = None;
    let mut len = 0;
    for (i, label) in d.split('.').enumerate() {
        if !label_ok(label) {
            break;
        }
        len += label.len() + usize::from(i > 0);
        if i >= 1 && tld_ok(label) {
            best = Some(len);
        }
    }
    best
}
