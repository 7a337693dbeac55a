//! Forgetting a set of namespaces in one call: every namespace a user's
//! data lives in, emptied as [`crate::ForgetRequest::All`] empties one.

use std::collections::HashMap;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::ForgetTarget;
use crate::types::Namespace;
use crate::writer::{Command, ForgetOutcome, Op, OpOutcome};

/// Most namespaces one [`Engine::forget_namespaces`] call forgets.
pub const MAX_FORGET_NAMESPACES: usize = 1000;

impl Engine {
    /// Forgets every memory and observation of each namespace of
    /// `namespaces`, each as [`Engine::forget`] with [`crate::ForgetRequest::All`]
    /// does, under one `reason`; on an encrypted store each namespace's
    /// data key is destroyed (crypto-shredding) once its forget is durable.
    /// Returns one outcome per namespace, in the order given.
    ///
    /// Every namespace is checked before anything is written: an empty
    /// set, more than [`MAX_FORGET_NAMESPACES`], a namespace named twice or
    /// a bad reason is [`Error::InvalidInput`]; a namespace nothing was ever
    /// written to is [`Error::NotFound`]; in each case nothing is written.
    /// A namespace emptied before answers zero counts. The forgets go to
    /// the writer together, so they usually share one group commit, but
    /// each namespace's forget is atomic on its own, not the set: should
    /// the disk fail part way, the namespaces already forgotten stay
    /// forgotten, the call fails, and calling it again with the same set
    /// finishes the rest (answering zero counts for those done).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `namespaces` or `reason`) and
    /// [`Error::NotFound`] as above, nothing written;
    /// [`Error::Poisoned`] / [`Error::Closed`] / [`Error::Cancelled`];
    /// [`Error::Io`] / [`Error::Storage`] for the flush that shreds keys.
    pub fn forget_namespaces(&self, namespaces: &[Namespace], reason: &str) -> Result<Vec<ForgetOutcome>> {
        if namespaces.is_empty() {
            return Err(Error::invalid("namespaces", "must name at least one namespace"));
        }
        if namespaces.len() > MAX_FORGET_NAMESPACES {
            return Err(Error::invalid(
                "namespaces",
                format!("may name at most {MAX_FORGET_NAMESPACES} namespaces, got {}", namespaces.len()),
            ));
        }
        let mut seen: HashMap<&Namespace, usize> = HashMap::new();
        for (i, ns) in namespaces.iter().enumerate() {
            if let Some(first) = seen.insert(ns, i) {
                return Err(Error::invalid(
                    "namespaces",
                    format!("names {ns} twice (at {first} and {i}); name each namespace once"),
                ));
            }
        }
        let reason = self.forget_reason(reason)?;
        {
            let state = self.shared().state.read();
            if let Some(ns) = namespaces.iter().find(|ns| state.ns(ns).is_none()) {
                return Err(Error::not_found(format!("namespace {ns} (nothing was ever written to it)")));
            }
        }
        if let Some(msg) = self.shared().poison_message() {
            return Err(Error::Poisoned(msg));
        }
        if let Some(e) = self.shared().read_only_error() {
            return Err(e);
        }
        let cancel = self.cancel_token().cloned();
        if cancel.as_ref().is_some_and(crate::CancelToken::is_cancelled) {
            return Err(Error::Cancelled);
        }
        // All commands are queued before the first reply is awaited, so the
        // writer takes them into as few groups as it can.
        let mut replies = Vec::with_capacity(namespaces.len());
        for ns in namespaces {
            let (tx, rx) = crossbeam_channel::bounded(1);
            let op = Op::Forget {
                target: ForgetTarget::Namespace,
                reason: reason.clone(),
                requester: None,
                ids: vec![],
                observations: vec![],
            };
            self.send(Command::Write { ns: ns.clone(), ops: vec![op], reply: tx, cancel: cancel.clone() })?;
            replies.push(rx);
        }
        let mut outcomes = Vec::with_capacity(namespaces.len());
        let mut first_error = None;
        for rx in replies {
            let outcome = rx.recv().map_err(|_| Error::Closed).and_then(|r| r?.pop().unwrap_or(Err(Error::Closed)));
            match outcome {
                Ok(OpOutcome::Forgot(f)) => outcomes.push(f),
                Ok(other) => {
                    first_error.get_or_insert(Error::Storage(format!("unexpected outcome {other:?}").into()));
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let shreds = self.shared().keys.is_some();
        if shreds {
            // The flush that makes the forgets durable destroys the keys.
            self.sync()?;
        }
        for f in &mut outcomes {
            f.key_shredded = shreds;
        }
        Ok(outcomes)
    }
}
