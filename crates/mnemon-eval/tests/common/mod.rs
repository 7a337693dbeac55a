//! Helpers shared by the evaluation test binaries.
#![allow(dead_code)]

pub mod overlap;
