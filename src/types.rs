//! Small value types shared by every module: log positions, ids, namespaces
//! and the enums that classify memories.

use std::fmt;
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

/// Maximum length of a namespace, in characters (all ASCII, so also bytes).
pub const MAX_NAMESPACE_LEN: usize = 128;

/// A validated namespace: 1–128 characters of `[A-Za-z0-9_.:@-]`.
///
/// Every read and write takes one; nothing reads across namespaces. The
/// name is reference-counted: a clone shares the text (every record of the
/// fact table names its namespace). Serialises as a plain string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Namespace(Arc<str>);

impl Namespace {
    /// Validates and wraps a namespace.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the name is empty, longer than
    /// [`MAX_NAMESPACE_LEN`], or holds a character outside `[A-Za-z0-9_.:@-]`.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
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
            _ => Err(Error::invalid("role", format!("{s:?}: expected user|assistant|tool|system"))),
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
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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

impl FromStr for Kind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "preference" => Kind::Preference,
            "fact" => Kind::Fact,
            "decision" => Kind::Decision,
            "task_state" => Kind::TaskState,
            "episode" => Kind::Episode,
            "procedure" => Kind::Procedure,
            other => {
                check_kind(other)?;
                Kind::Other(other.to_string())
            }
        })
    }
}

/// Longest caller-defined kind, in characters.
pub const MAX_KIND_CHARS: usize = 64;

/// Checks a caller-defined kind: 1 ..= [`MAX_KIND_CHARS`] characters under
/// the one-line [label rules](crate::safety::text) (no control characters,
/// line breaks, bidi controls or tag characters; something visible).
pub(crate) fn check_kind(k: &str) -> Result<()> {
    if k.is_empty() || k.chars().count() > MAX_KIND_CHARS {
        return Err(Error::invalid("kind", format!("must be 1–{MAX_KIND_CHARS} characters")));
    }
    crate::safety::text::check_chars("kind", k, crate::safety::text::TextField::Label)
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
                format!("{s:?}: expected short_term (or short), long_term (or long) or permanent"),
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
