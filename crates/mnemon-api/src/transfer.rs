//! Requests that move data in and out: import, backup, export, restore.
//!
//! Paths are read and written by the process that holds the store (the
//! same machine as the caller: the CLI reaches a holder only through its
//! local socket), and should be absolute; the CLI makes them so.

use std::io::Read;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::budget::Limits;
use super::error::ApiError;
use super::Call;
use mnemon::portability::{
    BackupReport, ExportReport, ImportFormat, ImportOptions, ImportSummary, OnError, RestoreReport,
};
use mnemon::Engine;
use mnemon::Namespace;

/// `import`: bulk-load observations and memories, from mnemon's own JSON
/// lines, the chat histories of LoCoMo and LongMemEval, or what the MCP
/// memory server, mem0 and LangGraph stores hold (docs/guide/import-backup-restore.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImportRequest {
    /// Namespace to import into. For `langgraph`, the `MnemonStore` prefix
    /// (`lg` by default): each item goes to the namespace that store keeps
    /// its namespace tuple in, and the import is then a store-wide call.
    /// For `mem0`, of a file of several users only the records of the user
    /// (or agent) of this name.
    pub namespace: Namespace,
    /// The input itself. Give this or `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A file on the store's machine (`.gz` is decompressed). Give this or `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// jsonl (one record per line: {"type":"observation"|"memory",…}), locomo, longmemeval,
    /// mcp_memory (the MCP memory server's memory.jsonl), mem0 (mem0 memories, as get_all()
    /// returns them) or langgraph (a LangGraph store dump: Item.dict() per item). Default jsonl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<ImportFormat>,
    /// skip: write the good records; abort: write nothing if any is bad. Default skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
    /// Check and count, write nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Records per group commit (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub batch: Option<usize>,
}

/// Reads an import file: UTF-8, gzip-compressed when the name ends in `.gz`.
///
/// # Errors
/// [`mnemon::Error::Io`] when it cannot be read; [`mnemon::Error::InvalidInput`]
/// (field `path`) when it is not UTF-8.
pub fn read_import_file(path: &Path) -> mnemon::Result<String> {
    let file = std::fs::File::open(path).map_err(|e| mnemon::Error::io_at(path, e))?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::MultiGzDecoder::new(file).read_to_end(&mut bytes)?;
    } else {
        std::io::BufReader::new(file).read_to_end(&mut bytes)?;
    }
    String::from_utf8(bytes).map_err(|e| {
        mnemon::Error::invalid(
            "path",
            format!("{} is not UTF-8 (byte {})", path.display(), e.utf8_error().valid_up_to()),
        )
    })
}

impl ImportRequest {
    /// The options this request asks for (no progress callback).
    pub fn options(&self) -> ImportOptions {
        ImportOptions {
            on_error: self.on_error.unwrap_or_default(),
            dry_run: self.dry_run,
            batch: self.batch.unwrap_or(0),
            progress: None,
        }
    }
}

impl Call for ImportRequest {
    type Output = ImportSummary;
    const OP: &'static str = "import";
    const READ_ONLY: bool = false;

    /// A LangGraph import writes into a namespace per namespace tuple and
    /// the store's catalogue, all under the prefix given: store-wide.
    fn namespace(&self) -> Option<&Namespace> {
        match self.format {
            Some(ImportFormat::Langgraph) => None,
            _ => Some(&self.namespace),
        }
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<ImportSummary, ApiError> {
        let text = match (&self.text, &self.path) {
            (Some(t), None) => std::borrow::Cow::Borrowed(t.as_str()),
            (None, Some(p)) => std::borrow::Cow::Owned(read_import_file(Path::new(p))?),
            _ => return Err(ApiError::invalid("text", "give exactly one of text and path")),
        };
        if self.batch == Some(0) {
            return Err(ApiError::invalid("batch", "must be at least 1"));
        }
        let parsed = self.format.unwrap_or_default().parse_for(&text, &self.namespace)?;
        Ok(engine.import(&self.namespace, parsed, &self.options())?)
    }
}

/// `backup`: a consistent copy of the store in a new directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackupRequest {
    /// A new or empty directory on the store's machine.
    pub dir: PathBuf,
}

impl Call for BackupRequest {
    type Output = BackupReport;
    const OP: &'static str = "backup";
    // It writes no event, but it creates files: never retried blindly.
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<BackupReport, ApiError> {
        Ok(engine.backup(&self.dir)?)
    }
}

/// `export`: every event and vector of the store as JSON lines, for `restore`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExportRequest {
    /// A new file on the store's machine.
    pub path: PathBuf,
}

impl Call for ExportRequest {
    type Output = ExportReport;
    const OP: &'static str = "export";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<ExportReport, ApiError> {
        Ok(engine.export(&self.path)?)
    }
}

/// `restore`: a new store rebuilt from a store export, opened once with
/// this engine's embedder to compare digests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreRequest {
    /// The store export (written by `export`).
    pub from: PathBuf,
    /// A new or empty directory for the restored store.
    pub into: PathBuf,
}

impl Call for RestoreRequest {
    type Output = RestoreReport;
    const OP: &'static str = "restore";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<RestoreReport, ApiError> {
        mnemon::portability::restore_verified(&self.from, &self.into, |into| {
            Engine::builder(into).embedder(engine.embedder().clone()).open()
        })
        .map_err(ApiError::from)
    }
}
