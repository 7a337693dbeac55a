//! The write API: validation and embedding on the caller's thread, then one
//! command to the writer.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::embed::EmbedKind;
use crate::engine::input::{canonical_owned, ForgetRequest, NewMemory, NewObservation, Remembered};
use crate::engine::EmbedMode;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::{ForgetTarget, Observed, SupersedeReason};
use crate::safety::{InjectionPolicy, PiiPolicy};
use crate::text::{check_chars, TextField};
use crate::types::{canonical_id, Kind, MemoryId, Namespace, ObservationId};
use crate::writer::{Command, ForgetOutcome, Op, OpOutcome, PendingMemory, RememberAction};

/// Longest session id or source reference, in bytes.
pub(crate) const MAX_SESSION_BYTES: usize = 128;
const MAX_SOURCE_BYTES: usize = 256;
/// Longest requester label of a recall or a context, in bytes.
pub(crate) const MAX_REQUESTER_BYTES: usize = 256;
/// Longest forget reason, in bytes.
pub(crate) const MAX_REASON_BYTES: usize = 1024;

/// Text after the safety stage, plus what it did.
pub(crate) struct Prepared {
    pub(crate) text: String,
    pub(crate) redactions: BTreeMap<String, usize>,
    pub(crate) quarantine: Option<String>,
    /// The memory's entities after redaction (`None`: none given).
    pub(crate) entities: Option<Vec<String>>,
}

impl Engine {
    /// Free text (content, observation text, query): 1 ..=
    /// `max_content_bytes` bytes under the [`TextField::Body`] character
    /// rules.
    pub(crate) fn check_text(&self, field: &'static str, text: &str) -> Result<()> {
        if text.trim().is_empty() {
            return Err(Error::invalid(field, "must not be empty or only whitespace"));
        }
        let max = self.inner.cfg.max_content_bytes;
        if text.len() > max {
            return Err(Error::invalid(field, format!("{} bytes, at most {max} allowed", text.len())));
        }
        Ok(check_chars(field, text, TextField::Body)?)
    }

    /// Runs the safety stage on text bound for the log: personal data per
    /// `policy` (or the engine's), then, for memory content, the
    /// injected-instruction check.
    pub(crate) fn prepare_text(&self, text: &str, policy: Option<PiiPolicy>, is_memory: bool) -> Result<Prepared> {
        let cfg = &self.inner.cfg;
        let r = cfg.redactor.apply(text, policy.unwrap_or(cfg.pii_policy))?;
        let mut quarantine = None;
        if is_memory && cfg.injection_policy != InjectionPolicy::Allow {
            if let Some(f) = cfg.injection.check(&r.text) {
                let reason = format!("injected instruction (score {:.2}: {})", f.score, f.matched.join(", "));
                if cfg.injection_policy == InjectionPolicy::Reject {
                    return Err(Error::Rejected(reason));
                }
                quarantine = Some(reason);
            }
        }
        Ok(Prepared { text: r.text, redactions: r.counts, quarantine, entities: None })
    }

    /// A free-text label bound for the log (an entity, a forget reason, a
    /// requester) under personal-data `policy`:
    /// redacted (counts added to `counts`), refused, or kept as it is.
    ///
    /// # Errors
    /// [`Error::Rejected`] naming `field` and the kinds under
    /// [`PiiPolicy::Reject`] when the label holds personal data.
    pub(crate) fn redact_label(
        &self,
        field: &str,
        label: &str,
        policy: Option<PiiPolicy>,
        counts: &mut BTreeMap<String, usize>,
    ) -> Result<String> {
        let r =
            self.inner.cfg.redactor.apply(label, policy.unwrap_or(self.inner.cfg.pii_policy)).map_err(|e| match e {
                Error::Rejected(m) => Error::Rejected(format!("{field}: {m}")),
                other => other,
            })?;
        for (k, n) in r.counts {
            *counts.entry(k).or_insert(0) += n;
        }
        Ok(r.text)
    }

    /// The policy for the labels of a forget or an access (reason,
    /// requester): redact unless the engine's policy is off; an erasure or a
    /// read is never refused for what its label holds.
    fn label_policy(&self) -> PiiPolicy {
        match self.inner.cfg.pii_policy {
            PiiPolicy::Off => PiiPolicy::Off,
            _ => PiiPolicy::Redact,
        }
    }

    /// Refuses an identifier (namespace, session, slot key, kind, source
    /// reference, observation source) that holds personal data, unless `policy` is [`PiiPolicy::Off`]: an
    /// identifier is stored as given, since a redacted one would no longer
    /// name what the caller meant, so personal data in it could never be
    /// kept off the disk.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `field` and the kinds found (never the
    /// values).
    pub(crate) fn refuse_personal_identifier(
        &self,
        field: &'static str,
        id: &str,
        policy: Option<PiiPolicy>,
    ) -> Result<()> {
        if policy.unwrap_or(self.inner.cfg.pii_policy) == PiiPolicy::Off {
            return Ok(());
        }
        let found = self.inner.cfg.redactor.redact(id);
        if found.is_clean() {
            return Ok(());
        }
        let kinds: Vec<String> = found.counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
        Err(Error::invalid(
            field,
            format!(
                "holds personal data ({}); an identifier is stored as given and cannot be redacted: use an opaque one",
                kinds.join(", ")
            ),
        ))
    }

    pub(crate) fn run(&self, ns: &Namespace, ops: Vec<Op>) -> Result<Vec<Result<OpOutcome>>> {
        self.run_with(ns, ops, None)
    }

    /// [`Engine::run`] for a batch whose items all set the personal-data
    /// policy `policy` (which then decides whether a new namespace's name
    /// is checked, as it does for the items' other identifiers).
    pub(crate) fn run_with(
        &self,
        ns: &Namespace,
        ops: Vec<Op>,
        policy: Option<PiiPolicy>,
    ) -> Result<Vec<Result<OpOutcome>>> {
        if let Some(msg) = self.shared().poison_message() {
            return Err(Error::Poisoned(msg));
        }
        if let Some(e) = self.shared().read_only_error() {
            return Err(e);
        }
        // A namespace is an identifier too, written into every event of it
        // and kept by tombstones, so one holding personal data is refused
        // before it is first written to. A namespace already in the store
        // takes writes as before, and forgetting is never refused.
        let writes = ops.iter().any(|op| !matches!(op, Op::Forget { .. } | Op::Access { .. } | Op::Archive { .. }));
        if writes && self.shared().state.read().ns(ns).is_none() {
            self.refuse_personal_identifier("namespace", ns.as_str(), policy)?;
        }
        let cancel = self.cancel_token().cloned();
        if cancel.as_ref().is_some_and(crate::CancelToken::is_cancelled) {
            return Err(Error::Cancelled);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Command::Write { ns: ns.clone(), ops, reply: tx, cancel })?;
        rx.recv().map_err(|_| Error::Closed)?
    }

    fn run_one(&self, ns: &Namespace, op: Op) -> Result<OpOutcome> {
        self.run(ns, vec![op])?.pop().unwrap_or(Err(Error::Closed))
    }

    /// Records an observation (a conversation turn, a tool result).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for empty or oversized text or session, or
    /// characters the [input rules](crate::text::chars) refuse, or a
    /// session or source that holds personal data (identifiers are stored
    /// as given, so they are refused rather than redacted, unless the
    /// personal-data policy is off), as is the name of a namespace not yet
    /// in the store (field `namespace`); [`Error::Rejected`] when the
    /// personal-data policy is `reject` and the text holds personal data;
    /// [`Error::Poisoned`] / [`Error::Closed`].
    pub fn observe(&self, ns: &Namespace, obs: NewObservation) -> Result<ObservationId> {
        self.observe_batch(ns, vec![obs])?.pop().ok_or(Error::Closed)
    }

    /// [`Engine::observe`], also returning the personal data it replaced
    /// by placeholders: kind → count, never the values (empty when none).
    ///
    /// # Errors
    /// As [`Engine::observe`].
    pub fn observe_reporting(
        &self,
        ns: &Namespace,
        obs: NewObservation,
    ) -> Result<(ObservationId, BTreeMap<String, usize>)> {
        self.observe_batch_reporting(ns, vec![obs])?.pop().ok_or(Error::Closed)
    }

    /// Records many observations in one group commit. All are validated
    /// before any is written; on error nothing is written.
    ///
    /// # Errors
    /// As [`Engine::observe`], for the first bad item; also
    /// [`Error::InvalidInput`] when the batch exceeds `max_batch`.
    pub fn observe_batch(&self, ns: &Namespace, batch: Vec<NewObservation>) -> Result<Vec<ObservationId>> {
        Ok(self.observe_batch_reporting(ns, batch)?.into_iter().map(|(id, _)| id).collect())
    }

    /// [`Engine::observe_batch`], also returning each observation's
    /// redactions (kind → count, never the values), in the batch's order.
    ///
    /// # Errors
    /// As [`Engine::observe_batch`].
    pub fn observe_batch_reporting(
        &self,
        ns: &Namespace,
        batch: Vec<NewObservation>,
    ) -> Result<Vec<(ObservationId, BTreeMap<String, usize>)>> {
        self.check_batch(batch.len())?;
        let policy = common_policy(batch.iter().map(|o| o.pii_policy));
        let mut ops = Vec::with_capacity(batch.len());
        let mut redactions = Vec::with_capacity(batch.len());
        for mut o in batch {
            // Identifiers are checked and stored in their one form (NFKC).
            o.session = canonical_owned(o.session);
            o.source = o.source.map(canonical_owned);
            self.check_text("text", &o.text)?;
            check_short("session", &o.session, MAX_SESSION_BYTES, false)?;
            if let Some(s) = &o.source {
                check_short("source", s, MAX_SOURCE_BYTES, false)?;
                self.refuse_personal_identifier("source", s, o.pii_policy)?;
            }
            self.refuse_personal_identifier("session", &o.session, o.pii_policy)?;
            let p = self.prepare_text(&o.text, o.pii_policy, false)?;
            redactions.push(p.redactions);
            ops.push(Op::Observe(Observed {
                session: o.session,
                role: o.role,
                text: p.text,
                event_time: o.event_time,
                source: o.source,
            }));
        }
        self.run_with(ns, ops, policy)?
            .into_iter()
            .zip(redactions)
            .map(|(r, counts)| match r? {
                OpOutcome::Observed(id) => Ok((id, counts)),
                other => Err(Error::Storage(format!("unexpected outcome {other:?}").into())),
            })
            .collect()
    }

    fn check_batch(&self, n: usize) -> Result<()> {
        let max = self.inner.cfg.max_batch;
        if n > max {
            return Err(Error::invalid("batch", format!("{n} items, at most {max} allowed")));
        }
        Ok(())
    }

    /// Validates a memory's fields; returns the event payload (without
    /// defaults applied for `None` fields) and the prepared text.
    /// Identifiers (key, session, kind, source reference) are checked in the
    /// NFKC form [`pending_memory`] stores.
    pub(crate) fn check_memory(&self, m: &NewMemory) -> Result<Prepared> {
        let given = m;
        let canonical = canonical_fields(m);
        let m = canonical.as_ref().unwrap_or(m);
        self.check_text("content", &m.content)?;
        if let Some(i) = m.importance {
            if !(0.0..=1.0).contains(&i) {
                let shown = if i.is_infinite() {
                    "a number beyond a 32-bit float's range (±3.4e38)".to_string()
                } else {
                    i.to_string()
                };
                return Err(Error::out_of_range("importance", 0, 1, shown));
            }
        }
        if let Some(es) = &m.entities {
            let max = self.inner.cfg.max_entities;
            if es.len() > max {
                return Err(Error::invalid("entities", format!("{} entities, at most {max} allowed", es.len())));
            }
            for e in es {
                check_short("entities", e, self.inner.cfg.max_entity_bytes, false)?;
            }
        }
        if let Some(Kind::Other(k)) = &m.kind {
            crate::types::check_kind(k)?;
        }
        // The key as given: its check names the given and the stored form.
        if let Some(k) = &given.key {
            check_key(k, self.inner.cfg.max_key_bytes)?;
        }
        if let Some(s) = &m.session {
            check_short("session", s, MAX_SESSION_BYTES, false)?;
        }
        if let Some(s) = &m.source_ref {
            check_short("source_ref", s, MAX_SOURCE_BYTES, false)?;
        }
        if let Some(v) = &m.vector {
            crate::embed::validate_vector(v, self.inner.embedder.dim())?;
            if v.iter().all(|x| *x == 0.0) {
                return Err(Error::invalid("vector", "is all zeros: it has no direction, so no cosine can rank it"));
            }
        }
        if let Some(s) = &m.session {
            self.refuse_personal_identifier("session", s, m.pii_policy)?;
        }
        if let Some(k) = &m.key {
            self.refuse_personal_identifier("key", k, m.pii_policy)?;
        }
        if let Some(Kind::Other(k)) = &m.kind {
            self.refuse_personal_identifier("kind", k, m.pii_policy)?;
        }
        if let Some(r) = &m.source_ref {
            self.refuse_personal_identifier("source_ref", r, m.pii_policy)?;
        }
        let mut p = self.prepare_text(&m.content, m.pii_policy, true)?;
        if let Some(es) = &m.entities {
            let mut out = Vec::with_capacity(es.len());
            for e in es {
                out.push(self.redact_label("entities", e, m.pii_policy, &mut p.redactions)?);
            }
            p.entities = Some(out);
        }
        Ok(p)
    }

    /// Whether memory `m` is written without waiting for its vector: it
    /// asks for deferred embedding, or `down` (the embedder is a remote
    /// provider that is not answering) and it brings no vector of its own.
    fn deferred(&self, m: &NewMemory, down: bool) -> bool {
        m.vector.is_none() && (down || m.embed.unwrap_or(self.inner.cfg.embed_mode) == EmbedMode::Deferred)
    }

    /// Embeds (or takes the caller's vectors for) prepared texts, in one batch.
    pub(crate) fn vectors_for(&self, items: &[(&NewMemory, &Prepared)]) -> Result<Vec<Vec<f32>>> {
        // The text search reads: a JSON object's values, not its keys.
        let searchable: Vec<_> =
            items.iter().filter(|(m, _)| m.vector.is_none()).map(|(_, p)| crate::text::searchable(&p.text)).collect();
        let need: Vec<&str> = searchable.iter().map(AsRef::as_ref).collect();
        let mut embedded =
            if need.is_empty() { Vec::new() } else { self.inner.embedder.embed(&need, EmbedKind::Passage)? }
                .into_iter();
        let mut out = Vec::with_capacity(items.len());
        for (m, _) in items {
            // A caller's vector was checked with the memory; the embedder's
            // are checked here, as at open and for queries.
            let mut v = match &m.vector {
                Some(v) => v.clone(),
                None => {
                    let v =
                        embedded.next().ok_or_else(|| Error::Embedder("embedder returned too few vectors".into()))?;
                    crate::embed::validate_vector(&v, self.inner.embedder.dim()).map_err(|e| {
                        Error::Embedder(crate::error::Failure::with_source(
                            format!("embedder returned a bad vector: {e}"),
                            e,
                        ))
                    })?;
                    v
                }
            };
            crate::embed::normalize(&mut v);
            out.push(v);
        }
        Ok(out)
    }

    /// Remembers a memory.
    ///
    /// A memory under a slot key that has an active memory supersedes exactly
    /// that memory (or, with identical content, returns it and writes
    /// nothing). Otherwise identical content (after NFKC, whitespace and
    /// invisible-character normalisation; case counts: "the US team" is not
    /// "the us team") already active in the namespace returns the existing id
    /// and writes nothing. A restatement of an active memory (cosine ≥ the
    /// near-duplicate threshold and the same facts: numbers, names, content
    /// words, negations, qualifiers, word order; see [`crate::dedup`]) is
    /// written as its new version
    /// ([`crate::RememberAction::NearDuplicate`]); a text that differs in a
    /// fact is a new memory however similar. [`crate::DedupMode`] narrows this.
    ///
    /// Fields left unset take defaults on a new memory (kind `fact`, tier
    /// long-term, importance 0.5) and are inherited when the memory
    /// supersedes another, as by [`Engine::supersede`]: a keyed update
    /// stating only new content keeps the old version's kind, tier,
    /// importance, session, sources and those entities that still occur in
    /// the new content. A restatement (a near-duplicate, or the same text
    /// gaining a slot key or said again under it) never keeps the fact for
    /// less time or ranks it lower: it takes the more lasting tier and the
    /// higher importance of the two versions.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for empty or oversized content, content with
    /// nothing visible or with characters the [input rules](crate::text::chars)
    /// refuse (NUL and other controls, bidi overrides, smuggled tag
    /// characters), a kind, session or source reference with control
    /// characters or line breaks, importance outside `0.0..=1.0`, a malformed
    /// key, too many entities, a vector of the wrong dimension or with
    /// NaN/inf, or a session, key, kind or source reference that holds
    /// personal data (identifiers are stored as given, so they are refused
    /// rather than redacted, unless the personal-data policy is off;
    /// entities are free text and redacted like the content), or, for a
    /// namespace not yet in the store, a namespace name that holds personal
    /// data (field `namespace`);
    /// [`Error::NotFound`] for a source observation not in this namespace;
    /// [`Error::Conflict`] for a keyed write whose event time lies before
    /// the stated event time of the value it would replace (nothing is
    /// written);
    /// [`Error::Rejected`] under `reject` policies; [`Error::Poisoned`] /
    /// [`Error::Closed`].
    pub fn remember(&self, ns: &Namespace, m: NewMemory) -> Result<Remembered> {
        self.remember_batch(ns, vec![m])?.pop().ok_or(Error::Closed)?
    }

    /// Remembers many memories with one embedding batch and one group commit.
    /// Every item is validated first: if any is malformed, nothing is written
    /// and the error names it. Items that fail against the store's state
    /// (unknown source ids) fail alone, in their slot.
    ///
    /// # Errors
    /// As [`Engine::remember`].
    pub fn remember_batch(&self, ns: &Namespace, batch: Vec<NewMemory>) -> Result<Vec<Result<Remembered>>> {
        self.check_batch(batch.len())?;
        let prepared = batch.iter().map(|m| self.check_memory(m)).collect::<Result<Vec<_>>>()?;
        // A remote provider that is down does not hold the write back: its
        // memories are stored now and embedded when it answers again.
        let mut down = !self.inner.embedder.available();
        let mut vectors = loop {
            let pairs: Vec<(&NewMemory, &Prepared)> =
                batch.iter().zip(&prepared).filter(|(m, _)| !self.deferred(m, down)).collect();
            match self.vectors_for(&pairs) {
                Err(Error::ProviderUnavailable { .. }) if !down => down = true,
                other => break other?.into_iter(),
            }
        };
        let threshold = self.inner.dedup_threshold;
        let policy = common_policy(batch.iter().map(|m| m.pii_policy));
        let mut meta = Vec::with_capacity(batch.len());
        let mut ops = Vec::with_capacity(batch.len());
        for (m, p) in batch.into_iter().zip(prepared) {
            let v = if self.deferred(&m, down) {
                None
            } else {
                Some(vectors.next().ok_or_else(|| Error::Embedder("embedder returned too few vectors".into()))?)
            };
            meta.push((p.redactions.clone(), p.quarantine.clone(), v.is_none()));
            ops.push(Op::Remember { mem: pending_memory(&m, &p), vector: v, dedup: m.dedup, threshold });
        }
        Ok(self
            .run_with(ns, ops, policy)?
            .into_iter()
            .zip(meta)
            .map(|(r, (redactions, quarantined, deferred))| match r? {
                OpOutcome::Remembered { id, action } => {
                    // Only a newly written version waits for a vector.
                    let vector_pending =
                        deferred && !matches!(action, RememberAction::Duplicate | RememberAction::Unchanged);
                    Ok(Remembered { id, action, redactions, quarantined, vector_pending })
                }
                other => Err(Error::Storage(format!("unexpected outcome {other:?}").into())),
            })
            .collect())
    }

    /// Writes a new version of memory `old` with new content. Content equal
    /// to the old content (after normalisation) is a no-op
    /// ([`crate::RememberAction::Unchanged`]).
    ///
    /// Fields not set in `new` are inherited from `old` (the rule every
    /// superseding write follows, see [`NewMemory`]): kind, tier,
    /// importance, session and slot key; sources and source reference
    /// together, unless `new` gives either; entities, unless `new` gives
    /// them, less those that no longer occur in the new content (an entity
    /// that named the old value does not stick to the new one). The event
    /// time is never inherited: the new version holds from its own event
    /// time, else from its write time, and the old one stops holding then
    /// ([`crate::Memory::valid_to`]).
    ///
    /// # Errors
    /// [`Error::NotFound`] if `old` is not in the namespace (or was
    /// forgotten); [`Error::Conflict`] if `old` is already superseded, if
    /// `new` sets a slot key that another active memory holds, or if `new`
    /// states an event time before `old`'s stated one; the input errors of
    /// [`Engine::remember`].
    pub fn supersede(&self, ns: &Namespace, old: MemoryId, new: NewMemory) -> Result<Remembered> {
        self.supersede_with(ns, old, new, SupersedeReason::Explicit)
    }

    pub(crate) fn supersede_with(
        &self,
        ns: &Namespace,
        old: MemoryId,
        new: NewMemory,
        reason: SupersedeReason,
    ) -> Result<Remembered> {
        // Fail early on an unknown id; the writer checks again against the state.
        self.get(ns, old)?;
        let p = self.check_memory(&new)?;
        let v = self.vectors_for(&[(&new, &p)])?.pop().ok_or(Error::Closed)?;
        let mem = pending_memory(&new, &p);
        match self.run_one(ns, Op::Supersede { old, mem, vector: v, reason })? {
            OpOutcome::Remembered { id, action } => Ok(Remembered {
                id,
                action,
                redactions: p.redactions,
                quarantined: p.quarantine,
                vector_pending: false,
            }),
            other => Err(Error::Storage(format!("unexpected outcome {other:?}").into())),
        }
    }

    /// Forgets memories and observations. From the moment this returns, the
    /// targets are gone from every read path (recall, get, list, history,
    /// as-of views, exported events, indexes) and stay gone after reopen; the
    /// bytes leave the disk at the next [`Engine::compact`]. Forgetting
    /// something already forgotten (an id, a session an earlier forget
    /// named, a namespace emptied before), or a `Matching` search that finds
    /// nothing, returns zero counts and writes nothing; a named target with
    /// nothing to forget that no earlier forget named (an unknown id, a
    /// session nothing carries, a namespace never written to) is
    /// [`Error::NotFound`].
    /// Forgetting observations also forgets what was derived from them (see
    /// [`ForgetRequest::Observation`]). A forgotten version is cut out of its
    /// chain: its neighbours link to each other, never to it.
    ///
    /// # Errors
    /// [`Error::NotFound`], with nothing written, for an unknown memory or
    /// observation id, a session that no memory or observation of the
    /// namespace carries and that no earlier forget named (the names of
    /// sessions emptied by id or by `All` are not kept), and `All` on a
    /// namespace nothing was ever written to; [`Error::InvalidInput`] for an
    /// oversized reason or a bad `Session` or `Matching` request;
    /// [`Error::Poisoned`] / [`Error::Closed`].
    pub fn forget(&self, ns: &Namespace, req: ForgetRequest, reason: &str) -> Result<ForgetOutcome> {
        let reason = self.forget_reason(reason)?;
        let (target, ids, observations) = self.resolve_forget(ns, &req)?;
        let shreds = matches!(target, ForgetTarget::Namespace) && self.shared().keys.is_some();
        match self.run_one(ns, Op::Forget { target, reason, requester: None, ids, observations })? {
            // The flush that makes the forget durable destroys the key:
            // the group's own (per-group durability) or this one.
            OpOutcome::Forgot(mut f) => {
                if shreds {
                    self.sync()?;
                }
                f.key_shredded = shreds;
                Ok(f)
            }
            other => Err(Error::Storage(format!("unexpected outcome {other:?}").into())),
        }
    }

    /// The target of a forget, and for `Matching` the memories and the
    /// observations it reaches.
    fn resolve_forget(
        &self,
        ns: &Namespace,
        req: &ForgetRequest,
    ) -> Result<(ForgetTarget, Vec<MemoryId>, Vec<ObservationId>)> {
        Ok(match req {
            ForgetRequest::Memory(id) => (ForgetTarget::Memory(*id), vec![], vec![]),
            ForgetRequest::Observation(id) => (ForgetTarget::Observation(*id), vec![], vec![]),
            ForgetRequest::Session(s) => {
                // Stored in the form sessions are compared in, so that a
                // later forget of the same session in another encoding is
                // recognised as one already done.
                let s = canonical_owned(s.clone());
                check_short("session", &s, MAX_SESSION_BYTES, false)?;
                (ForgetTarget::Session(s), vec![], vec![])
            }
            ForgetRequest::All => (ForgetTarget::Namespace, vec![], vec![]),
            ForgetRequest::Matching { query, min_similarity, limit } => {
                let ids = self.matching(ns, query, *min_similarity, *limit)?.into_iter().map(|(id, _)| id).collect();
                (ForgetTarget::Matching, ids, self.matching_observations(ns, query)?)
            }
        })
    }

    /// A forget query as stored text would hold it, and the forms its text
    /// is compared in: stored text had its personal data redacted before it
    /// was written and embedded, so the query is matched as that text would
    /// be stored ("Call me at 13812345678" finds "Call me at [PHONE]") and
    /// as given (a memory written with redaction off), each normalised and
    /// lower-cased. Returns (redacted query, [redacted form, given form]).
    fn query_forms(&self, query: &str) -> Result<(String, Vec<String>)> {
        let redacted = self.redact_label("query", query, Some(self.label_policy()), &mut BTreeMap::new())?;
        let folded =
            [redacted.as_str(), query].iter().map(|t| crate::projection::normalize_content(t).to_lowercase()).collect();
        Ok((redacted, folded))
    }

    /// The observations of `ns` whose text is `query`, as [`Engine::matching`]
    /// compares a memory's (case, spacing, invisible characters and NFKC
    /// aside; the query as given and with its personal data redacted as a
    /// write would store it), ids ascending. A `Matching` forget erases
    /// them with the memories, and what was derived from them.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad query.
    pub fn matching_observations(&self, ns: &Namespace, query: &str) -> Result<Vec<ObservationId>> {
        self.check_text("query", query)?;
        let (_, folded) = self.query_forms(query)?;
        let state = self.shared().state.read();
        let Some(st) = state.ns(ns) else {
            return Ok(vec![]);
        };
        let at = state.visible;
        Ok(st
            .observations
            .values()
            .filter(|o| o.id.0 <= at && folded.contains(&crate::projection::normalize_content(&o.text).to_lowercase()))
            .map(|o| o.id)
            .collect())
    }

    /// The memories a `Matching` forget would erase, with their cosine
    /// similarity to `query` (-1..=1), at most `limit` of them: first every
    /// memory still stored (active, superseded or archived) whose text is
    /// the query's (after
    /// normalisation: case, spacing, invisible characters and NFKC aside),
    /// the query taken both as given and with its personal data redacted
    /// as a write would store it (so the text the user said finds the
    /// memory stored with `[PHONE]` in its place; the cosine is the
    /// redacted query's), whatever its cosine — a question-to-memory embedding such as e5's
    /// scores a text against itself at only about 0.91–0.96 — then, best
    /// first, the other active memories whose similarity is at least
    /// `min_similarity`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad query, `min_similarity` outside
    /// -1..=1 or `limit` outside 1..=10000; [`Error::Embedder`] when the
    /// query cannot be embedded.
    pub fn matching(
        &self,
        ns: &Namespace,
        query: &str,
        min_similarity: f32,
        limit: usize,
    ) -> Result<Vec<(MemoryId, f32)>> {
        self.check_text("query", query)?;
        if !(-1.0..=1.0).contains(&min_similarity) {
            return Err(Error::out_of_range("min_similarity", -1, 1, min_similarity));
        }
        if limit == 0 || limit > 10_000 {
            return Err(Error::out_of_range("limit", 1, 10_000, limit));
        }
        let (redacted, folded) = self.query_forms(query)?;
        let qv = crate::embed::embed_query(self.inner.embedder.as_ref(), &redacted)?;
        let state = self.shared().state.read();
        let Some(st) = state.ns(ns) else {
            return Ok(vec![]);
        };
        let at = state.visible;
        let ok = |id: u64| {
            st.memories
                .get(&MemoryId(id))
                .is_some_and(|m| m.visible_at(at) && m.status_at(at) == crate::types::Status::Active)
        };
        // The text itself, case aside (a user asking to forget "i live in
        // berlin" means "I live in Berlin"), wherever it is still stored:
        // the active versions first, then older and archived ones, all
        // found through the index of versions by text.
        let mut out: Vec<(MemoryId, f32)> = Vec::new();
        let mut push = |id: MemoryId| {
            if out.len() < limit && !out.iter().any(|(e, _)| *e == id) {
                out.push((id, st.vectors.similarity(id.0, &qv).unwrap_or(0.0)));
            }
        };
        for f in &folded {
            st.same_text_any_case(f).filter(|id| ok(id.0)).for_each(&mut push);
        }
        let mut older: Vec<MemoryId> = folded
            .iter()
            .flat_map(|f| st.versions_any_case(f))
            .filter(|id| {
                st.memories.get(id).is_some_and(|m| {
                    let status = m.status_at(at);
                    m.visible_at(at)
                        && status != crate::types::Status::Active
                        && status != crate::types::Status::Forgotten
                })
            })
            .collect();
        older.sort_unstable();
        older.dedup();
        older.into_iter().for_each(push);
        let exact = out.len();
        for (id, s) in st.vectors.search(&qv, limit, &ok) {
            if out.len() >= limit || s < min_similarity {
                break;
            }
            if !out[..exact].iter().any(|(e, _)| e.0 == id) {
                out.push((MemoryId(id), s));
            }
        }
        Ok(out)
    }

    /// What [`Engine::forget`] with the same arguments would do, without
    /// writing anything: the same checks of the target and of `reason`
    /// (input rules, length, personal data redacted), and the same outcome,
    /// `quotes_cut` included, and `key_shredded` true when the forget would
    /// destroy the namespace's data key (a whole namespace of an encrypted
    /// store).
    ///
    /// # Errors
    /// As [`Engine::forget`], without the write errors.
    pub fn forget_dry_run(&self, ns: &Namespace, req: ForgetRequest, reason: &str) -> Result<ForgetOutcome> {
        let reason = self.forget_reason(reason)?;
        let (target, ids, observations) = self.resolve_forget(ns, &req)?;
        let shreds = matches!(target, ForgetTarget::Namespace) && self.shared().keys.is_some();
        let state = self.shared().state.read();
        let mut f = crate::writer::forget_preview(&state, ns, target, reason, ids, observations)?;
        f.key_shredded = shreds;
        Ok(f)
    }

    /// A forget's reason as it is stored: checked, personal data redacted
    /// (it outlives compaction in the `forgotten` event).
    pub(crate) fn forget_reason(&self, reason: &str) -> Result<String> {
        check_short("reason", reason, MAX_REASON_BYTES, true)?;
        self.redact_label("reason", reason, Some(self.label_policy()), &mut BTreeMap::new())
    }

    /// Sends an `Accessed` event for recall results without waiting. When the
    /// writer's queue is full the event is dropped (access is advisory).
    ///
    /// `requester` is who asked (personal data redacted); `session` the
    /// session the query came from (see [`crate::RecallOptions::access_session`]),
    /// stored in its one form ([`canonical_id`]). A session that is not a
    /// valid one (empty, over 128 bytes, control characters) or that holds
    /// personal data under the store's policy is left out of the event
    /// rather than stored: an identifier cannot be redacted.
    pub fn record_access(
        &self,
        ns: &Namespace,
        ids: Vec<MemoryId>,
        requester: Option<String>,
        session: Option<String>,
    ) {
        if ids.is_empty() {
            return;
        }
        let requester = requester
            .and_then(|r| self.redact_label("requester", &r, Some(self.label_policy()), &mut BTreeMap::new()).ok())
            .map(canonical_owned);
        let session = session.map(canonical_owned).filter(|s| {
            check_short("session", s, MAX_SESSION_BYTES, false).is_ok()
                && self.refuse_personal_identifier("session", s, None).is_ok()
        });
        let _ = self.inner.tx.try_send(Command::Access { ns: ns.clone(), ids, requester, session });
    }
}

/// `m` with its identifiers (key, session, kind, source reference) in
/// their one form ([`canonical_id`]), or `None` when they are in it
/// already (the builder's setters store that form).
fn canonical_fields(m: &NewMemory) -> Option<NewMemory> {
    let changed = |s: &Option<String>| s.as_deref().is_some_and(|s| matches!(canonical_id(s), Cow::Owned(_)));
    let kind_changed = m.kind.as_ref().is_some_and(|k| matches!(k.canonical(), Cow::Owned(_)));
    if !(changed(&m.key) || changed(&m.session) || changed(&m.source_ref) || kind_changed) {
        return None;
    }
    let mut c = m.clone();
    c.key = c.key.map(canonical_owned);
    c.session = c.session.map(canonical_owned);
    c.source_ref = c.source_ref.map(canonical_owned);
    c.kind = c.kind.map(|k| k.canonical().into_owned());
    Some(c)
}

/// The memory as the caller stated it, for the writer to complete
/// (defaults for a first version, inheritance for a new version).
/// The event payload of `m` with the fields the safety stage changed
/// (content, entities, quarantine) taken from `p`, and its identifiers in
/// their one form ([`canonical_id`]).
pub(crate) fn pending_memory(m: &NewMemory, p: &Prepared) -> PendingMemory {
    let canonical = canonical_fields(m);
    let m = canonical.as_ref().unwrap_or(m);
    PendingMemory {
        content: p.text.clone(),
        kind: m.kind.clone(),
        tier: m.tier,
        importance: m.importance,
        entities: p.entities.clone().or_else(|| m.entities.clone()),
        key: m.key.clone(),
        sources: m.sources.clone(),
        session: m.session.clone(),
        event_time: m.event_time,
        source_ref: m.source_ref.clone(),
        quarantine: p.quarantine.clone(),
    }
}

/// A one-line label (session, source, entity, reason): at most `max` bytes
/// under the [`TextField::Label`] character rules; empty only when
/// `allow_empty`.
pub(crate) fn check_short(field: &'static str, s: &str, max: usize, allow_empty: bool) -> Result<()> {
    if allow_empty && s.is_empty() {
        return Ok(());
    }
    if s.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if s.len() > max {
        return Err(Error::invalid(field, format!("{} bytes, at most {max} allowed", s.len())));
    }
    Ok(check_chars(field, s, TextField::Label)?)
}

/// A slot key: `entity.attribute`, no whitespace, non-empty parts, judged
/// in its NFKC form (the form stored), which the error names when it
/// differs from what was given (`x.㏂` is `x.a.m.`, whose last part is
/// empty).
fn check_key(k: &str, max: usize) -> Result<()> {
    let form = canonical_id(k);
    let nfkc = if form == k { String::new() } else { format!(" (in NFKC {form:?})") };
    if form.len() < 3 || form.len() > max {
        return Err(Error::invalid("key", format!("must be between 3 and {max} bytes, got {}{nfkc}", form.len())));
    }
    check_chars("key", &form, TextField::Identifier)?;
    let parts: Vec<&str> = form.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return Err(Error::invalid("key", format!("{k:?}{nfkc} is not of the form entity.attribute")));
    }
    Ok(())
}

/// The personal-data policy every item of a batch sets, if they all set the
/// same one (`None`: the engine's, for the checks that are the batch's
/// rather than an item's).
fn common_policy(mut policies: impl Iterator<Item = Option<PiiPolicy>>) -> Option<PiiPolicy> {
    let first = policies.next().flatten()?;
    policies.all(|p| p == Some(first)).then_some(first)
}
