//! Small value types shared by every module: log positions, ids, namespaces
//! and the enums that classify memories.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A position in the event log: gap-free, starting at 1, assigned by the writer.
pub type Seq = u64;

/// Id of a memory version: the [`Seq`] of the `Extracted` event that created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct MemoryId(pub u64);

/// Id of an observation: the [`Seq`] of the `Observed` event that recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct ObservationId(pub u64);

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for ObservationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The form in which identifiers are stored and compared: Unicode NFKC
/// (compatibility composition), case kept.
///
/// Namespaces, slot keys, sessions, caller-defined kinds, observation
/// sources, source references and requesters are identifiers: two that
/// differ only in how Unicode encodes them — `café` precomposed (NFC) or as
/// `e` + combining acute (NFD), a full-width `ｕｓｅｒ`, the ligature `ﬁ`,
/// Hangul jamo or the syllable they spell, full-width punctuation `：` —
/// name the same thing. Case is not folded (`User.Name` and `user.name`
/// are two keys). Writes store this form; events written before it was
/// applied keep their bytes and are compared in it (docs/FORMAT.md,
/// "Identifiers").
///
/// Borrowed, with no allocation, when `s` is already in NFKC (all ASCII
/// text is).
pub fn canonical_id(s: &str) -> Cow<'_, str> {
    use unicode_normalization::UnicodeNormalization;
    if crate::text::nfkc_is_identity(s) {
        return Cow::Borrowed(s);
    }
    let nfkc: String = s.nfkc().collect();
    if nfkc == s {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(nfkc)
    }
}

/// Whether two identifiers name the same thing: equal in their
/// [`canonical_id`] form.
pub fn same_id(a: &str, b: &str) -> bool {
    a == b || canonical_id(a) == canonical_id(b)
}

/// Maximum length of a namespace, in characters (all ASCII, so also bytes).
pub const MAX_NAMESPACE_LEN: usize = 128;

/// A validated namespace: 1–128 characters of `[A-Za-z0-9_.:@-]`, after
/// NFKC ([`canonical_id`]), so that `ｕ１` is the namespace `u1`.
///
/// Every read and write takes one; nothing reads across namespaces. The
/// name is reference-counted: a clone shares the text (every record of the
/// fact table names its namespace). Serialises as a plain string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Namespace(Arc<str>);

impl Namespace {
    /// Validates and wraps a namespace, in its NFKC form
    /// ([`canonical_id`]): full-width `ｕ１` is `u1`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the name (in NFKC) is empty, longer than
    /// [`MAX_NAMESPACE_LEN`], or holds a character outside `[A-Za-z0-9_.:@-]`.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let given = name.into();
        let name = match canonical_id(&given) {
            Cow::Borrowed(_) => given,
            Cow::Owned(nfkc) => nfkc,
        };
        if name.is_empty() {
            return Err(Error::invalid("namespace", "must not be empty"));
        }
        if name.len() > MAX_NAMESPACE_LEN {
            return Err(Error::invalid(
                "namespace",
                format!("{} characters, at most {MAX_NAMESPACE_LEN} allowed", name.len()),
            ));
        }
        if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '@' | '-')))
        {
            return Err(Error::invalid("namespace", format!("character {c:?} not allowed; use [A-Za-z0-9_.:@-]")));
        }
        Ok(Namespace(Arc::from(name)))
    }

    /// The namespace as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Namespace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Namespace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Namespace::new(s).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Namespace {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Namespace".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_NAMESPACE_LEN,
            "pattern": "^[A-Za-z0-9_.:@-]+$",
            "description": "Namespace: 1–128 characters of [A-Za-z0-9_.:@-]."
        })
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Namespace {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Namespace::new(s)
    }
}

impl TryFrom<&str> for Namespace {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self> {
        Namespace::new(s)
    }
}

/// Who produced an observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The human user.
    User,
    /// The agent.
    Assistant,
    /// A tool result.
    Tool,
    /// A system message.
    System,
}

impl FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            "system" => Ok(Role::System),
            _ => Err(Error::invalid("role", format!("must be user, assistant, tool or system, got {s:?}"))),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        })
    }
}

/// What sort of memory this is. `Other` carries a caller-defined kind
/// (1–64 characters, one line, no control characters; checked when parsed
/// and when written).
///
/// Kinds compare in their [`canonical_id`] form: `Other("ｆａｃｔ")` (as an
/// event written before kinds were normalised may hold it) equals `Fact`,
/// and two caller-defined kinds that differ only in Unicode encoding are
/// equal.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A stated like or dislike.
    Preference,
    /// A fact about the user or the world.
    Fact,
    /// A decision that was taken.
    Decision,
    /// Where a task stands.
    TaskState,
    /// Something that happened (a conversation turn kept verbatim, an event).
    Episode,
    /// How to do something.
    Procedure,
    /// A caller-defined kind.
    Other(String),
}

impl Kind {
    /// A built-in kind by its name, else a caller-defined one; no checks.
    fn named(s: &str) -> Kind {
        match s {
            "preference" => Kind::Preference,
            "fact" => Kind::Fact,
            "decision" => Kind::Decision,
            "task_state" => Kind::TaskState,
            "episode" => Kind::Episode,
            "procedure" => Kind::Procedure,
            other => Kind::Other(other.to_string()),
        }
    }

    /// This kind in its canonical form: a caller-defined kind in NFKC
    /// ([`canonical_id`]), or the built-in kind its NFKC form names.
    pub fn canonical(&self) -> Cow<'_, Kind> {
        match self {
            Kind::Other(s) => match canonical_id(s) {
                Cow::Borrowed(_) if !is_builtin_name(s) => Cow::Borrowed(self),
                form => Cow::Owned(Kind::named(&form)),
            },
            _ => Cow::Borrowed(self),
        }
    }
}

/// Whether `s` is the name of a built-in kind.
fn is_builtin_name(s: &str) -> bool {
    matches!(s, "preference" | "fact" | "decision" | "task_state" | "episode" | "procedure")
}

impl PartialEq for Kind {
    fn eq(&self, other: &Kind) -> bool {
        match (self.canonical().as_ref(), other.canonical().as_ref()) {
            (Kind::Other(a), Kind::Other(b)) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

impl Eq for Kind {}

impl Hash for Kind {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let k = self.canonical();
        std::mem::discriminant(k.as_ref()).hash(h);
        if let Kind::Other(s) = k.as_ref() {
            s.hash(h);
        }
    }
}

impl FromStr for Kind {
    type Err = Error;
    /// A kind by name, in NFKC: `ｆａｃｔ` is `fact`.
    fn from_str(s: &str) -> Result<Self> {
        let form = canonical_id(s);
        Ok(match Kind::named(&form) {
            Kind::Other(other) => {
                check_kind(&other)?;
                Kind::Other(other)
            }
            builtin => builtin,
        })
    }
}

/// Longest caller-defined kind, in characters.
pub const MAX_KIND_CHARS: usize = 64;

/// Checks a caller-defined kind: 1 ..= [`MAX_KIND_CHARS`] characters under
/// the one-line [label rules](crate::text::chars) (no control characters,
/// line breaks, bidi controls or tag characters; something visible).
pub(crate) fn check_kind(k: &str) -> Result<()> {
    if k.is_empty() || k.chars().count() > MAX_KIND_CHARS {
        return Err(Error::invalid("kind", format!("must be 1–{MAX_KIND_CHARS} characters")));
    }
    Ok(crate::text::check_chars("kind", k, crate::text::TextField::Label)?)
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Preference => "preference",
            Kind::Fact => "fact",
            Kind::Decision => "decision",
            Kind::TaskState => "task_state",
            Kind::Episode => "episode",
            Kind::Procedure => "procedure",
            Kind::Other(s) => s,
        })
    }
}

/// How long a memory is meant to live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Scoped to its session; archived when the session ends.
    ShortTerm,
    /// Decays with time since last access (half-life in the config).
    LongTerm,
    /// Never decays or archives.
    Permanent,
}

impl FromStr for Tier {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "short" | "short_term" | "short-term" => Ok(Tier::ShortTerm),
            "long" | "long_term" | "long-term" => Ok(Tier::LongTerm),
            "permanent" => Ok(Tier::Permanent),
            _ => Err(Error::invalid(
                "tier",
                format!("must be short_term (or short), long_term (or long) or permanent, got {s:?}"),
            )),
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tier::ShortTerm => "short_term",
            Tier::LongTerm => "long_term",
            Tier::Permanent => "permanent",
        })
    }
}

/// Lifecycle status of a memory version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Current; returned by recall.
    Active,
    /// Replaced by a newer version (see `next` in its record).
    Superseded,
    /// Erased; its content is gone from every read path.
    Forgotten,
    /// Archived by a lifecycle decision (session end, decay, capacity): left
    /// out of default recall and `list`, still in history.
    Archived,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Active => "active",
            Status::Superseded => "superseded",
            Status::Forgotten => "forgotten",
            Status::Archived => "archived",
        })
    }
}
