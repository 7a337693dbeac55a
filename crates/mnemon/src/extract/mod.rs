//! The extraction contract: a prompt that shows a session and the related
//! current memories to an LLM the caller runs, and the validated
//! application of the JSON it answers with. Plus a rule extractor for
//! explicit statements that needs no model.
//!
//! mnemon never calls a model itself: [`crate::Engine::extraction_prompt`]
//! returns text, the caller sends it wherever it likes, and
//! [`crate::Engine::apply_extraction`] takes the answer back.

mod apply;
mod prompt;
mod rules;

pub use apply::{ExtractionReport, ItemOutcome, ItemStatus, Section, MAX_EXTRACTION_BYTES, MAX_EXTRACTION_ITEMS};
pub use prompt::Lang;
pub use rules::{rule_extract, RuleCandidate, RuleObservation};
