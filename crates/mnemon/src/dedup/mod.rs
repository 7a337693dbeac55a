//! Fact signatures: whether two texts state the same facts.
//!
//! Embedding similarity alone cannot tell a restatement ("My yoga class on
//! Tuesdays is at 6:30 pm" / "Every Tuesday my yoga class is at 6:30 pm")
//! from a changed fact ("… at 7:30 pm"): the cosine of a one-number change
//! is as high as a paraphrase's under every embedder we ship (multilingual-e5
//! puts both above 0.95). A [`FactSignature`] collects, independently of any
//! embedder, the parts of a text whose change makes it a different fact:
//!
//! * **numbers** ([`FactKind::Number`]): digits in any writing (full-width
//!   digits fold under Unicode NFKC), thousands separators, decimals,
//!   clock times (`9:30`, `6:30 pm` = `18:30`, `2 PM` = `14:00`, `九点半`
//!   = `9:30`), ordinals (`3rd`, `third`, `第三`), English number words
//!   (`twenty-five`, `two hundred`), Chinese numerals (`一二三…十百千万亿两`,
//!   `一千二` = 1200), currency signs and words (`$`, `dollars`), and time
//!   words (`tomorrow`, `next`, `weekend`, weekday and month names, time
//!   units after a count or `every`/`last`/…), a minus sign opening a
//!   number or a time zone's offset (`-5`, 气温-5度, `UTC-5`, `UTC+5:30`,
//!   `10:00+05:00`), a decade (`1990s`, apart from `1990`);
//! * **names** ([`FactKind::Name`]): capitalised, CamelCase and ALL-CAPS
//!   Latin tokens (a capitalised sentence-initial word counts unless it is a
//!   function word, or the same word appears in lower case in either text),
//!   every Latin token inside CJK text, the person a text is about
//!   (pronouns by person, kinship and role words), and, since CJK writing has
//!   no capitals to mark a name, every CJK character that is not a function
//!   character (particles, classifiers after a numeral, degree adverbs);
//! * **content words** (also [`FactKind::Name`]): the lower-case Latin
//!   words (stemmed, stop, function, quantifier and intensifier words
//!   aside), as sets: one in place of another ("allergic to peanuts" /
//!   "allergic to shellfish"), or only added or dropped ("peanuts and
//!   shellfish" / "peanuts") — the shorter text does not hold the longer
//!   one's fact, so superseding by it would lose one;
//! * **negations** ([`FactKind::Negation`]): `not`/`n't`, `no`, `never`,
//!   `without`, …; `不`, `没`/`没有`, `别`, `未`, `无`, `非`, `勿`, `不要`, …
//!   (compounds that do not negate, such as `非常` or `不错`, excepted);
//! * **qualifiers** ([`FactKind::Qualifier`]): tense, modality, plans,
//!   frequency, comparison, hedge and bound words (`was`, `used` to,
//!   `will`, `'ll`, `can`, `going` to, `always`, `more` / `less`, `than`,
//!   `only`, `maybe`, `former`, `before`, `until`, `under`; `会`, `要`,
//!   `将`, `过`, `了`, `着`, `正在`, `更`, `最`, `把`, `被`, `能`, `可`,
//!   `都`, `有些`, `如果`, `不太`, "about to", and the progressive: a form of
//!   "be" before an `-ing` word, "I'm quitting" / "I quit") as a multiset,
//!   and the same verb in `-ed` on one side only ("I live" / "I lived");
//!   **relations** (also [`FactKind::Qualifier`]): a preposition, coverb or
//!   conjunction in place of another ("to" / "from Tokyo", "in" / "on",
//!   "and" / "or", "when" / "unless", `从` / `到`, `才` / `就`) — one only
//!   added or dropped is rewording; **quantifiers**: `all`, `some`,
//!   `many`, `few`, `any`, `both`, `either`, `other`, and an amount with
//!   `much`, `a lot` or `lots` ("don't drink much coffee", "don't eat a lot
//!   of meat"; "very much", "a lot" and "lots" only under a negation)
//!   added, dropped or swapped, while
//!   `every` / `each` count only in place of another ("every Tuesday" / "on
//!   Tuesdays" restate);
//! * **roles** (also [`FactKind::Name`]): a personal pronoun's case ("I
//!   owe him" / "He owes me": the same persons, other roles);
//! * **word order** (also [`FactKind::Name`]): the words both texts hold
//!   in another order ("tea over coffee" / "coffee over tea", 他欠我 /
//!   我欠他, "Anna is three years older than Tom" / "Tom is 3 years older
//!   than Anna"; fillers and modal particles aside; quantifiers other
//!   than `every` kept, "all tree nuts and some seeds"), unless one phrase
//!   moved without changing who does what (a role word such as 比, 把, 给,
//!   "than" keeps its neighbours; not two values trading places, as the
//!   ends of "9am-5pm"; not two runs of Chinese content characters, as in
//!   巧克力牛奶 / 牛奶巧克力) or the two sides of one "is" traded places.
//!
//! Two texts have the same facts when all of these agree. Words that only
//! stress a claim that holds either way (`really`, `still`, `already`,
//! 已经, 还, 非常) are no difference. The rule is deliberately one-sided: a false
//! "different" only stores a restatement as its own memory (and recall
//! collapses the pair), while a false "same" would let a changed fact
//! replace the old one. So anything unknown counts as a fact: an unlisted
//! capitalised word is a name, a CJK character outside the function list is
//! a name.
//!
//! The engine uses this twice: a new memory whose cosine to an active one is
//! at or above the embedder's near-duplicate threshold is a restatement only
//! when [`differing_facts`] finds nothing (see [`is_restatement`]); recall
//! shows one hit of each restatement pair. The labelled pairs in
//! `tests/fixtures/dedup_pairs.json` measure both errors (`cargo bench
//! --bench dedup`).
//!
//! ```
//! use mnemon::dedup::{differing_facts, FactKind};
//!
//! let a = "The team standup meeting starts at 9:30 every weekday morning";
//! let b = "The team standup meeting starts at 10:30 every weekday morning";
//! assert_eq!(differing_facts(a, b).map(|d| d.kind), Some(FactKind::Number));
//! assert_eq!(differing_facts("I have two cats.", "I have 2 cats!"), None);
//! assert_eq!(differing_facts("I quit smoking", "I will quit smoking").map(|d| d.kind), Some(FactKind::Qualifier));
//! assert_eq!(differing_facts("我不吃香菜", "我吃香菜").map(|d| d.kind), Some(FactKind::Negation));
//! ```

mod cjk;
mod latin;
mod numbers;

use crate::text::lexicon;
pub(crate) use numbers::{zh_numeral, zh_value};
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use unicode_normalization::UnicodeNormalization;

/// Words that change no fact when one stands in another's place ("each" /
/// "every", "really" / "very much"), left out of the substituted-word rule.
const QUANTIFIERS_AND_INTENSIFIERS: &[&str] = &[
    "each",
    "every",
    "all",
    "some",
    "any",
    "really",
    "very",
    "much",
    "quite",
    "truly",
    "absolutely",
    "definitely",
    "totally",
    "pretty",
    "rather",
    "so",
    "too",
    "just",
    "also",
    "actually",
    "indeed",
    "certainly",
    "surely",
    "literally",
    "seriously",
    "honestly",
    // "a lot", "lots": degree, as "very much" is.
    "lot",
    "lots",
    // Stress on a claim that holds either way ("I have already finished" /
    // "I have finished", "I still live here").
    "already",
    "still",
    "again",
    "yet",
    "ever",
];

/// Which kind of fact two texts disagree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// A number, time, date, amount, unit or time word.
    Number,
    /// A proper name or entity: a capitalised Latin token, a Latin token in
    /// CJK text, a person word (pronoun, kin or role), a CJK content
    /// character.
    Name,
    /// A negation added or removed.
    Negation,
    /// A word that qualifies the claim or relates its parts: tense
    /// (`was`, `used` to, `-ed`), modality (`will`, `can`), an end
    /// (`anymore`), frequency, comparison (`more` / `less`), a hedge, a
    /// bound (`before`, `until`, `under`), who acts on whom (`把`, `被`), or
    /// one preposition, conjunction or quantifier in another's place (`to`
    /// / `from`, `and` / `or`, `all` / `some`).
    Qualifier,
}

/// How two texts differ in their facts (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FactDifference {
    /// The first kind, in the order number, name, negation, qualifier, that
    /// differs.
    pub kind: FactKind,
    /// Normalised tokens of that kind found only in the first text (for
    /// negations: the surplus of the first text's multiset).
    pub only_in_first: Vec<String>,
    /// Normalised tokens of that kind found only in the second text.
    pub only_in_second: Vec<String>,
}

/// The facts of one text: its numbers, names, content words, negations,
/// qualifiers, relations and word order, normalised.
///
/// Built by [`FactSignature::of`]; compared by [`FactSignature::differs`].
/// Tokens are lower case after Unicode NFKC; numbers are canonical
/// (`"1200"`, `"3.5"`, `"18:30"`); time and currency words are canonical
/// (`"$"`, `"tuesday"`, `"week"`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FactSignature {
    numbers: BTreeSet<String>,
    names: BTreeSet<String>,
    /// Capitalised sentence-initial words that are not function words: names
    /// unless the word also occurs in lower case in either text.
    initial: BTreeSet<String>,
    /// Latin words seen in lower case (to resolve `initial`).
    lower_words: BTreeSet<String>,
    /// Canonical negation markers, sorted (a multiset).
    negations: Vec<String>,
    /// Tense, modality, aspect, frequency, comparison and hedge words,
    /// canonical, sorted (a multiset; `lexicon::en_marker`, `zh_marker`).
    markers: Vec<String>,
    /// Prepositions, coverbs and conjunctions, canonical, sorted (a
    /// multiset; `lexicon::en_relation`, `zh_relation`).
    relations: Vec<String>,
    /// Quantifiers, canonical, sorted (a multiset; `lexicon::en_quantity`,
    /// and `much` for each amount `amounts` finds).
    quantities: Vec<String>,
    /// Every word in text order (Latin and digit runs lower-cased, each CJK
    /// character on its own), articles, intensifiers and punctuation left
    /// out: the same words in another order state another fact ("prefers
    /// tea over coffee" / "coffee over tea", 他欠我 / 我欠他).
    sequence: Vec<String>,
}

impl FactSignature {
    /// Extracts the signature of `text` (any length; empty text gives an
    /// empty signature). Reads a JSON object or array by its values
    /// ([`crate::text::searchable`]), then applies Unicode NFKC.
    pub fn of(text: &str) -> FactSignature {
        let text: String = crate::text::searchable(text).nfkc().collect();
        let mut sig = FactSignature::default();
        let cjk_chars = text.chars().filter(|c| cjk::is_cjk_char(*c)).count();
        let latin_words =
            text.split(|c: char| !c.is_alphabetic() || cjk::is_cjk_char(c)).filter(|w| !w.is_empty()).count();
        // In CJK-dominant text every Latin token is a name (there is no
        // sentence case to read).
        let cjk_text = cjk_chars > 0 && cjk_chars >= latin_words;
        for seg in segments(&text) {
            match seg {
                Segment::Cjk(s) => cjk::extract(s, &mut sig),
                Segment::Other(s) => latin::extract(s, cjk_text, &mut sig),
            }
        }
        sig.sequence = word_sequence(&text);
        // "about to": a plan, not a deed ("I am about to quit" / "I quit").
        let about_to = sig.sequence.windows(2).filter(|w| w[0] == "about" && w[1] == "to").count();
        sig.markers.extend(std::iter::repeat_n("about to".to_string(), about_to));
        // The progressive: a form of "be" before an `-ing` verb ("I'm
        // quitting my job" / "I quit my job").
        let words = lower_words(&text);
        sig.markers.extend(std::iter::repeat_n("be -ing".to_string(), progressives(&words)));
        // An amount ("I don't drink much coffee" / "I don't drink coffee",
        // "a lot of meat"); "very much" and "thanks so much" are degree.
        let negated = !sig.negations.is_empty();
        sig.quantities.extend(std::iter::repeat_n("much".to_string(), amounts(&words, negated)));
        sig.negations.sort_unstable();
        sig.markers.sort_unstable();
        sig.relations.sort_unstable();
        sig.quantities.sort_unstable();
        sig
    }

    /// The numbers, times, amounts and time words, normalised.
    pub fn numbers(&self) -> impl Iterator<Item = &str> {
        self.numbers.iter().map(String::as_str)
    }

    /// The names and entities certainly present (sentence-initial words that
    /// may be names are resolved only against another text, in
    /// [`FactSignature::differs`]).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// The negation markers, canonical and sorted, with repeats.
    pub fn negations(&self) -> &[String] {
        &self.negations
    }

    /// Whether `self` and `other` state different facts, and which kind
    /// differs first (number, then name and content word, then negation,
    /// then qualifier, then word order). `None`: the same facts, so the
    /// texts may be restatements of each other. Symmetric: `a.differs(b)`
    /// is `Some` exactly when `b.differs(a)` is.
    pub fn differs(&self, other: &FactSignature) -> Option<FactDifference> {
        if let Some(d) = set_difference(FactKind::Number, &self.numbers, &other.numbers) {
            return Some(d);
        }
        let (na, nb) = (self.resolved_names(other), other.resolved_names(self));
        if let Some(d) = set_difference(FactKind::Name, &na, &nb) {
            return Some(d);
        }
        // A content word in one text only: another thing in its place
        // ("allergic to peanuts" / "allergic to shellfish"), or one added or
        // dropped ("peanuts and shellfish" / "peanuts", "I smoke" / "I
        // stopped smoking"), as a differing CJK content character is.
        if let Some(d) = set_difference(FactKind::Name, &self.content_words(other), &other.content_words(self)) {
            return Some(d);
        }
        if self.negations != other.negations {
            let (a, b) = multiset_surplus(&self.negations, &other.negations);
            return Some(FactDifference { kind: FactKind::Negation, only_in_first: a, only_in_second: b });
        }
        // Tense, modality, aspect, comparison: any word added, dropped or
        // changed ("I quit" / "I will quit", "more" / "less sugar").
        if self.markers != other.markers {
            let (a, b) = multiset_surplus(&self.markers, &other.markers);
            return Some(FactDifference { kind: FactKind::Qualifier, only_in_first: a, only_in_second: b });
        }
        // A relation in another's place ("before" / "after lunch"); one only
        // added or dropped is rewording.
        for (a, b, quantities) in
            [(&self.relations, &other.relations, false), (&self.quantities, &other.quantities, true)]
        {
            let (ra, rb) = multiset_surplus(a, b);
            // A quantifier other than `every` only added or dropped is a
            // difference too ("some of my colleagues" / "my colleagues").
            let bare = |v: &[String]| v.iter().any(|q| q != "every");
            if (!ra.is_empty() && !rb.is_empty()) || (quantities && (bare(&ra) || bare(&rb))) {
                return Some(FactDifference { kind: FactKind::Qualifier, only_in_first: ra, only_in_second: rb });
            }
        }
        // The same verb in the past on one side only ("I live in Berlin" /
        // "I lived in Berlin").
        if let Some(d) = set_difference(FactKind::Qualifier, &self.past_stems(other), &other.past_stems(self)) {
            return Some(d);
        }
        // The same words in another order: who did what to whom, from where
        // to where, which over which; reported as names, in each text's
        // order. Compared over the words both texts hold, so a word on one
        // side only ("three" / "3", "钱") does not hide a swap of the rest;
        // when either text has words the other lacks, only the order of the
        // parts that can fill a role (names, persons, numbers, CJK
        // characters) counts, since a paraphrase rewords and reorders the
        // rest freely.
        if self.sequence != other.sequence {
            let (a, b) = shared_words(&self.sequence, &other.sequence);
            let filler = |w: &&String| {
                self.names.contains(*w)
                    || other.names.contains(*w)
                    || lexicon::en_person(w).is_some()
                    || lexicon::en_quantity(w).is_some()
                    || w.chars().any(|c| c.is_ascii_digit() || cjk::is_cjk_char(c))
            };
            // A CJK content character of both texts that names no person.
            let plain_cjk = |w: &str| {
                w.chars().all(|c| cjk::is_cjk_char(c) && !ZH_PERSONS.contains(&c) && !ZH_TIME_CHARS.contains(&c))
                    && self.names.contains(w)
                    && other.names.contains(w)
            };
            // The same words all round: any change of order counts. Words on
            // one side only: the role fillers' order must change.
            let same_words = a.len() == self.sequence.len() && b.len() == other.sequence.len();
            let roles_moved = same_words || a.iter().filter(filler).ne(b.iter().filter(filler));
            if a != b && roles_moved && !copula_swap(&a, &b) && !phrase_moved(&a, &b, &plain_cjk) {
                return Some(FactDifference {
                    kind: FactKind::Name,
                    only_in_first: vec![a.join(" ")],
                    only_in_second: vec![b.join(" ")],
                });
            }
        }
        None
    }

    /// The lower-case Latin words that are no number, time, unit, person,
    /// negation, function, quantifier or intensifier word, stemmed (Porter2, as the lexical index does, so
    /// "peanut" and "peanuts" are one word), stop words left out.
    fn content_words(&self, other: &FactSignature) -> BTreeSet<String> {
        self.plain_words(other)
            .filter(|w| is_content_word(w))
            .flat_map(|w| crate::text::tokenize(w))
            .filter(|t| !crate::text::is_stop_word(t))
            .collect()
    }

    /// The stems of the content words written in `-ed` ("lived", "moved").
    fn past_stems(&self, other: &FactSignature) -> BTreeSet<String> {
        self.plain_words(other)
            .filter(|w| w.len() > 4 && w.ends_with("ed") && is_content_word(w))
            .flat_map(|w| crate::text::tokenize(w))
            .filter(|t| !crate::text::is_stop_word(t))
            .collect()
    }

    /// The lower-case words, and the sentence-initial words that are not
    /// names ("Dairy upsets me" / "… because dairy upsets me").
    fn plain_words<'a>(&'a self, other: &'a FactSignature) -> impl Iterator<Item = &'a String> {
        let plain = |w: &&String| self.lower_words.contains(*w) || other.lower_words.contains(*w);
        self.lower_words.iter().chain(self.initial.iter().filter(plain))
    }

    /// Names, plus the sentence-initial candidates that are not ordinary
    /// lower-case words of either text.
    fn resolved_names(&self, other: &FactSignature) -> BTreeSet<String> {
        let mut out = self.names.clone();
        for w in &self.initial {
            if !self.lower_words.contains(w) && !other.lower_words.contains(w) {
                out.insert(w.clone());
            }
        }
        out
    }
}

/// Whether `w` is a content word: no function, quantifier, intensifier,
/// qualifier or relation word.
fn is_content_word(w: &str) -> bool {
    !lexicon::en_function_word(w)
        && !QUANTIFIERS_AND_INTENSIFIERS.contains(&w)
        && lexicon::en_marker(w).is_none()
        && lexicon::en_relation(w).is_none()
}

/// Words left out of [`FactSignature`]'s word order: articles, which move
/// with rewording without changing a fact.
const ORDER_NEUTRAL: &[&str] = &["a", "an", "the"];

/// Copulas whose two sides can trade places without changing the fact
/// (`am` / `are` read as `is`, `were` as `was` in the word order).
const COPULAS: &[&str] = &["is", "am", "are", "was", "were", "是"];

/// Whether `b` is `a` with the two sides of its one copula swapped ("Biscuit
/// is our dog" / "our dog is Biscuit"): an identity reads both ways.
fn copula_swap(a: &[String], b: &[String]) -> bool {
    let at = |s: &[String]| {
        let mut found = s.iter().enumerate().filter(|(_, w)| COPULAS.contains(&w.as_str()));
        match (found.next(), found.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    let (Some(i), Some(j)) = (at(a), at(b)) else {
        return false;
    };
    a[i] == b[j] && a[..i] == b[j + 1..] && a[i + 1..] == b[..j]
}

/// Whether `b` is `a` with one phrase moved past another, at least one of
/// them two words or more ("The standup starts at 10:30 every weekday
/// morning" / "Every weekday morning, the standup starts at 10:30"; "My
/// sister Lena" / "Lena, my sister"): after their common start and end,
/// `a`'s middle is `Y Z` and `b`'s is `Z Y`. Two single words trading
/// places (`05-03` / `03-05`), or trading places around a word that stays
/// ("from 9 to 5" / "from 5 to 9", "tea over coffee" / "coffee over tea"),
/// are not a moved phrase, nor is a move that gives a role word other
/// neighbours (我比我哥哥高 / 我哥哥比我高: who is taller), nor two values
/// with no relation word trading places (the ends of a range, "9am-5pm" /
/// "5pm-9am"), nor two runs of CJK content characters (`plain_cjk`) trading
/// places inside a compound (巧克力牛奶 / 牛奶巧克力). Quantifiers are set
/// aside first: one moving alone is rewording ("All my friends" / "My
/// friends all"), two trading places is not ("all tree nuts and some
/// seeds" / "some tree nuts and all seeds"). Symmetric in `a` and `b`.
fn phrase_moved(a: &[String], b: &[String], plain_cjk: &dyn Fn(&str) -> bool) -> bool {
    let quantifier = |w: &&String| lexicon::en_quantity(w).is_some();
    let (qa, qb): (Vec<&String>, Vec<&String>) =
        (a.iter().filter(quantifier).collect(), b.iter().filter(quantifier).collect());
    if qa != qb {
        return false;
    }
    let (a, b): (Vec<String>, Vec<String>) = (
        a.iter().filter(|w| !quantifier(w)).cloned().collect(),
        b.iter().filter(|w| !quantifier(w)).cloned().collect(),
    );
    if a == b {
        return true;
    }
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..].iter().rev().zip(b[pre..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let n = ma.len();
    let value = |p: &[String]| {
        p.iter().any(|w| w.bytes().any(|c| c.is_ascii_digit()))
            && !p.iter().any(|w| lexicon::en_relation(w).is_some() || lexicon::zh_relation(w).is_some())
    };
    let compound = |p: &[String]| p.iter().all(|w| plain_cjk(w));
    // Every split of the middle into `Y Z` that `b` holds as `Z Y`; the
    // same splits, mirrored, from `b`'s side.
    let splits: Vec<usize> =
        (1..n).filter(|&k| n >= 3 && n == mb.len() && ma[k..] == mb[..n - k] && ma[..k] == mb[n - k..]).collect();
    if splits.is_empty() {
        return false;
    }
    let swap_of_parts = |k: usize| {
        let (y, z) = (&ma[..k], &ma[k..]);
        (value(y) && value(z)) || (compound(y) && compound(z))
    };
    if splits.iter().any(|&k| swap_of_parts(k)) {
        return false;
    }
    ROLE_WORDS.iter().all(|r| neighbours(&a, r) == neighbours(&b, r))
}

/// Chinese time characters: a block holding one is a time phrase that
/// moves freely (明天小王去北京 / 小王明天去北京), never a compound's part.
const ZH_TIME_CHARS: &[char] =
    &['今', '明', '昨', '天', '年', '月', '日', '周', '早', '晚', '午', '末', '点', '时', '夜', '晨', '前', '后'];

/// Chinese person characters (pronouns): a move of one of these is a
/// rewording of who is talked about first (明天我去 / 我明天去), never a
/// compound's part.
const ZH_PERSONS: &[char] = &['我', '你', '您', '他', '她', '它', '们', '咱', '俺'];

/// How many times `words` (of [`lower_words`]) put a form of "be" before an `-ing` word ("I'm
/// quitting", "she is leaving", "we were moving").
///
/// Up to two adverbs or `not` may stand between ("I'm finally quitting",
/// "she isn't leaving"); any word in `'s` counts as "is" ("Anna's
/// leaving": a possessive before an `-ing` noun is read the same, which
/// only keeps two texts apart).
fn progressives(words: &[String]) -> usize {
    let be = |w: &str| {
        matches!(w, "am" | "is" | "are" | "was" | "were" | "be" | "been" | "isn't" | "aren't" | "wasn't" | "weren't")
            || w.ends_with("'m")
            || w.ends_with("'re")
            || w.ends_with("'s")
    };
    let between = |w: &str| {
        w.ends_with("ly")
            || matches!(w, "not" | "never" | "still" | "always" | "also" | "just" | "already" | "even" | "now" | "soon")
    };
    let verb = |w: &str| w.len() >= 5 && w.ends_with("ing") && !NOT_VERBS_IN_ING.contains(&w);
    (0..words.len())
        .filter(|&i| be(&words[i]))
        .filter(|&i| {
            let rest = &words[i + 1..];
            let skip = rest.iter().take(2).take_while(|w| between(w.as_str())).count();
            rest.get(skip).is_some_and(|w| verb(w.as_str()))
        })
        .count()
}

/// The words of `text` in order, lower-cased, apostrophes kept inside a
/// word (`i'm`, `don't`): what [`progressives`] and [`amounts`] read.
fn lower_words(text: &str) -> Vec<String> {
    text.replace(['\u{2019}', '\u{2018}'], "'")
        .to_lowercase()
        .split(|c: char| !(c.is_alphabetic() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// How many times `words` (of [`lower_words`]) state an amount with `much`, `a lot` or `lots`
/// ("I don't drink much coffee", "too much beer", "a lot of meat"): a
/// negated sentence without it says the opposite. `thank you so much` and,
/// outside a negation, `very much`, `a lot` and `lots` are degree, not
/// amount ("likes green tea a lot" / "really likes green tea").
fn amounts(words: &[String], negated: bool) -> usize {
    let at = |i: usize| words.get(i).map_or("", String::as_str);
    let thanks = |i: usize| matches!(at(i), "thank" | "thanks" | "you");
    // "I don't like it very much", "I don't eat a lot of meat": under a
    // negation, even "very much" and "a lot" are an amount; elsewhere
    // they are degree ("likes green tea a lot"). `negated`: the text holds
    // a negation (its signature's).
    (0..words.len())
        .filter(|&i| match words[i].as_str() {
            "lot" | "lots" => negated,
            "much" => {
                let prev = i.checked_sub(1).map_or("", at);
                !((prev == "very" && !negated) || (matches!(prev, "so" | "very") && i >= 2 && thanks(i - 2)))
            }
            _ => false,
        })
        .count()
}

/// Words in `-ing` that are no verb form after "is" ("the best thing is",
/// "it is morning").
const NOT_VERBS_IN_ING: &[&str] =
    &["thing", "nothing", "something", "anything", "everything", "morning", "evening", "during", "spring", "string"];

/// Words whose neighbours say who does what to whom: a comparison's two
/// sides (比, than), the doer and the one acted on (把, 被, 让), the giver
/// and the receiver (给, 欠, 借, 向, 对).
const ROLE_WORDS: &[&str] = &["比", "把", "被", "让", "给", "欠", "借", "向", "对", "than"];

/// The words before and after each occurrence of `w` in `s`.
fn neighbours<'a>(s: &'a [String], w: &str) -> Vec<(Option<&'a String>, Option<&'a String>)> {
    (0..s.len()).filter(|&i| s[i] == w).map(|i| (i.checked_sub(1).map(|p| &s[p]), s.get(i + 1))).collect()
}

/// The words of `text` in order: runs of Latin letters or digits
/// lower-cased, content words stemmed, each CJK character alone, a minus
/// sign kept on its number (`-5`); articles, intensifiers, `every` /
/// `each`, fillers and modal particles left out (other quantifiers stay).
fn word_sequence(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = std::mem::take(word);
            // Quantifiers stay, as they say which part the rest is about
            // ("all tree nuts and some seeds"), except the time-rewording
            // `every` / `each`.
            let quantity = lexicon::en_quantity(&w).is_some_and(|q| q != "every");
            if ORDER_NEUTRAL.contains(&w.as_str())
                || (QUANTIFIERS_AND_INTENSIFIERS.contains(&w.as_str()) && !quantity)
                || ORDER_FILLERS.contains(&w.as_str())
            {
                return;
            }
            let fact_word = lexicon::en_function_word(&w)
                || COPULAS.contains(&w.as_str())
                || lexicon::en_marker(&w).is_some()
                || lexicon::en_relation(&w).is_some()
                || lexicon::en_pronoun_role(&w).is_some();
            // One form per word ("owes" / "owe"), as the content words are
            // compared; copulas in one tense form.
            let w = match w.as_str() {
                "am" | "are" => "is".to_string(),
                "were" => "was".to_string(),
                _ if fact_word || w.bytes().any(|b| b.is_ascii_digit()) => w,
                _ => crate::text::tokenize(&w).into_iter().next().unwrap_or(w),
            };
            out.push(w);
        }
    };
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if cjk::is_cjk_char(c) {
            flush(&mut word, &mut out);
            if !ZH_ORDER_FILLERS.contains(&c) {
                out.push(c.to_string());
            }
        } else if c.is_alphanumeric() {
            if word.chars().last().is_some_and(|p| p.is_alphanumeric() && p.is_ascii_digit() != c.is_ascii_digit()) {
                flush(&mut word, &mut out);
            }
            word.extend(c.to_lowercase());
        } else if matches!(c, '-' | '\u{2212}')
            && chars.get(i + 1).is_some_and(char::is_ascii_digit)
            && !(i > 0 && chars[i - 1].is_ascii_alphanumeric())
        {
            // A minus opening a number stays on it ("from -5 to 5").
            flush(&mut word, &mut out);
            word.push('-');
        } else {
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `a` and `b` reduced to the words both hold, in their own order: of a
/// word `a` holds `m` times and `b` `n` times, the first `min(m, n)`
/// occurrences on each side. The two results hold the same words.
fn shared_words(a: &[String], b: &[String]) -> (Vec<String>, Vec<String>) {
    fn count(s: &[String]) -> std::collections::HashMap<&str, usize> {
        let mut m = std::collections::HashMap::new();
        for w in s {
            *m.entry(w.as_str()).or_default() += 1;
        }
        m
    }
    let (ca, cb) = (count(a), count(b));
    let keep = |s: &[String], other: &std::collections::HashMap<&str, usize>| {
        let mut used: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        s.iter()
            .filter(|w| {
                let u = used.entry(w.as_str()).or_default();
                *u += 1;
                *u <= other.get(w.as_str()).copied().unwrap_or(0)
            })
            .cloned()
            .collect::<Vec<String>>()
    };
    (keep(a, &cb), keep(b, &ca))
}

/// Words that say nothing of who does what, left out of the word order:
/// fillers, dummy subjects and the possessive or contracted `s`.
const ORDER_FILLERS: &[&str] = &[
    "do", "does", "please", "yes", "yeah", "ok", "okay", "well", "oh", "hi", "hello", "hey", "that", "it", "there",
    "here", "s",
];

/// Chinese modal particles and stress, left out of the word order (他欠我五百块吧 / 他欠我五百块).
const ZH_ORDER_FILLERS: &[char] =
    &['吗', '呢', '吧', '啊', '呀', '哦', '嗯', '啦', '嘛', '哈', '哇', '也', '还', '很', '太', '挺', '真'];

/// [`FactSignature::differs`] of the two texts' signatures.
pub fn differing_facts(a: &str, b: &str) -> Option<FactDifference> {
    FactSignature::of(a).differs(&FactSignature::of(b))
}

/// The near-duplicate rule of the write path and of recall: `a` and `b`
/// restate each other when their cosine `similarity` is at least
/// `threshold` (the embedder's [`crate::embed::Embedder::near_duplicate_threshold`]
/// or the engine's setting) **and** their facts are the same.
pub fn is_restatement(similarity: f32, threshold: f32, a: &FactSignature, b: &FactSignature) -> bool {
    similarity >= threshold && a.differs(b).is_none()
}

fn set_difference(kind: FactKind, a: &BTreeSet<String>, b: &BTreeSet<String>) -> Option<FactDifference> {
    if a == b {
        return None;
    }
    Some(FactDifference {
        kind,
        only_in_first: a.difference(b).cloned().collect(),
        only_in_second: b.difference(a).cloned().collect(),
    })
}

fn multiset_surplus(a: &[String], b: &[String]) -> (Vec<String>, Vec<String>) {
    let mut rest_b: Vec<&String> = b.iter().collect();
    let mut only_a = Vec::new();
    for x in a {
        match rest_b.iter().position(|y| *y == x) {
            Some(i) => {
                rest_b.remove(i);
            }
            None => only_a.push(x.clone()),
        }
    }
    (only_a, rest_b.into_iter().cloned().collect())
}

/// A maximal run of CJK characters (with CJK punctuation and digits inside
/// it), or of anything else.
enum Segment<'a> {
    Cjk(&'a str),
    Other(&'a str),
}

fn segments(text: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_cjk: Option<bool> = None;
    for (i, c) in text.char_indices() {
        let k = if cjk::is_cjk_char(c) || cjk::is_cjk_punct(c) {
            Some(true)
        } else if c.is_alphabetic() {
            Some(false)
        } else {
            // Digits, spaces and ASCII punctuation stay with the current run.
            None
        };
        if let (Some(k), Some(cur)) = (k, in_cjk) {
            if k != cur {
                out.push(if cur { Segment::Cjk(&text[start..i]) } else { Segment::Other(&text[start..i]) });
                start = i;
            }
        }
        if k.is_some() {
            in_cjk = k;
        }
    }
    if start < text.len() {
        let s = &text[start..];
        out.push(if in_cjk == Some(true) { Segment::Cjk(s) } else { Segment::Other(s) });
    }
    out
}
