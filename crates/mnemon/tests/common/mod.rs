//! Helpers shared by the test binaries: the data directory, installed models.
#![allow(dead_code)]

pub mod block;
pub mod models;

mod files;

#[allow(unused_imports)]
pub use files::{files_containing, files_under};
