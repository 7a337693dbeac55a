//! Extraction and lifecycle subcommands: `extract-prompt`,
//! `apply-extraction`, `end-session`, `consolidate`, `maintain`.

use std::path::PathBuf;

use chrono::Utc;
use clap::Args;
use mnemon::{Engine, Lang, MemoryId, Namespace, Result};

use crate::output::json;
use crate::{Cli, Cmd};

#[derive(Args, Debug)]
pub struct ExtractPromptArgs {
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
    #[arg(long)]
    ns: String,
    /// The LLM's JSON answer (`-` for standard input).
    file: PathBuf,
}

#[derive(Args, Debug)]
pub struct EndSessionArgs {
    #[arg(long)]
    ns: String,
    /// The session to end.
    session: String,
    /// A short-term memory to keep as long-term (repeatable).
    #[arg(long)]
    promote: Vec<u64>,
}

#[derive(Args, Debug)]
pub struct NsArgs {
    #[arg(long)]
    ns: String,
}

#[derive(Args, Debug)]
pub struct MaintainArgs {
    /// Only this namespace (default: every namespace).
    #[arg(long)]
    ns: Option<String>,
}

fn print<T: serde::Serialize + std::fmt::Debug>(cli: &Cli, v: &T) {
    if cli.json {
        json(v);
    } else {
        println!("{}", serde_json::to_string_pretty(v).unwrap_or_else(|_| format!("{v:?}")));
    }
}

pub fn run(cli: &Cli, engine: &Engine, cmd: &Cmd) -> Result<()> {
    match cmd {
        Cmd::ExtractPrompt(a) => {
            let p = engine.extraction_prompt(&Namespace::new(&a.ns)?, &a.session, a.lang.parse::<Lang>()?)?;
            if cli.json {
                json(&serde_json::json!({ "prompt": p }));
            } else {
                print!("{p}");
            }
        }
        Cmd::ApplyExtraction(a) => {
            let text = if a.file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).map_err(mnemon::Error::Io)?
            } else {
                std::fs::read_to_string(&a.file).map_err(mnemon::Error::Io)?
            };
            let r = engine.apply_extraction(&Namespace::new(&a.ns)?, &text)?;
            if cli.json {
                json(&r);
            } else {
                for i in &r.items {
                    println!("{:?}[{}]: {:?}", i.section, i.index, i.status);
                }
                println!("applied {}, rejected {}", r.applied(), r.rejected());
            }
        }
        Cmd::EndSession(a) => {
            let ids: Vec<MemoryId> = a.promote.iter().map(|i| MemoryId(*i)).collect();
            print(cli, &engine.end_session(&Namespace::new(&a.ns)?, &a.session, &ids)?);
        }
        Cmd::Consolidate(a) => print(cli, &engine.consolidate(&Namespace::new(&a.ns)?, None)?),
        Cmd::Maintain(a) => match &a.ns {
            Some(n) => print(cli, &engine.maintain(&Namespace::new(n)?, Utc::now())?),
            None => {
                let all: Vec<_> = engine
                    .maintain_all(Utc::now())?
                    .into_iter()
                    .map(|(ns, r)| serde_json::json!({ "ns": ns, "report": r }))
                    .collect();
                print(cli, &all);
            }
        },
        _ => {}
    }
    Ok(())
}
