//! `mnemon eval`: recall quality on public benchmarks.

use clap::Args;
use mnemon::Result;

use crate::Cli;

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// locomo, longmemeval or madial.
    dataset: String,
    /// Path of the data file.
    path: std::path::PathBuf,
}

pub fn run(_cli: &Cli, _args: &EvalArgs) -> Result<()> {
    Err(mnemon::Error::invalid("eval", "not available in this build"))
}
