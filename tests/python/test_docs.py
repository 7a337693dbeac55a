"""The commands that README.md and the guide under docs/ show, run as written,
and the links between those pages.

Which blocks run. A fenced block whose info string is `sh` (or `bash`) is a
command a reader may paste: it runs with bash under `set -euo pipefail` and
must exit with status 0. A block that cannot run here says so with a second
word, `no-run` (```` ```sh no-run ````): builds from source (cargo, maturin,
`./scripts/test`), servers that keep running (`mnemon serve`, `mnemon mcp`
waiting for a client), downloads, the cluster's NATS servers, and commands
that need the benchmark data sets. Every other block (`text`, `json`,
`rust`, `python`, …) is shown, not run; the Python blocks are run by
`python/tests/test_docs.py`, where the package is installed.

How they run. The blocks of one page run in order, as in one terminal: one
fresh working directory, the default data directory `./mnemon-data` in it
(`MNEMON_DATA` points there), and exported variables and the working
directory carried from one block to the next. `mnemon` on `PATH` is
`$MNEMON_BIN` (else the release build of this checkout). The models are the
installed ones: `XDG_DATA_HOME` and `MNEMON_MODELS` are left as they are,
so `mnemon model install NAME` finds its model installed and downloads
nothing; the test skips (fails under `MNEMON_REQUIRE_MODELS=1`) when a model
is not installed. A failing block is reported with its page, its line and
what it printed.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN_LANGS = {"sh", "bash"}
FLAGS = {"no-run"}
BLOCK_TIMEOUT_S = 120
# Environment variables that would change what a block does: a reader starts
# without them.
CLEARED_ENV = ["MNEMON_DATA", "MNEMON_EMBEDDER", "MNEMON_PHONE_REGIONS", "MNEMON_TOKEN", "MNEMON_EMBED_PRECISION"]


def doc_pages() -> List[pathlib.Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@dataclass
class Block:
    page: pathlib.Path
    line: int  # of the opening fence, 1-based
    lang: str
    flags: List[str]
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUN_LANGS and "no-run" not in self.flags


FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


def blocks(page: pathlib.Path) -> Iterator[Block]:
    """The fenced code blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m["fence"], m["info"].strip(), i
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$", lines[i]):
            body.append(lines[i][len(m["indent"]):] if lines[i].startswith(m["indent"]) else lines[i])
            i += 1
        if i >= len(lines):
            raise AssertionError(f"{page.relative_to(ROOT)}:{start + 1}: code block never closed")
        i += 1
        words = info.split()
        yield Block(page, start + 1, words[0] if words else "", words[1:], "\n".join(body) + "\n")


def binary() -> pathlib.Path:
    if os.environ.get("MNEMON_BIN"):
        return pathlib.Path(os.environ["MNEMON_BIN"]).resolve()
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    if not target.is_absolute():
        target = ROOT / target
    return target / "release" / "mnemon"


def skip_or_fail(reason: str, env_var: str):
    if os.environ.get(env_var) == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def mnemon_bin() -> pathlib.Path:
    b = binary()
    if not b.exists():
        skip_or_fail(f"{b} is missing; run cargo build --release --bin mnemon", "MNEMON_REQUIRE_BIN")
    listed = subprocess.run([str(b), "model", "list"], capture_output=True, text=True, timeout=60)
    missing = [line.split()[0] for line in listed.stdout.splitlines() if "not installed" in line]
    if listed.returncode != 0 or missing:
        skip_or_fail(
            f"models not installed ({', '.join(missing) or listed.stderr.strip()}): the pages install them, "
            "which would download; run mnemon model install for each first",
            "MNEMON_REQUIRE_MODELS",
        )
    return b


# ---------------------------------------------------------------- conventions


def test_every_block_has_a_known_tag():
    """A shell block either runs or says `no-run`; no other flag exists, so a
    misspelt one cannot switch a block off unnoticed. (A block without a
    language, such as a diagram, is text.)"""
    bad = []
    for page in doc_pages():
        for b in blocks(page):
            if b.lang in {"shell", "console", "zsh"}:
                bad.append(f"{b.where}: shell blocks are tagged sh")
            for flag in b.flags:
                if flag not in FLAGS:
                    bad.append(f"{b.where}: unknown flag {flag!r} (known: {', '.join(sorted(FLAGS))})")
    assert not bad, "\n".join(bad)


def test_the_readme_opens_with_the_two_commands_and_is_short():
    readme = ROOT / "README.md"
    lines = readme.read_text(encoding="utf-8").split("\n")
    assert len(lines) <= 251, f"README.md has {len(lines)} lines; keep it a front door (≤ 250)"
    first = next(blocks(readme))
    assert "cargo run --release -- demo" in first.code and "./scripts/test" in first.code, first.code


# ------------------------------------------------------------------ the blocks


def pages_with_runnable_blocks() -> List[pathlib.Path]:
    return [p for p in doc_pages() if any(b.runs for b in blocks(p))]


def run_page(page: pathlib.Path, mnemon_bin: pathlib.Path, tmp: pathlib.Path) -> List[Tuple[str, float]]:
    """Runs the runnable blocks of one page in order in one fresh directory;
    returns each block's place and seconds."""
    bindir = tmp / "bin"
    bindir.mkdir()
    (bindir / "mnemon").symlink_to(mnemon_bin)
    work = tmp / "work"
    work.mkdir()
    state = tmp / "state.sh"
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    # A home of its own, so that a page writing under ~ (a key file in
    # ~/.config/mnemon) runs the same every time; the installed models are
    # still found where mnemon would look for them from the real home.
    home = tmp / "home"
    home.mkdir()
    models = env.get("MNEMON_MODELS") or str(
        pathlib.Path(env.get("XDG_DATA_HOME") or pathlib.Path.home() / ".local" / "share") / "mnemon" / "models"
    )
    env.update(
        PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        MNEMON_MODELS=models,
        MNEMON_DATA=str(work / "mnemon-data"),
        MNEMON_DOCS_STATE=str(state),
    )
    # Each block starts where the previous one left off: its exported
    # variables and its working directory.
    state.write_text(f"cd {shq(str(work))}\n", encoding="utf-8")
    prologue = (
        'source "$MNEMON_DOCS_STATE"\n'
        '_docs_save() { { export -p; printf "cd %q\\n" "$PWD"; } > "$MNEMON_DOCS_STATE"; }\n'
        "trap _docs_save EXIT\n"
    )
    timings = []
    for b in blocks(page):
        if not b.runs:
            continue
        script = prologue + "set -euo pipefail\n" + b.code
        started = time.monotonic()
        try:
            p = subprocess.run(
                ["bash", "-c", script],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
            pytest.fail(f"{b.where}: the block ran past {BLOCK_TIMEOUT_S} s\n--- block ---\n{b.code}--- output ---\n{out}")
        timings.append((b.where, time.monotonic() - started))
        if p.returncode != 0:
            pytest.fail(
                f"{b.where}: the block exited with status {p.returncode}\n"
                f"--- block ---\n{b.code}--- stdout ---\n{p.stdout}--- stderr ---\n{p.stderr}"
            )
    return timings


def shq(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


@pytest.mark.parametrize("page", pages_with_runnable_blocks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_commands_of_a_page_run(page, mnemon_bin, tmp_path):
    timings = run_page(page, mnemon_bin, tmp_path)
    for where, seconds in timings:
        print(f"{where}: {seconds:.2f} s")


# ------------------------------------------------------------------- the links

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces
    as hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set:
    found, seen = set(), {}
    in_code = False
    for line in page.read_text(encoding="utf-8").split("\n"):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m[1])
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        for explicit in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
            found.add(explicit)
    return found


def links(page: pathlib.Path) -> Iterator[Tuple[int, str]]:
    in_code = False
    for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), start=1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        # Inline code is not a link.
        line = re.sub(r"`[^`]*`", "", line)
        for m in LINK.finditer(line):
            yield n, m["target"] or m["image"]


def check_link(page: pathlib.Path, target: str) -> Optional[str]:
    """Why a relative link from `page` does not resolve, or None. Links to
    Markdown pages and images are checked (file and anchor); links to source
    files and web addresses are not."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None  # http:, https:, mailto:
    path, _, anchor = target.partition("#")
    dest = page if not path else (page.parent / path).resolve()
    if path and not (path.endswith(".md") or re.search(r"\.(png|jpe?g|gif|svg)$", path) or path.endswith("/")):
        return None
    if not dest.exists():
        return f"{path} does not exist"
    if dest.is_dir():
        dest = dest / "README.md"
        if not dest.exists():
            return f"{path} has no README.md"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{dest.relative_to(ROOT)} has no heading #{anchor}"
    return None


def test_links_between_the_pages_resolve():
    bad = []
    for page in doc_pages():
        for line, target in links(page):
            why = check_link(page, target)
            if why:
                bad.append(f"{page.relative_to(ROOT)}:{line}: {target}: {why}")
    assert not bad, "\n".join(bad)


def test_every_guide_page_is_in_the_index():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs").rglob("*.md")):
        rel = page.relative_to(ROOT / "docs").as_posix()
        if rel != "README.md":
            assert f"({rel})" in index or f"({rel}#" in index, f"docs/README.md does not link {rel}"
