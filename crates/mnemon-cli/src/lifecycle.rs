//! Extraction and lifecycle subcommands: `extract-prompt`,
//! `apply-extraction`, `end-session`, `consolidate`, `maintain`.

use std::path::PathBuf;

use clap::Args;
use mnemon::MemoryId;
use mnemon_api::{
    ApiError, ApplyExtractionRequest, ConsolidateRequest, EndSessionRequest, ExtractionPromptRequest, MaintainRequest,
    Request,
};

use crate::commands::{field_error, ns};
use crate::Cmd;

#[derive(Args, Debug)]
pub struct ExtractPromptArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// The session whose observations to extract memories from.
    #[arg(long)]
    session: String,
    /// Prompt language: en or zh.
    #[arg(long, default_value = "en")]
    lang: String,
}

#[derive(Args, Debug)]
pub struct ApplyExtractionArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// The LLM's JSON answer (`-` for standard input).
    file: PathBuf,
}

#[derive(Args, Debug)]
pub struct EndSessionArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// The session to end.
    session: String,
    /// A short-term memory to keep as long-term (repeatable).
    #[arg(long, allow_hyphen_values = true)]
    promote: Vec<u64>,
}

#[derive(Args, Debug)]
pub struct ConsolidateArgs {
    /// Namespace (1–128 characters of [A-Za-z0-9_.:@-]).
    #[arg(long, alias = "ns")]
    namespace: String,
    /// List the clusters a merge would take and the text each would keep;
    /// write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
pub struct MaintainArgs {
    /// Only this namespace (default: every namespace).
    #[arg(long, alias = "ns")]
    namespace: Option<String>,
}

/// The surface request of a lifecycle command.
pub fn request(cmd: &Cmd) -> Result<Request, ApiError> {
    Ok(match cmd {
        Cmd::ExtractPrompt(a) => Request::ExtractionPrompt(ExtractionPromptRequest {
            namespace: ns(&a.namespace)?,
            session: a.session.clone(),
            lang: Some(a.lang.parse().map_err(|e| field_error("lang", e))?),
        }),
        Cmd::ApplyExtraction(a) => {
            let text = if a.file.as_os_str() == "-" {
                crate::commands::text_arg("extraction", "-")?
            } else {
                crate::transfer::read_file("extraction", &a.file)?
            };
            Request::ApplyExtraction(ApplyExtractionRequest {
                namespace: ns(&a.namespace)?,
                extraction: serde_json::Value::String(text),
            })
        }
        Cmd::EndSession(a) => Request::EndSession(EndSessionRequest {
            namespace: ns(&a.namespace)?,
            session: a.session.clone(),
            promote: a.promote.iter().map(|i| MemoryId(*i)).collect(),
        }),
        Cmd::Consolidate(a) => {
            Request::Consolidate(ConsolidateRequest { namespace: ns(&a.namespace)?, dry_run: a.dry_run })
        }
        Cmd::Maintain(a) => {
            Request::Maintain(MaintainRequest { namespace: a.namespace.as_deref().map(ns).transpose()? })
        }
        _ => return Err(ApiError::invalid("command", "not a lifecycle command")),
    })
}
