//! `import`, `backup`, `export` and `restore`: moving data in and out of a
//! store. Each builds a surface request (`mnemon_api`) or, where the CLI
//! does the work itself (an import with a progress bar, a restore that
//! creates a new store), calls the same library function and prints the
//! same response type.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use mnemon::portability::{ImportOptions, ImportSummary};
use mnemon_api::{self as api, ApiError, BackupRequest, ExportRequest, ImportRequest, Request, Response};

use crate::output;
use crate::Cli;

/// Exit status of an import that refused records (or aborted).
const IMPORT_REJECTED: u8 = 2;
/// Exit status of a restore whose digest differs from the export's.
const DIGEST_MISMATCH: u8 = 4;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Namespace to import into.
    #[arg(long, alias = "ns")]
    namespace: String,
    /// jsonl (docs/FORMAT.md, "Import"), locomo (locomo10.json),
    /// longmemeval (its JSON lines), mcp-memory (the MCP memory server's
    /// memory.jsonl), mem0 (mem0 memories: get_all() results, the
    /// platform's list, JSON lines) or langgraph (a LangGraph store dump,
    /// Item.dict() per item; the namespace is the MnemonStore prefix, lg by
    /// default). A .gz file is read as gzip.
    #[arg(long, default_value = "jsonl")]
    format: String,
    /// skip: report bad records and import the good ones; abort: report
    /// every bad record and write nothing.
    #[arg(long, default_value = "skip")]
    on_error: String,
    /// Check and count everything, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Records per group commit.
    #[arg(long, default_value_t = mnemon::portability::DEFAULT_IMPORT_BATCH, allow_hyphen_values = true)]
    batch: usize,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// The file to import (`-`: read standard input).
    path: PathBuf,
}

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// A new or empty directory for the copy.
    dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A new file for the export (JSON lines).
    path: PathBuf,
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The store export (from `mnemon export`).
    #[arg(long)]
    from: PathBuf,
    /// A new or empty directory for the restored store.
    #[arg(long)]
    into: PathBuf,
}

pub(crate) fn absolute(p: &Path) -> Result<PathBuf, ApiError> {
    std::path::absolute(p).map_err(|e| ApiError::from(mnemon::Error::io_at(p, e)))
}

/// The text of the file at `path`, for the request field `field`.
///
/// # Errors
/// `io` naming the path in plain words (`notes.json: no such file or
/// directory`); `invalid_input` naming `field` when it is not UTF-8.
pub(crate) fn read_file(field: &str, path: &Path) -> Result<String, ApiError> {
    let bytes = std::fs::read(path).map_err(|e| ApiError::from(mnemon::Error::io_at(path, e)))?;
    String::from_utf8(bytes).map_err(|e| {
        ApiError::invalid(
            field,
            format!("must be UTF-8 text; {} is not (byte {})", path.display(), e.utf8_error().valid_up_to()),
        )
    })
}

/// `import`: read and check the file here, then write; with the store held
/// by a server, the server reads the file and writes (no progress bar).
pub fn import(cli: &Cli, a: &ImportArgs) -> Result<ExitCode, ApiError> {
    let namespace = crate::commands::ns(&a.namespace)?;
    let format: mnemon::portability::ImportFormat =
        a.format.parse().map_err(|e| crate::commands::field_error("format", e))?;
    let on_error: mnemon::portability::OnError =
        a.on_error.parse().map_err(|e| crate::commands::field_error("on_error", e))?;
    if a.batch == 0 {
        return Err(ApiError::invalid("batch", "must be at least 1, got 0"));
    }
    format.check_namespace(&namespace)?;
    let stdin = a.path.as_os_str() == "-";
    // The file first: one that cannot be read creates no store. An import
    // writes into the store in place (not through a build directory), so
    // that an interrupted first import keeps what it wrote and a re-run
    // skips it as duplicates.
    let text = if stdin { crate::commands::text_arg("text", "-")? } else { api::read_import_file(&a.path)? };
    let summary = match crate::commands::open_engine_at(cli, &cli.data) {
        Ok(engine) => {
            let parsed = format.parse_for(&text, &namespace);
            let parsed = match parsed {
                Ok(p) => p,
                Err(e) => {
                    engine.close()?;
                    return Err(e.into());
                }
            };
            drop(text);
            let bar = (!cli.json && !a.quiet).then(progress_bar);
            let progress: Option<mnemon::portability::ImportProgressFn> = bar.clone().map(|b| {
                Arc::new(move |p: mnemon::portability::ImportProgress| {
                    b.set_length(p.total);
                    b.set_position(p.done);
                }) as mnemon::portability::ImportProgressFn
            });
            let opts = ImportOptions { on_error, dry_run: a.dry_run, batch: a.batch, progress };
            let r = engine.import(&namespace, parsed, &opts);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let closed = engine.close();
            let s = r?;
            closed?;
            s
        }
        Err(mnemon::Error::Locked { .. }) => {
            // The holder reads a file itself; standard input travels as text.
            let (text, path) = if stdin {
                (Some(text), None)
            } else {
                drop(text);
                (None, Some(absolute(&a.path)?.to_string_lossy().into_owned()))
            };
            let req = Request::Import(ImportRequest {
                namespace,
                text,
                path,
                format: Some(format),
                on_error: Some(on_error),
                dry_run: a.dry_run,
                batch: Some(a.batch),
            });
            match crate::commands::run_one_building(cli, req)? {
                Response::Import(s) => s,
                _ => return Err(ApiError::new(api::ErrorCode::Internal, "import answered with another response")),
            }
        }
        Err(e) => return Err(e.into()),
    };
    if cli.json {
        output::json(&summary);
    } else {
        print_summary(&summary);
    }
    Ok(if summary.rejected > 0 { ExitCode::from(IMPORT_REJECTED) } else { ExitCode::SUCCESS })
}

fn progress_bar() -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::with_draw_target(Some(0), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("importing {bar:40} {pos}/{len} records ({per_sec}, eta {eta})")
    {
        b.set_style(style);
    }
    b
}

fn print_summary(s: &ImportSummary) {
    let verb = if s.dry_run || s.aborted { "would write" } else { "wrote" };
    if s.aborted {
        println!("aborted: {}; nothing written", output::count(s.rejected, "bad record", "bad records"));
    }
    println!(
        "read {}, {verb} {} and {}, {}, {} rejected",
        s.read,
        output::count(s.observations_written, "observation", "observations"),
        output::count(s.memories_written, "memory", "memories"),
        output::count(s.duplicates, "duplicate", "duplicates"),
        s.rejected
    );
    if !s.redactions.is_empty() {
        let r: Vec<String> = s.redactions.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("redacted: {}", r.join(", "));
    }
    if s.quarantined > 0 {
        println!("quarantined: {}", s.quarantined);
    }
    if s.unmapped > 0 {
        println!("not mapped: {} (listed below)", s.unmapped);
    }
    for r in &s.rejections {
        let at = if r.at.is_empty() { String::new() } else { format!(" ({})", r.at) };
        eprintln!("line {}{at}: {}", r.line, r.reason);
    }
    if s.rejected > s.rejections.len() as u64 {
        eprintln!("… and {} more", s.rejected - s.rejections.len() as u64);
    }
    for u in &s.unmapped_list {
        // A record inside one JSON document has no line of its own.
        let place = match (u.line, u.at.is_empty()) {
            (0, _) => u.at.clone(),
            (n, true) => format!("line {n}"),
            (n, false) => format!("line {n} ({})", u.at),
        };
        let what = if u.skipped { "not imported" } else { "imported in part" };
        println!("{place}: {what}: {}", u.reason);
    }
    if s.unmapped > s.unmapped_list.len() as u64 {
        println!("… and {} more not mapped", s.unmapped - s.unmapped_list.len() as u64);
    }
}

/// `backup` and `export`: one surface request each, with absolute paths.
pub fn request(cmd: &crate::Cmd) -> Result<Option<Request>, ApiError> {
    Ok(Some(match cmd {
        crate::Cmd::Backup(a) => Request::Backup(BackupRequest { dir: absolute(&a.dir)? }),
        crate::Cmd::Export(a) => Request::Export(ExportRequest { path: absolute(&a.path)? }),
        _ => return Ok(None),
    }))
}

/// `restore`: builds the new store here (no store needs to be open), opens
/// it with the recorded model (or `--embedder`), compares digests.
pub fn restore(cli: &Cli, a: &RestoreArgs) -> Result<ExitCode, ApiError> {
    let report = mnemon::portability::restore_verified(&a.from, &a.into, |into| {
        crate::commands::open_engine_for(cli, into, crate::commands::Graphs::Scan)
    })?;
    let ok = report.digest_matches == Some(true);
    // Namespaces shredded since the export restore as erased: the digest
    // differs for that reason alone.
    let shredded = !ok && !report.shredded.is_empty();
    if cli.json {
        output::json(&report);
    } else {
        println!(
            "restored {} ({}, {}) into {}",
            output::count(report.last_seq, "event", "events"),
            output::count(report.tombstones, "tombstone", "tombstones"),
            output::count(report.vectors, "vector", "vectors"),
            report.dir.display()
        );
        println!(
            "digest {} ({})",
            report.digest.as_deref().unwrap_or("?"),
            if ok {
                "matches the export"
            } else if shredded {
                "differs from the export: shredded namespaces restore as erased"
            } else {
                "DIFFERS from the export"
            }
        );
    }
    if shredded {
        eprintln!(
            "note: the data key of {} was destroyed after this export was taken: {} unreadable and restored as \
             erased; every other namespace is whole",
            report.shredded.join(", "),
            if report.shredded.len() == 1 { "it is" } else { "they are" }
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !ok {
        eprintln!(
            "warning: the file was changed or damaged after it was exported; the store at {} holds what it holds \
             and is marked ({}; `mnemon check` reports it): use another backup or export, or delete that file if \
             you trust this one",
            report.dir.display(),
            mnemon::portability::RESTORE_MISMATCH
        );
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(DIGEST_MISMATCH) })
}
