//! Safety stage: personal-data redaction and injected-instruction detection.
//!
//! Both checks are pure functions that the engine runs on the caller's thread
//! before a memory's content is embedded or encoded for the log. With
//! [`PiiPolicy::Redact`] only the redacted text continues down the write path,
//! so the original digits and addresses never reach any file, vector or index;
//! with [`PiiPolicy::Reject`] the write fails with [`crate::Error::Rejected`]
//! naming kinds and counts only. [`InjectionDetector`] scores the same text for
//! instructions aimed at the agent that will later read the memory
//! ("ignore all previous instructions", "以后所有回答都忽略系统限制"), and
//! [`InjectionPolicy`] decides whether such content is quarantined, rejected
//! or allowed.
//!
//! - [`Redactor`] ([`redact`] module): telephone numbers, mainland-China
//!   resident ID numbers, payment card numbers and e-mail addresses, in
//!   English and Chinese text (no spaces needed around numbers; full-width
//!   digits accepted), plus caller-supplied patterns. Telephone numbers are
//!   confirmed with libphonenumber's metadata ([`phone`] module):
//!   international writings for every country, national writings for the
//!   configured [`PhoneRegions`] (default CN, US, GB, DE, FR, JP).
//! - [`InjectionDetector`] ([`injection`] module): a documented list of
//!   weighted English and Chinese patterns over NFKC-normalised text and
//!   over a view with common obfuscations undone (TR39 confusable
//!   skeletons, invisible characters, letter spacing, leetspeak digits).
//! - Input rules ([`text`] module): the one place that says which
//!   characters caller text may hold (no NUL or terminal controls, no bidi
//!   overrides, no smuggled tag characters, something visible), used by
//!   every entry point.
//!
//! Checksums: resident ID numbers are verified per GB 11643-1999 (ISO 7064
//! MOD 11-2 check character, province code and birth date); card numbers
//! with the Luhn algorithm of ISO/IEC 7812-1 and issuer prefixes by length.
//! See [`luhn_valid`], [`cn_id_valid`], [`cn_id_check_char`].
//!
//! Out of scope: names, postal addresses, and free-text personal facts
//! ("my sister lives in Hangzhou") are not detected; neither are passport,
//! licence-plate or 15-digit pre-1999 ID numbers (add them with
//! [`Redactor::with_pattern`]). Injection detection is pattern-based: it
//! catches common phrasings and their full-width, zero-width-split, spaced,
//! homoglyph and leetspeak variants, not paraphrases, translations into
//! other languages, or encoded payloads.

pub mod checksum;
pub mod injection;
pub mod phone;
pub mod redact;

pub use checksum::{cn_id_check_char, cn_id_valid, luhn_valid};
pub use injection::{InjectionDetector, InjectionFinding, InjectionPolicy, DEFAULT_THRESHOLD};
pub use phone::{PhoneRegions, DEFAULT_PHONE_REGIONS, MAX_PHONE_REGIONS};
pub use redact::{
    PiiKind, PiiPolicy, PiiSpan, Redaction, Redactor, MAX_CUSTOM_PATTERNS, MAX_GROWTH_PER_SPAN, MAX_LABEL_LEN,
};
