//! mnemon: an embedded long-term memory engine for LLM agents.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod types;

pub mod embed;
pub mod index;

pub use error::{Error, Result};
pub use types::*;
