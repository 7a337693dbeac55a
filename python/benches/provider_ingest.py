"""Ingest through an embedding provider against the provider's own
throughput, in one run on one machine.

Starts llama.cpp's `llama-server` (tests/provider_server) with the installed
all-MiniLM-L6-v2, then embeds the same texts twice:

* directly: `POST /v1/embeddings` in batches of 32 with 4 requests in flight
  (mnemon's defaults for a provider), from Python threads;
* through mnemon: `mnemon --embedder openai:… import` of the same texts as
  memories into a fresh store (which also writes them: redaction, the event
  log, group commits, the indexes).

Prints both rates and the ratio (mnemon's time / the direct time).

    python python/benches/provider_ingest.py [--texts N]

Texts: the first N turns of LoCoMo (`../shared/data/locomo10.json`, or
`$MNEMON_LOCOMO`). Needs the packages of python/requirements-test.txt and
`mnemon model install minilm`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "tests"))

from test_provider_server import LlamaServer, free_port, models_dir, MODEL, HERE  # noqa: E402


def locomo_turns(n: int) -> list:
    path = pathlib.Path(os.environ.get("MNEMON_LOCOMO", ROOT.parent / "shared" / "data" / "locomo10.json"))
    out = []
    for conv in json.loads(path.read_text()):
        c = conv["conversation"]
        for key in sorted(k for k in c if k.startswith("session_") and isinstance(c[k], list)):
            for turn in c[key]:
                out.append(f"{turn['speaker']}: {turn['text']}")
                if len(out) == n:
                    return out
    return out


def direct(url: str, texts: list, batch: int = 32, in_flight: int = 4) -> float:
    def post(chunk):
        body = json.dumps({"model": MODEL, "input": chunk}).encode()
        req = urllib.request.Request(url + "/embeddings", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            data = json.loads(r.read())["data"]
        assert len(data) == len(chunk)

    chunks = [texts[i : i + batch] for i in range(0, len(texts), batch)]
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(in_flight) as pool:
        list(pool.map(post, chunks))
    return time.perf_counter() - t


def through_mnemon(binary: str, spec: str, texts: list, work: pathlib.Path) -> float:
    src = work / "memories.jsonl"
    src.write_text("".join(json.dumps({"type": "memory", "content": t}) + "\n" for t in texts))
    t = time.perf_counter()
    subprocess.run(
        [binary, "--data", str(work / "store"), "--embedder", spec, "import", "--namespace", "bench", "-q", str(src)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2, help="alternating runs of each; the best of each is kept")
    a = ap.parse_args()
    binary = os.environ.get("MNEMON_BIN", str(ROOT / "target" / "release" / "mnemon"))
    texts = locomo_turns(a.texts)
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        gguf = work / f"{MODEL}.gguf"
        subprocess.run([sys.executable, str(HERE / "st2gguf.py"), str(models_dir() / "minilm"), str(gguf)], check=True, capture_output=True)
        server = LlamaServer(gguf, free_port(), work / "server.log")
        try:
            server.start()
            spec = server.spec()
            direct(server.url, texts[:64])  # warm-up
            d, m = [], []
            for r in range(a.rounds):
                d.append(direct(server.url, texts))
                run = work / f"run{r}"
                run.mkdir()
                m.append(through_mnemon(binary, spec, texts, run))
            best_d, best_m = min(d), min(m)
            print(f"texts: {len(texts)} LoCoMo turns; server: llama-server (xllamacpp), {MODEL}, 2 threads")
            print(f"direct /v1/embeddings (batch 32, 4 in flight): {best_d:.2f} s, {len(texts) / best_d:.1f} texts/s  (runs: {', '.join(f'{x:.2f}' for x in d)})")
            print(f"mnemon import through the provider:           {best_m:.2f} s, {len(texts) / best_m:.1f} texts/s  (runs: {', '.join(f'{x:.2f}' for x in m)})")
            print(f"ratio (mnemon / direct): {best_m / best_d:.3f}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
