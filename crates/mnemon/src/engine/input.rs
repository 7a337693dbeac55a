//! What callers hand to the write API, and what it hands back.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::safety::PiiPolicy;
use crate::types::{Kind, MemoryId, ObservationId, Role, Tier};
use crate::writer::{DedupMode, RememberAction};

/// A memory to remember (or the new content of a supersede).
///
/// Fields left unset take defaults when the memory starts a lineage (kind
/// `fact`, tier long-term, importance 0.5, no entities, no sources). When
/// it replaces a version — [`crate::Engine::supersede`], a `remember` under
/// a slot key that an active memory holds, a near-duplicate with
/// [`DedupMode::Supersede`], an extraction update — every unset field is
/// inherited from the replaced version instead:
///
/// * kind, tier, importance, session and slot key are kept;
/// * sources and source reference are kept as a pair unless either is
///   given (given sources replace the old ones), so the new version stays
///   derived from the same observations and is forgotten with them;
/// * entities are kept if they still occur in the new content (NFKC,
///   case-insensitive; whole words, or a substring for CJK), so `Oolong`
///   does not stick to "Prefers green tea"; entities you give are taken as
///   given;
/// * the event time is not inherited: it is when the new fact became true.
#[derive(Clone, Debug, Default)]
pub struct NewMemory {
    pub(crate) content: String,
    pub(crate) kind: Option<Kind>,
    pub(crate) tier: Option<Tier>,
    pub(crate) importance: Option<f32>,
    pub(crate) entities: Option<Vec<String>>,
    pub(crate) key: Option<String>,
    pub(crate) sources: Vec<ObservationId>,
    pub(crate) session: Option<String>,
    pub(crate) event_time: Option<DateTime<Utc>>,
    pub(crate) source_ref: Option<String>,
    pub(crate) vector: Option<Vec<f32>>,
    pub(crate) dedup: DedupMode,
    pub(crate) pii_policy: Option<PiiPolicy>,
    pub(crate) embed: Option<crate::engine::EmbedMode>,
}

impl NewMemory {
    /// A memory with this content (1 ..= `max_content_bytes` bytes of UTF-8
    /// with something visible, under the [input rules](crate::text::chars):
    /// no NUL or other control characters but tab, LF and CR, no bidi
    /// overrides, no tag characters outside emoji flags). Kind, session,
    /// source reference and entities are one-line labels under the same
    /// rules; the key also refuses whitespace and invisible characters.
    ///
    /// The content is stored and shown verbatim; search reads it through
    /// [`crate::text::searchable`], so a JSON object or array is embedded
    /// and indexed by its values, not its key names.
    pub fn new(content: impl Into<String>) -> NewMemory {
        NewMemory { content: content.into(), ..NewMemory::default() }
    }

    /// What sort of memory. Default `fact`. A caller-defined kind is kept in
    /// NFKC ([`crate::canonical_id`]).
    pub fn kind(mut self, k: Kind) -> Self {
        self.kind = Some(k.canonical().into_owned());
        self
    }

    /// Lifetime tier. Default long-term.
    pub fn tier(mut self, t: Tier) -> Self {
        self.tier = Some(t);
        self
    }

    /// Importance in `0.0..=1.0`. Default 0.5.
    pub fn importance(mut self, i: f32) -> Self {
        self.importance = Some(i);
        self
    }

    /// Entities the memory is about (each 1 ..= 128 bytes; at most
    /// `max_entities`).
    pub fn entities<I, S>(mut self, e: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.entities = Some(e.into_iter().map(Into::into).collect());
        self
    }

    /// Slot key `entity.attribute` (e.g. `user.favourite_player`): a later
    /// memory under the same key supersedes this one. 3 ..= `max_key_bytes`
    /// bytes, no whitespace, at least one `.` between non-empty parts, all
    /// of it checked and stored in NFKC ([`crate::canonical_id`]), so
    /// `user.café` written precomposed or decomposed, or `ｕｓｅｒ.café`,
    /// is one key. (Kept as given until the write, so that an error can
    /// name both forms.)
    pub fn key(mut self, k: impl Into<String>) -> Self {
        self.key = Some(k.into());
        self
    }

    /// Observations (of the same namespace) this memory was derived from.
    /// An empty list means "not given": a new version then keeps the
    /// sources of the version it replaces.
    pub fn sources(mut self, s: impl IntoIterator<Item = ObservationId>) -> Self {
        self.sources = s.into_iter().collect();
        self
    }

    /// Session the memory was formed in (1 ..= 128 bytes, in NFKC:
    /// [`crate::canonical_id`]).
    pub fn session(mut self, s: impl Into<String>) -> Self {
        self.session = Some(canonical_owned(s.into()));
        self
    }

    /// When the remembered thing happened, i.e. when this fact became true
    /// (UTC). It starts the memory's valid time ([`crate::Memory::valid_from`])
    /// and ends its predecessor's; without it, the write time stands in.
    /// Used for recency and display.
    pub fn event_time(mut self, t: DateTime<Utc>) -> Self {
        self.event_time = Some(t);
        self
    }

    /// Caller's reference for the source (a message id, a dialog id; at most
    /// 256 bytes; stored in NFKC).
    pub fn source_ref(mut self, r: impl Into<String>) -> Self {
        self.source_ref = Some(canonical_owned(r.into()));
        self
    }

    /// A caller-computed vector instead of the engine's embedding: dimension
    /// must equal the embedder's, every component finite. It is normalised
    /// to unit length. Opening the store with another embedder later
    /// replaces it by that embedder's vector.
    pub fn vector(mut self, v: Vec<f32>) -> Self {
        self.vector = Some(v);
        self
    }

    /// Personal-data policy for this call, overriding the engine's.
    pub fn pii_policy(mut self, p: PiiPolicy) -> Self {
        self.pii_policy = Some(p);
        self
    }

    /// Duplicate handling. Default [`DedupMode::Supersede`]: identical
    /// content is a no-op, a restatement becomes a new version.
    pub fn dedup(mut self, d: DedupMode) -> Self {
        self.dedup = d;
        self
    }

    /// When this memory is embedded, overriding the engine's
    /// [`crate::EngineBuilder::embed_mode`]. With
    /// [`crate::EmbedMode::Deferred`] the call returns once the event is
    /// durable; the near-duplicate check ([`DedupMode::Supersede`]) then
    /// runs when the vector arrives (exact duplicates and slot keys are
    /// decided at once). A memory given its own vector
    /// ([`NewMemory::vector`]) is never deferred.
    pub fn embed(mut self, m: crate::engine::EmbedMode) -> Self {
        self.embed = Some(m);
        self
    }
}

/// An observation to record: a conversation turn or a tool result.
#[derive(Clone, Debug)]
pub struct NewObservation {
    pub(crate) session: String,
    pub(crate) role: Role,
    pub(crate) text: String,
    pub(crate) event_time: Option<DateTime<Utc>>,
    pub(crate) source: Option<String>,
    pub(crate) pii_policy: Option<PiiPolicy>,
}

impl NewObservation {
    /// An observation in `session` (1 ..= 128 bytes, one line, stored in
    /// NFKC: [`crate::canonical_id`]) by `role` with `text` (1 ..=
    /// `max_content_bytes` bytes, under the same
    /// [input rules](crate::text::chars) as memory content).
    pub fn new(session: impl Into<String>, role: Role, text: impl Into<String>) -> NewObservation {
        NewObservation {
            session: canonical_owned(session.into()),
            role,
            text: text.into(),
            event_time: None,
            source: None,
            pii_policy: None,
        }
    }

    /// When it happened (e.g. the conversation's date).
    pub fn event_time(mut self, t: DateTime<Utc>) -> Self {
        self.event_time = Some(t);
        self
    }

    /// Caller's reference (message id, dialog id; at most 256 bytes; stored
    /// in NFKC).
    pub fn source(mut self, s: impl Into<String>) -> Self {
        self.source = Some(canonical_owned(s.into()));
        self
    }

    /// Personal-data policy for this call, overriding the engine's.
    pub fn pii_policy(mut self, p: PiiPolicy) -> Self {
        self.pii_policy = Some(p);
        self
    }
}

/// `s` in its identifier form ([`crate::canonical_id`]), reusing its
/// buffer when it is already in that form.
pub(crate) fn canonical_owned(s: String) -> String {
    match crate::types::canonical_id(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(form) => form,
    }
}

/// The result of `remember` / `supersede`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Remembered {
    /// The memory that now holds the content: the new version, or the
    /// existing one for duplicates and unchanged supersedes.
    pub id: MemoryId,
    /// What happened.
    #[serde(flatten)]
    pub action: RememberAction,
    /// True when the memory was written without waiting for its vector
    /// ([`crate::EmbedMode::Deferred`]): it is found lexically now and by
    /// vector once the background embedder catches up, and a
    /// near-duplicate decision may still supersede an older memory then.
    #[serde(default)]
    pub vector_pending: bool,
    /// Personal data replaced by placeholders: kind → count (never values).
    pub redactions: BTreeMap<String, usize>,
    /// Set when the content was quarantined as an injected instruction.
    pub quarantined: Option<String>,
}

/// What to forget.
#[derive(Clone, Debug, PartialEq)]
pub enum ForgetRequest {
    /// One memory and every version in its chain.
    Memory(MemoryId),
    /// One observation, and what was derived from it: every memory version
    /// whose sources are all erased, and every whole version chain that
    /// cites it and whose latest version is left without a source that is
    /// not erased (a version that does not restate its sources inherits
    /// them, so a chain grown from one observation goes with it).
    Observation(ObservationId),
    /// Every observation and memory of a session. A session that no
    /// memory or observation of the namespace carries, and that no earlier
    /// forget named, is [`crate::Error::NotFound`].
    Session(String),
    /// Everything in the namespace; [`crate::Error::NotFound`] for a
    /// namespace nothing was ever written to.
    All,
    /// Every memory version whose text is `query` (case, spacing, invisible
    /// characters and NFKC aside), whatever its cosine, and every active
    /// memory that recall returns for `query` with similarity at least
    /// `min_similarity` (at most `limit` in all; see [`Engine::matching`](crate::Engine::matching));
    /// and every observation whose text is `query`, with what was derived
    /// from it as for [`ForgetRequest::Observation`] (see
    /// [`Engine::matching_observations`](crate::Engine::matching_observations)).
    Matching {
        /// The query text (not stored in the log).
        query: String,
        /// Cosine similarity floor, `-1.0..=1.0`.
        min_similarity: f32,
        /// Most memories to erase, 1 ..= 10,000.
        limit: usize,
    },
}
