//! The `mnemon` command-line tool: every operation of the command surface
//! (`mnemon_api`), plus the demo, the benchmark evaluation and the model
//! installer.

// Standard output goes through `out::write`, so a closed pipe ends the
// output instead of panicking; these shadow the prelude's macros in every
// module below.
macro_rules! println {
    () => {
        $crate::out::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*), true)
    };
}
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*), false)
    };
}

mod commands;
mod demo;
mod eval;
mod fresh;
mod lifecycle;
mod out;
mod output;
#[cfg(unix)]
mod serve;
mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `--data` when neither the flag nor `MNEMON_DATA` is given.
pub const DEFAULT_DATA: &str = "./mnemon-data";

/// mnemon: long-term memory for LLM agents.
#[derive(Parser, Debug)]
#[command(name = "mnemon", version, about)]
pub struct Cli {
    /// Data directory of the store.
    #[arg(long, global = true, env = "MNEMON_DATA", default_value = DEFAULT_DATA)]
    pub data: PathBuf,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Embedder: auto (an existing store keeps its model; a new store gets
    /// e5-small if installed, else bge-small-en, else MiniLM, and is refused
    /// when none is), hashing (lexical only: recalls by exact words),
    /// minilm, e5-small, bge-small-en (English only), or a provider:
    /// openai:MODEL[@BASE_URL][?OPTIONS] (any OpenAI-compatible
    /// /embeddings), ollama:MODEL[@BASE_URL]; the API key comes from
    /// MNEMON_EMBEDDER_API_KEY or OPENAI_API_KEY.
    #[arg(long, global = true, env = "MNEMON_EMBEDDER", default_value = "auto")]
    pub embedder: String,
    /// Rerank provider for recall and context: rerank:MODEL@BASE_URL[?depth=N]
    /// (a Cohere/Jina-shaped /rerank, as TEI and Infinity serve); the key
    /// comes from MNEMON_RERANKER_API_KEY. Default: none.
    #[arg(long, global = true, env = "MNEMON_RERANKER", default_value = "")]
    pub reranker: String,
    /// Directory of installed models (default: $MNEMON_MODELS, else
    /// $XDG_DATA_HOME/mnemon/models, else ~/.local/share/mnemon/models).
    #[arg(long, global = true)]
    pub models: Option<PathBuf>,
    /// Regions whose national phone-number formats redaction reads, as
    /// comma-separated ISO 3166-1 alpha-2 codes; an empty value reads only
    /// numbers written with + or 00.
    #[arg(
        long,
        global = true,
        env = "MNEMON_PHONE_REGIONS",
        value_delimiter = ',',
        default_values = mnemon::safety::DEFAULT_PHONE_REGIONS
    )]
    pub phone_regions: Vec<String>,
    /// Key file of an encrypted store: 64 hex digits (`mnemon key new
    /// FILE` writes one). A store created with a key is encrypted at rest
    /// and opens only with it. Without this flag the key is read from
    /// MNEMON_KEY (the same 64 hex digits) when that is set.
    #[arg(long, global = true, env = "MNEMON_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// The keyring (DATA/KEYRING) of the store an encrypted backup or
    /// restore was made from, to open that copy (copies carry none, so a
    /// shred in the original reaches them).
    #[arg(long, global = true, env = "MNEMON_KEYRING")]
    pub keyring: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Cmd,
}

impl Cli {
    /// The `--phone-regions` codes, blanks dropped (validated when the
    /// engine opens).
    pub fn phone_region_codes(&self) -> impl Iterator<Item = &str> {
        self.phone_regions.iter().map(|c| c.trim()).filter(|c| !c.is_empty())
    }
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run a scripted multi-session agent conversation (English and Chinese)
    /// against a fresh store and show what mnemon remembers, recalls and forgets.
    Demo(demo::DemoArgs),
    /// Measure recall quality on a public benchmark (locomo, longmemeval,
    /// madial), the built-in cross-lingual set (crosslingual) or the
    /// built-in everyday questions, scored on the context block (everyday).
    Eval(eval::EvalArgs),
    /// Record an observation (a conversation turn or tool result).
    Observe(commands::ObserveArgs),
    /// Remember a memory; prints its id.
    Remember(commands::RememberArgs),
    /// Write a new version of a memory.
    Supersede(commands::SupersedeArgs),
    /// Show one memory.
    Get(commands::GetArgs),
    /// Show the version chain of a memory, oldest first.
    History(commands::HistoryArgs),
    /// List memories of a namespace.
    List(commands::ListArgs),
    /// Print a namespace's events as JSON lines (audit export).
    Log(commands::LogArgs),
    /// Read the store as it was at a past position or time.
    AsOf(commands::AsOfArgs),
    /// Recall memories for a query.
    Recall(commands::RecallArgs),
    /// Render a prompt block under a token budget: profile, recalled
    /// memories, recent turns of the current session.
    Context(commands::ContextArgs),
    /// Forget memories or observations.
    Forget(commands::ForgetArgs),
    /// Forget every memory and observation of a set of namespaces (a
    /// user's data), as `forget --all` does each, with a receipt per
    /// namespace; on an encrypted store each namespace's key is destroyed.
    ForgetUser(commands::ForgetUserArgs),
    /// Erase forgotten content from disk: rewrite the store without it, then
    /// scan every file for it and print the receipt (exit status 3 if any
    /// trace was found).
    Compact,
    /// Search every file of the store for texts (exit status 3 if found).
    VerifyErasure(commands::VerifyErasureArgs),
    /// Store-wide statistics.
    Stats,
    /// List the namespaces with their figures (memories by status,
    /// observations, forgotten counts).
    Namespaces(commands::NamespacesArgs),
    /// Count a namespace's events by kind in equal time buckets.
    Timeline(commands::TimelineArgs),
    /// List the stored receipts of the store's compactions, newest first
    /// (counts and digests only).
    Receipts(commands::NamespacesArgs),
    /// Print a prompt asking an LLM to extract memories from a session.
    ExtractPrompt(lifecycle::ExtractPromptArgs),
    /// Apply an LLM's extraction JSON (new, updated and forgotten memories).
    ApplyExtraction(lifecycle::ApplyExtractionArgs),
    /// End a session: archive its short-term memories, promote the marked ones.
    EndSession(lifecycle::EndSessionArgs),
    /// Merge clusters of near-duplicate memories (`--dry-run`: list them).
    Consolidate(lifecycle::ConsolidateArgs),
    /// Run decay, session expiry, capacity and consolidation now.
    Maintain(lifecycle::MaintainArgs),
    /// Bulk-load observations and memories from JSON lines, or the chat
    /// histories of LoCoMo or LongMemEval (exit status 2 if records were
    /// refused).
    Import(transfer::ImportArgs),
    /// Copy the store, consistently, while it may be in use, into a new
    /// directory (open it with --data DIR).
    Backup(transfer::BackupArgs),
    /// Write every event and vector of the store as JSON lines, for restore.
    Export(transfer::ExportArgs),
    /// Rebuild a store from an export into a new directory and compare its
    /// digest with the export's (exit status 4 if they differ).
    Restore(transfer::RestoreArgs),
    /// Verify the store: every record's checksum and decoding, a gap-free
    /// log, and projections equal to a fresh replay (exit status 4 if not).
    Check,
    /// Serve the memory tools over MCP on standard input and output (for
    /// MCP clients that start the server themselves).
    #[cfg(unix)]
    Mcp(serve::McpArgs),
    /// Serve the memory tools over MCP streamable HTTP at /mcp, a REST API
    /// under /v1 (OpenAPI document at /openapi.json), and a read-only HTML
    /// inspector of the store at /.
    #[cfg(unix)]
    Serve(serve::ServeArgs),
    /// Print the JSON Schema of each operation of the command surface
    /// (the requests and responses behind `--json`, the MCP tools and the
    /// language bindings).
    Schema(commands::SchemaArgs),
    /// Install or inspect embedding models.
    Model {
        #[command(subcommand)]
        cmd: commands::ModelCmd,
    },
    /// Key files of encrypted stores.
    Key {
        #[command(subcommand)]
        cmd: commands::KeyCmd,
    },
}

fn main() -> ExitCode {
    // An empty `MNEMON_DATA` or `MNEMON_EMBEDDER` (`MNEMON_DATA=` in a
    // shell or a unit file) means "not set": clap would read it as a
    // missing value and refuse every command, even one that names the flag
    // itself. Only these two: an empty `MNEMON_TOKEN` must still stop a
    // server, an empty `MNEMON_CLUSTER` a daemon, and an empty
    // `MNEMON_PHONE_REGIONS` means "no national numbers". No other thread
    // runs yet.
    for k in ["MNEMON_DATA", "MNEMON_EMBEDDER", "MNEMON_KEY_FILE", "MNEMON_KEYRING"] {
        if std::env::var_os(k).is_some_and(|v| v.is_empty()) {
            std::env::remove_var(k);
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return argument_error(e),
    };
    match commands::dispatch(&cli) {
        Ok(code) => code,
        Err(e) => {
            if cli.json {
                eprintln!("{}", serde_json::json!({ "error": e }));
            } else {
                eprintln!("error: {}", e.message);
            }
            ExitCode::FAILURE
        }
    }
}

/// A command line clap refuses. With `--json` anywhere before a `--`, the
/// error is the same JSON object every other error prints on stderr
/// (`{"error":{"code":"invalid_input","field":…,"message":…}}`, `field` the
/// long name of the argument without dashes, or `command` for an unknown
/// subcommand), and the exit code is clap's (2), so a script that asked for
/// JSON never has to parse clap's text. Help and version requests, and
/// every error without `--json`, print as clap prints them.
fn argument_error(e: clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let asked_json = flag_given("--json");
    let plain = number_error(&e);
    if let (Some(msg), false) = (&plain, asked_json) {
        eprintln!("error: {msg}\n\nFor more information, try '--help'.");
        return ExitCode::from(2);
    }
    if !asked_json || matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) || !e.use_stderr() {
        e.exit();
    }
    let field = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg_name(arg),
        Some(ContextValue::Strings(args)) => args.first().map(|a| arg_name(a)).unwrap_or_else(|| "command".into()),
        _ => "command".into(),
    };
    // clap's message is its first paragraph (a missing argument lists the
    // arguments on the lines below); usage and hints follow a blank line.
    let rendered = e.render().to_string();
    let head: Vec<&str> = rendered.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
    let joined = head.join(" ");
    let message = match e.kind() {
        // clap renders the whole help here; its first paragraph is the
        // command's description, not what went wrong.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "a subcommand is required; `--help` lists them".to_string()
        }
        _ => plain.unwrap_or_else(|| joined.strip_prefix("error: ").unwrap_or(&joined).to_string()),
    };
    let err = mnemon_api::ApiError { code: mnemon_api::ErrorCode::InvalidInput, message, field: Some(field) };
    eprintln!("{}", serde_json::json!({ "error": err }));
    ExitCode::from(2)
}

/// A numeric argument's value that does not parse, in plain words that
/// name the argument and say what it takes, with the range the command
/// surface declares for its field: `--top-k must be a whole number between
/// 1 and 1000, got "abc"` instead of Rust's "invalid digit found in
/// string" (and "out of range" instead of "number too large to fit in
/// target type"). `None` for any other error, which clap words itself.
fn number_error(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use std::num::{IntErrorKind, ParseFloatError, ParseIntError};
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let source = std::error::Error::source(e)?;
    let (whole, too_large) = if let Some(int) = source.downcast_ref::<ParseIntError>() {
        (true, matches!(int.kind(), IntErrorKind::PosOverflow | IntErrorKind::NegOverflow))
    } else if source.downcast_ref::<ParseFloatError>().is_some() {
        (false, false)
    } else {
        return None;
    };
    let text = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (arg, value) = (text(ContextKind::InvalidArg)?, text(ContextKind::InvalidValue)?);
    let field = arg_name(&arg);
    // A flag as it is typed (`--top-k`), a positional argument by its field.
    let name =
        if arg.starts_with("--") { arg.split([' ', '=']).next().unwrap_or(&arg).to_string() } else { field.clone() };
    let what = match command_op().and_then(|op| mnemon_api::field_bounds(&op, &field)) {
        Some(b) => b.words(),
        // Every integer argument of this CLI is unsigned.
        None if whole => "a whole number (0 or more)".to_string(),
        None => "a number".to_string(),
    };
    let out_of_range = if too_large { ", which is out of range" } else { "" };
    Some(format!("{name} must be {what}, got {value:?}{out_of_range}"))
}

/// The surface operation the command line's subcommand runs (`recall`,
/// `extract-prompt` → `extraction_prompt`), found without the parser
/// (which refused the line): the first argument that is not a global
/// option or its value.
fn command_op() -> Option<String> {
    const WITH_VALUE: &[&str] = &["--data", "--embedder", "--reranker", "--models", "--phone-regions"];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if WITH_VALUE.contains(&a.as_str()) {
            args.next();
        } else if !a.starts_with('-') {
            return Some(match a.as_str() {
                "extract-prompt" => "extraction_prompt".to_string(),
                "as-of" => "list".to_string(),
                other => other.replace('-', "_"),
            });
        }
    }
    None
}

/// Whether `flag` (`--json`, `--phone-regions`) is on the command line
/// before any `--`, alone or as `flag=value`. Arguments that are not UTF-8
/// are passed over, never a panic.
pub fn flag_given(flag: &str) -> bool {
    let eq = format!("{flag}=");
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a.to_str().is_some_and(|a| a == flag || a.starts_with(&eq)))
}

/// `--top-k <TOP_K>` → `top_k`, `<QUERY>` → `query`, `-n` → `n`; a group of
/// alternatives (`<--id <ID>|--session <SESSION>|…>`, one of which is
/// required) → `command`.
fn arg_name(arg: &str) -> String {
    // A group of alternatives, or a stray word (text given where no
    // argument takes it): no one field is at fault.
    if arg.contains('|') || !arg.starts_with(['-', '<']) {
        return "command".into();
    }
    let head = arg.split([' ', '=']).next().unwrap_or(arg);
    head.trim_start_matches('<')
        .trim_start_matches('-')
        .trim_matches(['<', '>', '.'])
        .to_ascii_lowercase()
        .replace('-', "_")
}
