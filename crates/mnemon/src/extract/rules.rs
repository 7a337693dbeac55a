//! A rule extractor for explicit statements, no model needed: "remember
//! that …", "I prefer …", "my X is Y", "记住…", "我喜欢…", "我的X是Y",
//! "以后…". Questions, negated and hypothetical sentences produce nothing.

use std::sync::OnceLock;

use regex::Regex;

use crate::engine::{Engine, NewMemory, NewObservation, Remembered};
use crate::error::{Error, Result};
use crate::types::{Kind, ObservationId, Role, Tier};

/// A memory the rules found in one sentence.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RuleCandidate {
    /// The memory text.
    pub content: String,
    /// `preference` or `fact`.
    pub kind: Kind,
    /// Slot key `user.<attribute>` for "my X is Y" statements.
    pub key: Option<String>,
    /// Importance in `0.0..=1.0`.
    pub importance: f32,
}

/// What [`Engine::observe_with_rules`] did.
#[derive(Debug)]
pub struct RuleObservation {
    /// The recorded observation.
    pub observation: ObservationId,
    /// One result per memory the rules produced (none for non-user turns).
    pub memories: Vec<Result<Remembered>>,
}

struct Rules {
    question_en: Regex,
    hedge_en: Regex,
    remember_en: Regex,
    prefer_en: Regex,
    my_en: Regex,
    hedge_zh: Regex,
    question_zh: Regex,
    remember_zh: Regex,
    like_zh: Regex,
    my_zh: Regex,
    later_zh: Regex,
}

fn rules() -> Option<&'static Rules> {
    static R: OnceLock<Option<Rules>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Rules {
            question_en: Regex::new(r"(?i)^\s*(what|who|whom|whose|where|when|why|how|which|do|does|did|is|are|am|can|could|would|will|should|shall)\b").ok()?,
            hedge_en: Regex::new(r"(?i)\b(not|n't|never|no longer|if|unless|suppose|supposing|imagine|maybe|perhaps|might|would|wish|whether)\b|n't\b").ok()?,
            remember_en: Regex::new(r"(?i)^\s*(?:please\s+|pls\s+|also\s+|hey,?\s+)*(?:remember|note|don't forget)(?:\s+that)?[:,]?\s+(.{3,})$").ok()?,
            prefer_en: Regex::new(r"(?i)^\s*(?:also,?\s+)?i\s+(?:really\s+|usually\s+|strongly\s+|always\s+)?(prefer|like|love|enjoy)\s+(.{2,})$").ok()?,
            my_en: Regex::new(r"(?i)^\s*(?:also,?\s+|and\s+|btw,?\s+)?my\s+([a-z][a-z'\- ]{0,40}?)\s+(?:is|are)\s+(.{1,200})$").ok()?,
            hedge_zh: Regex::new(r"如果|假如|要是|假设|也许|或许|可能|是否|不要记|别记").ok()?,
            question_zh: Regex::new(r"什么|谁|哪|怎么|为什么|多少|几[个点岁]|吗\s*$|呢\s*$").ok()?,
            remember_zh: Regex::new(r"^\s*(?:请|请你|你)?(?:记住|记得|记一下)[:：，,]?\s*(.{2,})$").ok()?,
            like_zh: Regex::new(r"^\s*我(?:很|最|非常|比较|更)?(喜欢|爱|偏好|爱吃|爱喝)(.{1,})$").ok()?,
            my_zh: Regex::new(r"^\s*我的([^不没是，,。？?\s]{1,12})是([^，,。？?]{1,100})").ok()?,
            later_zh: Regex::new(r"^\s*(?:请|请你)?以后(.{3,})$").ok()?,
        })
    })
    .as_ref()
}

/// Splits text into sentences, each with its closing punctuation (if any).
fn sentences(text: &str) -> Vec<(String, Option<char>)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | ';' | '；' | '\n') {
            if !cur.trim().is_empty() {
                out.push((cur.trim().to_string(), Some(c)));
            }
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        out.push((cur.trim().to_string(), None));
    }
    out
}

fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

fn slug_en(attr: &str) -> String {
    attr.trim()
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

fn slug_zh(attr: &str) -> String {
    match attr.trim() {
        "名字" | "姓名" => "name".into(),
        "生日" => "birthday".into(),
        "职业" | "工作" => "job".into(),
        "家乡" => "hometown".into(),
        other => other.to_string(),
    }
}

fn trim_value(v: &str) -> &str {
    v.trim().trim_end_matches([',', '，', '、', ' '])
}

/// Memories stated explicitly in `text` (one utterance of the user).
/// Pure and deterministic; questions, negations, hypotheticals and small
/// talk give nothing.
pub fn rule_extract(text: &str) -> Vec<RuleCandidate> {
    let Some(r) = rules() else { return Vec::new() };
    let mut out = Vec::new();
    for (s, end) in sentences(text) {
        if matches!(end, Some('?' | '？')) {
            continue;
        }
        if has_cjk(&s) {
            if r.question_zh.is_match(&s) || r.hedge_zh.is_match(&s) {
                continue;
            }
            if let Some(c) = r.my_zh.captures(&s) {
                let (attr, val) = (c[1].trim(), trim_value(&c[2]));
                if !val.is_empty() {
                    out.push(RuleCandidate {
                        content: format!("用户的{attr}是{val}"),
                        kind: Kind::Fact,
                        key: Some(format!("user.{}", slug_zh(attr))),
                        importance: 0.7,
                    });
                }
            } else if let Some(c) = r.remember_zh.captures(&s) {
                out.push(RuleCandidate {
                    content: trim_value(&c[1]).to_string(),
                    kind: Kind::Fact,
                    key: None,
                    importance: 0.7,
                });
            } else if let Some(c) = r.like_zh.captures(&s) {
                out.push(RuleCandidate {
                    content: format!("用户{}{}", &c[1], trim_value(&c[2])),
                    kind: Kind::Preference,
                    key: None,
                    importance: 0.6,
                });
            } else if let Some(c) = r.later_zh.captures(&s) {
                out.push(RuleCandidate {
                    content: format!("以后{}", trim_value(&c[1])),
                    kind: Kind::Preference,
                    key: None,
                    importance: 0.7,
                });
            }
            continue;
        }
        if r.question_en.is_match(&s) {
            continue;
        }
        if let Some(c) = r.remember_en.captures(&s) {
            // The remembered fact may itself be negative ("I don't eat pork").
            out.push(RuleCandidate {
                content: trim_value(&c[1]).to_string(),
                kind: Kind::Fact,
                key: None,
                importance: 0.7,
            });
            continue;
        }
        if r.hedge_en.is_match(&s) {
            continue;
        }
        if let Some(c) = r.my_en.captures(&s) {
            let (attr, val) = (c[1].trim().to_lowercase(), trim_value(&c[2]));
            let key = slug_en(&attr);
            if !val.is_empty() && !key.is_empty() && attr.split_whitespace().count() <= 4 {
                out.push(RuleCandidate {
                    content: format!("The user's {attr} is {val}"),
                    kind: Kind::Fact,
                    key: Some(format!("user.{key}")),
                    importance: 0.7,
                });
            }
        } else if let Some(c) = r.prefer_en.captures(&s) {
            let verb = format!("{}s", c[1].to_lowercase());
            out.push(RuleCandidate {
                content: format!("The user {verb} {}", trim_value(&c[2])),
                kind: Kind::Preference,
                key: None,
                importance: 0.6,
            });
        }
    }
    out
}

impl Engine {
    /// Records an observation and, for a user turn, remembers what
    /// [`rule_extract`] finds in its stored (redacted) text: long-term,
    /// grounded in the observation, in its session, in one group commit.
    /// This is an explicit call (there is no engine-wide auto-extract
    /// switch), so callers choose per turn.
    ///
    /// # Errors
    /// As [`Engine::observe`]; a rule memory that fails validation fails in
    /// its slot of [`RuleObservation::memories`].
    pub fn observe_with_rules(&self, ns: &crate::Namespace, obs: NewObservation) -> Result<RuleObservation> {
        let (session, role) = (obs.session.clone(), obs.role);
        let id = self.observe(ns, obs)?;
        if role != Role::User {
            return Ok(RuleObservation { observation: id, memories: Vec::new() });
        }
        let text = {
            let state = self.shared().state.read();
            state.ns(ns).and_then(|st| st.observations.get(&id)).map(|o| o.text.clone())
        }
        .ok_or_else(|| Error::not_found(format!("observation {id} in namespace {ns}")))?;
        let found = rule_extract(&text);
        if found.is_empty() {
            return Ok(RuleObservation { observation: id, memories: Vec::new() });
        }
        let batch = found
            .into_iter()
            .map(|c| {
                let mut m = NewMemory::new(c.content)
                    .kind(c.kind)
                    .tier(Tier::LongTerm)
                    .importance(c.importance)
                    .sources([id])
                    .session(session.clone());
                if let Some(k) = c.key {
                    m = m.key(k);
                }
                m
            })
            .collect();
        Ok(RuleObservation { observation: id, memories: self.remember_batch(ns, batch)? })
    }
}
