//! The signature of text outside CJK runs: Latin words, digits, signs.

use super::numbers::{canonical, clock, read_digits, Digits};
use super::FactSignature;
use crate::text::lexicon::{
    currency_sign, en_currency, en_function_word, en_marker, en_month, en_negation, en_number, en_person,
    en_pronoun_role, en_quantifier, en_quantity, en_relation, en_time_word, en_unit, en_weekday, NumberWord,
};

enum Tok {
    /// A word; `start` when it opens a sentence.
    Word {
        text: String,
        start: bool,
    },
    Num(Digits),
    /// A clock time with its sign: a time zone's offset (`+5:30`).
    Offset(&'static str, u32, u32),
    /// A decade (`1990s`), apart from its first year.
    Decade(f64),
    Sign(&'static str),
    /// Punctuation that ends a phrase.
    Break,
}

/// Whether the letters that end just before `chars[at]` are a time zone
/// whose offset follows (`UTC`, `GMT`), as a word of their own.
fn zone_before(chars: &[char], at: usize) -> bool {
    let start = chars[..at].iter().rposition(|c| !c.is_alphabetic()).map_or(0, |p| p + 1);
    let word: String = chars[start..at].iter().collect::<String>().to_lowercase();
    matches!(word.as_str(), "utc" | "gmt")
}

/// The sign written before the digits at `chars[i]`, if it is one: a
/// minus opening a number (`-5 degrees`, `−3`), a sign after a space or at
/// the start (`+05:30`), a time zone's offset (`UTC-5`, `UTC + 5`, `GMT
/// +03:00`), a `+` right after a number (`10:00+05:00`, never a range);
/// not a hyphen inside a date, range or code (`2026-05-03`, `3-5`,
/// `9:00-17:00`).
fn number_sign(chars: &[char], i: usize) -> Option<char> {
    // An en dash too, as a zone's offset is sometimes typeset (`GMT–3`).
    let is_sign = |c: char| matches!(c, '-' | '+' | '\u{2212}') || (c == '\u{2013}' && zone_before(chars, i - 1));
    let (p, spaced) = match i.checked_sub(1).map(|k| chars[k]) {
        Some(c) if is_sign(c) => (i - 1, false),
        Some(' ') if i >= 2 && is_sign(chars[i - 2]) => (i - 2, true),
        _ => return None,
    };
    let sign = if chars[p] == '+' { '+' } else { '-' };
    let before_space = if p >= 1 && chars[p - 1] == ' ' { p - 1 } else { p };
    if zone_before(chars, before_space) {
        return Some(sign);
    }
    if spaced || p == 0 {
        return (!spaced).then_some(sign);
    }
    let prev = chars[p - 1];
    if !(prev.is_alphanumeric() || matches!(prev, '-' | '+' | '.' | ',' | '/')) {
        Some(sign)
    } else {
        (sign == '+' && prev.is_ascii_digit()).then_some('+')
    }
}

fn tokenize(s: &str) -> Vec<Tok> {
    let s = s
        .replace(['\u{2019}', '\u{2018}'], "'")
        .replace("a.m.", "am")
        .replace("A.M.", "am")
        .replace("p.m.", "pm")
        .replace("P.M.", "pm");
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut at_start = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() {
            let mut j = i + 1;
            while j < chars.len()
                && (chars[j].is_alphabetic()
                    || (chars[j] == '\'' && j + 1 < chars.len() && chars[j + 1].is_alphabetic()))
            {
                j += 1;
            }
            out.push(Tok::Word { text: chars[i..j].iter().collect(), start: at_start });
            at_start = false;
            i = j;
        } else if c.is_ascii_digit() {
            // A number's sign: a negative value; a clock time's sign is an
            // offset (`UTC+5:30` / `UTC-5:30`), kept beside it.
            let (d, mut j) = read_digits(&chars, i);
            match (d, number_sign(&chars, i)) {
                (Digits::Value(v), Some('-')) => out.push(Tok::Num(Digits::Value(-v))),
                (Digits::Clock(h, m), Some(s)) => out.push(Tok::Offset(if s == '-' { "-" } else { "+" }, h, m)),
                (d, _) => out.push(Tok::Num(d)),
            }
            // Ordinal and plural suffixes: 10th, 3rd, 1950s.
            let word_end = |from: usize| {
                let mut k = from;
                while k < chars.len() && chars[k].is_alphabetic() {
                    k += 1;
                }
                k
            };
            let k = word_end(j);
            let suffix: String = chars[j..k].iter().collect::<String>().to_lowercase();
            if matches!(suffix.as_str(), "st" | "nd" | "rd" | "th" | "s") {
                j = k;
            }
            // A decade is not its first year ("born in the 1990s" / "in
            // 1990", "in her 30s" / "30").
            if let (true, Digits::Value(v)) = (suffix == "s", d) {
                if v % 10.0 == 0.0 && matches!(out.last(), Some(Tok::Num(_))) {
                    out.pop();
                    out.push(Tok::Decade(v));
                }
            }
            at_start = false;
            i = j;
        } else if let Some(sign) = currency_sign(c) {
            out.push(Tok::Sign(sign));
            i += 1;
        } else {
            match c {
                '.' | '!' | '?' => {
                    if chars.get(i + 1).is_none_or(|n| n.is_whitespace() || matches!(n, '"' | '\'' | ')')) {
                        at_start = true;
                    }
                    out.push(Tok::Break);
                }
                '\n' | '\r' => {
                    at_start = true;
                    out.push(Tok::Break);
                }
                '-' | '/' | '\'' => {}
                c if c.is_whitespace() => {}
                _ => out.push(Tok::Break),
            }
            i += 1;
        }
    }
    out
}

/// English number words being read (`two hundred and fifty`).
#[derive(Default)]
struct WordNumber {
    total: f64,
    current: f64,
    active: bool,
}

struct Reader<'a> {
    sig: &'a mut FactSignature,
    words: WordNumber,
    /// The last number, kept open for `am`/`pm`, `o'clock` and scale words.
    pending: Option<Digits>,
    /// The previous token counts something, so a unit after it is a quantity.
    counted: bool,
}

impl Reader<'_> {
    fn flush_words(&mut self) {
        if self.words.active {
            let v = self.words.total + self.words.current;
            self.flush_pending();
            self.pending = Some(Digits::Value(v));
            self.words = WordNumber::default();
        }
    }

    fn flush_pending(&mut self) {
        match self.pending.take() {
            Some(Digits::Value(v)) if v.is_finite() => {
                self.sig.numbers.insert(canonical(v));
            }
            Some(Digits::Clock(h, m)) => {
                self.sig.numbers.insert(clock(h, m));
            }
            _ => {}
        }
    }

    fn flush(&mut self) {
        self.flush_words();
        self.flush_pending();
    }

    fn number_word(&mut self, n: NumberWord) {
        let w = &mut self.words;
        match n {
            NumberWord::Unit(u) => {
                let joins = w.active
                    && ((u < 10.0 && w.current >= 20.0 && w.current < 100.0 && w.current % 10.0 == 0.0)
                        || (w.current >= 100.0 && w.current % 100.0 == 0.0 && u < 100.0)
                        || (w.current == 0.0 && w.total > 0.0));
                if !joins && w.active {
                    self.flush_words();
                }
                let w = &mut self.words;
                w.current += u;
                w.active = true;
            }
            NumberWord::Scale(s) => {
                if !w.active {
                    w.current = s;
                } else if s >= 1_000.0 {
                    w.total += w.current.max(1.0) * s;
                    w.current = 0.0;
                } else {
                    w.current = w.current.max(1.0) * s;
                }
                w.active = true;
            }
        }
        self.counted = true;
    }

    /// `am`/`pm`/`o'clock`/scale words that modify the number before them.
    fn modifies_pending(&mut self, lw: &str) -> bool {
        let scale = matches!(lw, "thousand" | "million" | "billion" | "k");
        if !(scale || matches!(lw, "am" | "pm" | "o'clock")) || (scale && self.words.active) {
            return false;
        }
        self.flush_words();
        let Some(p) = self.pending else {
            return false;
        };
        let hour = |v: f64| (v.fract() == 0.0 && (0.0..=24.0).contains(&v)).then_some(v as u32);
        let next = match (lw, p) {
            ("am" | "pm", Digits::Value(v)) => hour(v).filter(|h| (1..=12).contains(h)).map(|h| (h, 0)),
            ("am" | "pm", Digits::Clock(h, m)) => (h <= 12).then_some((h, m)),
            ("o'clock", Digits::Value(v)) => return self.set_pending(hour(v).map(|h| Digits::Clock(h, 0))),
            ("thousand" | "k", Digits::Value(v)) => return self.set_pending(Some(Digits::Value(v * 1_000.0))),
            ("million", Digits::Value(v)) => return self.set_pending(Some(Digits::Value(v * 1_000_000.0))),
            ("billion", Digits::Value(v)) => return self.set_pending(Some(Digits::Value(v * 1_000_000_000.0))),
            _ => return false,
        };
        let Some((h, m)) = next else {
            return false;
        };
        let h = match (lw, h) {
            ("pm", h) if h < 12 => h + 12,
            ("am", 12) => 0,
            (_, h) => h,
        };
        self.pending = Some(Digits::Clock(h, m));
        true
    }

    fn set_pending(&mut self, d: Option<Digits>) -> bool {
        match d {
            Some(d) => {
                self.pending = Some(d);
                true
            }
            None => false,
        }
    }

    fn word(&mut self, text: &str, start: bool) {
        let lower = text.to_lowercase();
        if lower == "o'clock" && self.modifies_pending("o'clock") {
            return;
        }
        if lower.ends_with("n't") {
            // "won't" / "can't" / "don't": a negation, and the auxiliary's
            // tense or modality.
            self.flush();
            if let Some(m) = en_marker(&lower[..lower.len() - 3]) {
                self.sig.markers.push(m.into());
            }
            self.sig.negations.push("not".into());
            self.counted = false;
            return;
        }
        // Possessive and contraction suffixes: Max's, I'm, we've.
        let base = text.split('\'').next().unwrap_or(text);
        let lw = base.to_lowercase();
        if self.modifies_pending(&lw) {
            return;
        }
        if let Some(n) = en_number(&lw) {
            self.number_word(n);
            return;
        }
        if lw == "and" && self.words.active {
            return;
        }
        self.flush();
        let mut chars = base.chars();
        let capitalised = chars.next().is_some_and(char::is_uppercase);
        let inner_upper = chars.any(char::is_uppercase);
        let all_caps = base.chars().count() >= 2 && !base.chars().any(char::is_lowercase);
        let counted = std::mem::replace(&mut self.counted, false);
        // Tense, modality, aspect and comparison words, and relations, in
        // lower case or opening a sentence ("Will" inside one is a name).
        if !capitalised || start || all_caps {
            if let Some(m) = en_marker(&lw) {
                self.sig.markers.push(m.into());
            } else if let Some(r) = en_relation(&lw) {
                self.sig.relations.push(r.into());
            } else if let Some(q) = en_quantity(&lw) {
                self.sig.quantities.push(q.into());
            }
        }
        // "I" is written capitalised anywhere.
        if let Some(r) = en_pronoun_role(&lw) {
            self.sig.names.insert(r.into());
        }
        // A contraction's tail: I'll, she'd.
        if let Some(m) = text.split_once('\'').and_then(|(_, tail)| en_marker(&tail.to_lowercase())) {
            self.sig.markers.push(m.into());
        }
        if let Some(n) = en_negation(&lw) {
            self.sig.negations.push(n.into());
        } else if let Some(t) = en_time_word(&lw) {
            self.sig.numbers.insert(t.into());
            self.counted = en_quantifier(&lw);
        } else if let Some(d) = en_weekday(&lw).filter(|_| capitalised || lw.len() > 4) {
            self.sig.numbers.insert(d.into());
        } else if let Some(m) = en_month(&lw, capitalised) {
            self.sig.numbers.insert(m.into());
        } else if let Some(u) = en_unit(&lw).filter(|_| counted) {
            self.sig.numbers.insert(u.into());
        } else if let Some(c) = en_currency(&lw) {
            self.sig.numbers.insert(c.into());
        } else if let Some(p) = en_person(&lw) {
            self.sig.names.insert(p.into());
        } else if all_caps || inner_upper {
            self.sig.names.insert(lw);
        } else if capitalised {
            if !start {
                self.sig.names.insert(lw);
            } else if !en_function_word(&lw) {
                self.sig.initial.insert(lw);
            }
        } else {
            self.counted = en_quantifier(&lw);
            self.sig.lower_words.insert(lw);
        }
    }
}

/// Adds the facts of `s` to `sig`. In CJK-dominant text (`cjk_text`) every
/// Latin word is a name.
pub(super) fn extract(s: &str, cjk_text: bool, sig: &mut FactSignature) {
    let mut r = Reader { sig, words: WordNumber::default(), pending: None, counted: false };
    for tok in tokenize(s) {
        match tok {
            Tok::Num(d) => {
                r.flush();
                r.pending = Some(d);
                r.counted = true;
            }
            Tok::Sign(s) => {
                r.flush();
                r.sig.numbers.insert(s.into());
            }
            Tok::Offset(s, h, m) => {
                r.flush();
                r.sig.numbers.insert(format!("{s}{}", clock(h, m)));
                r.counted = true;
            }
            Tok::Decade(v) => {
                r.flush();
                r.sig.numbers.insert(format!("{}s", canonical(v)));
                r.counted = true;
            }
            Tok::Break => {
                r.flush();
                r.counted = false;
            }
            Tok::Word { text, .. } if cjk_text => {
                r.flush();
                let base = text.split('\'').next().unwrap_or(&text).to_lowercase();
                r.sig.names.insert(base);
            }
            Tok::Word { text, start } => r.word(&text, start),
        }
    }
    r.flush();
}
