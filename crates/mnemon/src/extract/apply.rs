//! Validation and application of an extraction result.
//!
//! The document is checked as a whole for size and array caps, then item by
//! item: a malformed or ungrounded item is rejected with a reason while the
//! valid ones apply. Every valid item becomes one writer op and all of them
//! travel in one command, so they commit in one group; each op succeeds or
//! fails alone.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;

use crate::engine::write::{check_short, pending_memory, MAX_REASON_BYTES};
use crate::engine::{Engine, NewMemory};
use crate::error::{Error, Result};
use crate::event::{ForgetTarget, SupersedeReason};
use crate::types::{Kind, MemoryId, Namespace, ObservationId, Status, Tier};
use crate::writer::{Op, OpOutcome, RememberAction};

/// Most items in each of the three arrays of one extraction result. A
/// document with a longer array is rejected whole.
pub const MAX_EXTRACTION_ITEMS: usize = 256;
/// Largest extraction document, in bytes of JSON.
pub const MAX_EXTRACTION_BYTES: usize = 4 * 1024 * 1024;

/// Which array of the document an item came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// `new_memories`.
    NewMemories,
    /// `update_existing`.
    UpdateExisting,
    /// `forget`.
    Forget,
}

/// What happened to one item.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum ItemStatus {
    /// Written (or resolved to an existing memory, see `action`).
    Applied {
        /// The memory that now holds the content (for a forget: the memory named).
        id: MemoryId,
        /// `created`, `duplicate`, `near_duplicate`, `superseded`, `unchanged` or `forgotten`.
        action: String,
    },
    /// Not applied.
    Rejected {
        /// Why.
        reason: String,
    },
}

/// The outcome of one item of the document.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ItemOutcome {
    /// Array the item came from.
    pub section: Section,
    /// Position in that array.
    pub index: usize,
    /// What happened.
    #[serde(flatten)]
    pub status: ItemStatus,
}

/// Per-item outcomes of [`Engine::apply_extraction`], in document order.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ExtractionReport {
    /// One entry per item.
    pub items: Vec<ItemOutcome>,
}

impl ExtractionReport {
    /// Items applied.
    pub fn applied(&self) -> usize {
        self.items.iter().filter(|i| matches!(i.status, ItemStatus::Applied { .. })).count()
    }

    /// Items rejected.
    pub fn rejected(&self) -> usize {
        self.items.len() - self.applied()
    }
}

#[derive(Deserialize)]
struct NewItem {
    content: String,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    tier: Option<String>,
    #[serde(default)]
    importance: Option<f32>,
    #[serde(default)]
    entities: Option<Vec<String>>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    source_ids: Vec<u64>,
}

#[derive(Deserialize)]
struct UpdateItem {
    memory_id: u64,
    new_content: String,
    #[serde(default)]
    importance: Option<f32>,
}

#[derive(Deserialize)]
struct ForgetItem {
    memory_id: u64,
    #[serde(default)]
    reason: Option<String>,
}

fn array<'a>(doc: &'a serde_json::Map<String, Value>, name: &'static str) -> Result<&'a [Value]> {
    match doc.get(name) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => {
            if a.len() > MAX_EXTRACTION_ITEMS {
                return Err(Error::invalid(
                    "extraction",
                    format!("{name} has {} items, at most {MAX_EXTRACTION_ITEMS} allowed", a.len()),
                ));
            }
            Ok(a)
        }
        Some(_) => Err(Error::invalid("extraction", format!("{name} must be an array"))),
    }
}

/// An item waiting for the writer: its place in the report and its op.
struct Pending {
    slot: usize,
    op: Op,
}

impl Engine {
    /// Applies an LLM's answer to [`Engine::extraction_prompt`]: a JSON object
    /// `{"new_memories":[{"content","kind","tier","importance","entities","key","source_ids"}],
    /// "update_existing":[{"memory_id","new_content","importance"}],
    /// "forget":[{"memory_id","reason"}]}` (every array optional).
    ///
    /// Each item is validated alone and rejected with a reason when it is
    /// malformed, out of range, names an id that is not in `ns`, or (a new
    /// memory) cites no observation of `ns` in `source_ids`. A memory named
    /// both in `update_existing` and `forget` is rejected in both; a repeated
    /// id is applied once and its repeats rejected; an update with unchanged
    /// content is a no-op. The valid items are written in one command (one
    /// group commit): new memories as `Extracted` (deduplicated as by
    /// [`Engine::remember`]), updates as `Extracted` + `Superseded`
    /// (reason `extraction`), forgets as `Forgotten` (whole version chain).
    /// A new memory takes the session of its first source observation. An
    /// update, and a new memory under a slot key that an active memory
    /// holds, inherit what they do not state from the version they replace
    /// (kind, tier, importance, session, sources, entities still named in
    /// the new content; see [`NewMemory`]).
    ///
    /// ```
    /// # fn main() -> mnemon::Result<()> {
    /// use mnemon::{Engine, Namespace, NewObservation, Role};
    /// let dir = tempfile::tempdir()?;
    /// let engine = Engine::open(dir.path())?;
    /// let ns = Namespace::new("u1")?;
    /// let obs = engine.observe(&ns, NewObservation::new("s1", Role::User, "I moved to Lisbon"))?;
    /// let answer = format!(
    ///     r#"{{"new_memories":[{{"content":"The user lives in Lisbon","key":"user.city","source_ids":[{obs}]}}]}}"#
    /// );
    /// let report = engine.apply_extraction(&ns, &answer)?;
    /// assert_eq!((report.applied(), report.rejected()), (1, 0));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for malformed JSON, a document larger than
    /// [`MAX_EXTRACTION_BYTES`], a non-object top level, a top-level key
    /// other than the three sections that holds a non-empty array (a
    /// misnamed section), or an array longer
    /// than [`MAX_EXTRACTION_ITEMS`] (nothing is written);
    /// [`Error::Poisoned`] / [`Error::Closed`].
    pub fn apply_extraction(&self, ns: &Namespace, json: &str) -> Result<ExtractionReport> {
        const SECTIONS: [&str; 3] = ["new_memories", "update_existing", "forget"];
        if json.len() > MAX_EXTRACTION_BYTES {
            return Err(Error::invalid(
                "extraction",
                format!("{} bytes, at most {MAX_EXTRACTION_BYTES} allowed", json.len()),
            ));
        }
        let doc: Value =
            serde_json::from_str(json).map_err(|e| Error::invalid("extraction", format!("malformed JSON: {e}")))?;
        let Value::Object(doc) = doc else {
            return Err(Error::invalid("extraction", "the top level must be a JSON object"));
        };
        let new_items = array(&doc, "new_memories")?;
        let updates = array(&doc, "update_existing")?;
        let forgets = array(&doc, "forget")?;
        // A misnamed section ("memories", "new") would be read as no items
        // and its items lost without a word: refused. Other stray keys (a
        // model's "notes" or "reasoning", an empty list) are passed over.
        if let Some((k, _)) =
            doc.iter().find(|(k, v)| !SECTIONS.contains(&k.as_str()) && v.as_array().is_some_and(|a| !a.is_empty()))
        {
            return Err(Error::invalid(
                "extraction",
                format!("unknown section {k:?}: the answer's sections are new_memories, update_existing and forget"),
            ));
        }

        let mut report = ExtractionReport::default();
        let reject = |report: &mut ExtractionReport, section, index, reason: String| {
            report.items.push(ItemOutcome { section, index, status: ItemStatus::Rejected { reason } });
        };

        // Ids named by updates and by forgets, to refuse contradictions.
        let ids_in = |items: &[Value]| -> BTreeSet<u64> {
            items.iter().filter_map(|v| v.get("memory_id").and_then(Value::as_u64)).collect()
        };
        let (updated_ids, forgotten_ids) = (ids_in(updates), ids_in(forgets));
        let contradicted: BTreeSet<u64> = updated_ids.intersection(&forgotten_ids).copied().collect();

        // New memories.
        let mut pending: Vec<Pending> = Vec::new();
        let mut to_embed: Vec<(usize, NewMemory, Option<crate::Memory>, SupersedeReason)> = Vec::new();
        for (i, v) in new_items.iter().enumerate() {
            let item: NewItem = match serde_json::from_value(v.clone()) {
                Ok(x) => x,
                Err(e) => {
                    reject(
                        &mut report,
                        Section::NewMemories,
                        i,
                        format!("malformed item: {}", crate::error::plain_json_words(&e.to_string())),
                    );
                    continue;
                }
            };
            match self.new_item(ns, item) {
                Ok(m) => {
                    let slot = report.items.len();
                    report.items.push(ItemOutcome {
                        section: Section::NewMemories,
                        index: i,
                        status: ItemStatus::Rejected { reason: "not applied".into() },
                    });
                    to_embed.push((slot, m, None, SupersedeReason::Extraction));
                }
                Err(e) => reject(&mut report, Section::NewMemories, i, e.to_string()),
            }
        }

        // Updates.
        let mut seen = BTreeSet::new();
        for (i, v) in updates.iter().enumerate() {
            let item: UpdateItem = match serde_json::from_value(v.clone()) {
                Ok(x) => x,
                Err(e) => {
                    reject(
                        &mut report,
                        Section::UpdateExisting,
                        i,
                        format!("malformed item: {}", crate::error::plain_json_words(&e.to_string())),
                    );
                    continue;
                }
            };
            if contradicted.contains(&item.memory_id) {
                reject(
                    &mut report,
                    Section::UpdateExisting,
                    i,
                    format!("memory {} is both updated and forgotten; neither applied", item.memory_id),
                );
                continue;
            }
            if !seen.insert(item.memory_id) {
                reject(
                    &mut report,
                    Section::UpdateExisting,
                    i,
                    format!("memory {} repeated; applied once", item.memory_id),
                );
                continue;
            }
            match self.update_item(ns, &item) {
                Ok((base, m)) => {
                    let slot = report.items.len();
                    report.items.push(ItemOutcome {
                        section: Section::UpdateExisting,
                        index: i,
                        status: ItemStatus::Rejected { reason: "not applied".into() },
                    });
                    to_embed.push((slot, m, Some(base), SupersedeReason::Extraction));
                }
                Err(e) => reject(&mut report, Section::UpdateExisting, i, e.to_string()),
            }
        }

        // Embed new and updated content in one batch.
        if !to_embed.is_empty() {
            let prepared: Vec<Result<crate::engine::write::Prepared>> =
                to_embed.iter().map(|(_, m, _, _)| self.check_memory(m)).collect();
            let mut ok_idx = Vec::new();
            for (k, p) in prepared.iter().enumerate() {
                if let Err(e) = p {
                    report.items[to_embed[k].0].status = ItemStatus::Rejected { reason: e.to_string() };
                } else {
                    ok_idx.push(k);
                }
            }
            let pairs: Vec<(&NewMemory, &crate::engine::write::Prepared)> =
                ok_idx.iter().filter_map(|&k| prepared[k].as_ref().ok().map(|p| (&to_embed[k].1, p))).collect();
            let vectors = self.vectors_for(&pairs)?;
            for (&k, v) in ok_idx.iter().zip(vectors) {
                let (slot, m, base, reason) = &to_embed[k];
                let Ok(p) = &prepared[k] else { continue };
                let mem = pending_memory(m, p);
                let op = match base {
                    None => Op::Remember { mem, vector: Some(v), dedup: m.dedup, threshold: self.dedup_threshold() },
                    Some(b) => Op::Supersede { old: b.id, mem, vector: v, reason: reason.clone() },
                };
                pending.push(Pending { slot: *slot, op });
            }
        }

        // Forgets.
        let mut seen = BTreeSet::new();
        for (i, v) in forgets.iter().enumerate() {
            let item: ForgetItem = match serde_json::from_value(v.clone()) {
                Ok(x) => x,
                Err(e) => {
                    reject(
                        &mut report,
                        Section::Forget,
                        i,
                        format!("malformed item: {}", crate::error::plain_json_words(&e.to_string())),
                    );
                    continue;
                }
            };
            if contradicted.contains(&item.memory_id) {
                reject(
                    &mut report,
                    Section::Forget,
                    i,
                    format!("memory {} is both updated and forgotten; neither applied", item.memory_id),
                );
                continue;
            }
            if !seen.insert(item.memory_id) {
                reject(&mut report, Section::Forget, i, format!("memory {} repeated; applied once", item.memory_id));
                continue;
            }
            let reason = item.reason.unwrap_or_else(|| "extraction".into());
            if let Err(e) = check_short("reason", &reason, MAX_REASON_BYTES, true) {
                reject(&mut report, Section::Forget, i, e.to_string());
                continue;
            }
            let id = MemoryId(item.memory_id);
            if let Err(e) = self.get(ns, id) {
                reject(&mut report, Section::Forget, i, e.to_string());
                continue;
            }
            let slot = report.items.len();
            report.items.push(ItemOutcome {
                section: Section::Forget,
                index: i,
                status: ItemStatus::Rejected { reason: "not applied".into() },
            });
            pending.push(Pending {
                slot,
                op: Op::Forget {
                    target: ForgetTarget::Memory(id),
                    reason,
                    requester: Some("extraction".into()),
                    ids: vec![],
                    observations: vec![],
                },
            });
        }

        if pending.is_empty() {
            return Ok(report);
        }
        let (slots, ops): (Vec<usize>, Vec<Op>) = pending.into_iter().map(|p| (p.slot, p.op)).unzip();
        let forget_ids: BTreeMap<usize, MemoryId> = slots
            .iter()
            .zip(&ops)
            .filter_map(|(s, o)| match o {
                Op::Forget { target: ForgetTarget::Memory(id), .. } => Some((*s, *id)),
                _ => None,
            })
            .collect();
        let results = self.run(ns, ops)?;
        for (slot, r) in slots.into_iter().zip(results) {
            report.items[slot].status = match r {
                Ok(OpOutcome::Remembered { id, action }) => ItemStatus::Applied { id, action: action_name(&action) },
                Ok(OpOutcome::Forgot(f)) => {
                    let id = forget_ids.get(&slot).copied().unwrap_or(MemoryId(0));
                    if f.memories == 0 {
                        ItemStatus::Rejected { reason: format!("memory {id} was already forgotten") }
                    } else {
                        ItemStatus::Applied { id, action: "forgotten".into() }
                    }
                }
                Ok(other) => ItemStatus::Rejected { reason: format!("unexpected outcome {other:?}") },
                Err(e) => ItemStatus::Rejected { reason: e.to_string() },
            };
        }
        Ok(report)
    }

    fn new_item(&self, ns: &Namespace, item: NewItem) -> Result<NewMemory> {
        if item.source_ids.is_empty() {
            return Err(Error::invalid("source_ids", "ungrounded: a new memory must cite at least one observation"));
        }
        let mut session = None;
        {
            let state = self.shared().state.read();
            let st = state.ns(ns);
            for s in &item.source_ids {
                let o = st
                    .and_then(|st| st.observations.get(&ObservationId(*s)))
                    .filter(|o| o.id.0 <= state.visible)
                    .ok_or_else(|| Error::not_found(format!("observation {s} in namespace {ns}")))?;
                if session.is_none() {
                    session = Some(o.session.clone());
                }
            }
        }
        let mut m = NewMemory::new(item.content).sources(item.source_ids.iter().map(|s| ObservationId(*s)));
        if let Some(k) = item.kind {
            m = m.kind(k.parse::<Kind>()?);
        }
        if let Some(t) = item.tier {
            m = m.tier(t.parse::<Tier>()?);
        }
        if let Some(i) = item.importance {
            m = m.importance(i);
        }
        if let Some(e) = item.entities {
            m = m.entities(e);
        }
        if let Some(k) = item.key {
            m = m.key(k);
        }
        if let Some(s) = session {
            m = m.session(s);
        }
        Ok(m)
    }

    fn update_item(&self, ns: &Namespace, item: &UpdateItem) -> Result<(crate::Memory, NewMemory)> {
        let id = MemoryId(item.memory_id);
        let base = self.get(ns, id)?;
        if base.status != Status::Active {
            let latest = self.history(ns, id)?.last().map(|m| m.id).unwrap_or(id);
            return Err(Error::Conflict(format!("memory {id} is {} (latest version: {latest})", base.status)));
        }
        let mut m = NewMemory::new(item.new_content.clone());
        if let Some(i) = item.importance {
            m = m.importance(i);
        }
        Ok((base, m))
    }
}

fn action_name(a: &RememberAction) -> String {
    match a {
        RememberAction::Created => "created",
        RememberAction::Duplicate => "duplicate",
        RememberAction::NearDuplicate { .. } => "near_duplicate",
        RememberAction::Superseded { .. } => "superseded",
        RememberAction::Unchanged => "unchanged",
    }
    .into()
}
