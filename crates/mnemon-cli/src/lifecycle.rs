//! Extraction and lifecycle subcommands: `extract-prompt`,
//! `apply-extraction`, `end-session`, `consolidate`, `maintain`.

use std::path::PathBuf;

use clap::Args;
use mnemon::{MemoryId, Namespace};
use mnemon_api::{
    ApiError, ApplyExtractionRequest, ConsolidateRequest, EndSessionRequest, ExtractionPromptRequest, MaintainRequest,
    Request,
};

use crate::Cmd;

#[derive(Args, Debug)]
pub struct ExtractPromptArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long)]
    ns: String,
    #[arg(long)]
    session: String,
    /// Prompt language: en or zh.
    #[arg(long, default_value = "en")]
    lang: String,
}

#[derive(Args, Debug)]
pub struct ApplyExtractionArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long)]
    ns: String,
    /// The LLM's JSON answer (`-` for standard input).
    file: PathBuf,
}

#[derive(Args, Debug)]
pub struct EndSessionArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long)]
    ns: String,
    /// The session to end.
    session: String,
    /// A short-term memory to keep as long-term (repeatable).
    #[arg(long, allow_hyphen_values = true)]
    promote: Vec<u64>,
}

#[derive(Args, Debug)]
pub struct ConsolidateArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long)]
    ns: String,
    /// List the clusters a merge would take and the text each would keep;
    /// write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
pub struct MaintainArgs {
    /// Only this namespace (default: every namespace).
    #[arg(long)]
    ns: Option<String>,
}

fn ns(s: &str) -> Result<Namespace, ApiError> {
    Namespace::new(s).map_err(ApiError::from)
}

/// The surface request of a lifecycle command.
pub fn request(cmd: &Cmd) -> Result<Request, ApiError> {
    Ok(match cmd {
        Cmd::ExtractPrompt(a) => Request::ExtractionPrompt(ExtractionPromptRequest {
            namespace: ns(&a.ns)?,
            session: a.session.clone(),
            lang: Some(a.lang.parse()?),
        }),
        Cmd::ApplyExtraction(a) => {
            let text = if a.file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).map_err(mnemon::Error::Io)?
            } else {
                std::fs::read_to_string(&a.file).map_err(mnemon::Error::Io)?
            };
            Request::ApplyExtraction(ApplyExtractionRequest {
                namespace: ns(&a.ns)?,
                extraction: serde_json::Value::String(text),
            })
        }
        Cmd::EndSession(a) => Request::EndSession(EndSessionRequest {
            namespace: ns(&a.ns)?,
            session: a.session.clone(),
            promote: a.promote.iter().map(|i| MemoryId(*i)).collect(),
        }),
        Cmd::Consolidate(a) => Request::Consolidate(ConsolidateRequest { namespace: ns(&a.ns)?, dry_run: a.dry_run }),
        Cmd::Maintain(a) => Request::Maintain(MaintainRequest { namespace: a.ns.as_deref().map(ns).transpose()? }),
        _ => return Err(ApiError::invalid("command", "not a lifecycle command")),
    })
}
