"""Calls/s of `remember` and `recall` from Python vs the same calls in Rust,
one run, and how they scale from 1 to 4 threads on one engine.

    cargo build --release -p mnemon-python --example bench_rust
    target/python-venv/bin/python python/bench.py [--calls N] [--prefill N] [--json FILE]

Every configuration runs three ways on a fresh store (hashing embedder,
namespace `bench`): Python (`mnemon.Engine`, one call per method call),
Rust through the command surface (`examples/bench_rust.rs`: JSON text ->
`mnemon::api::Request` -> `api::execute` -> JSON text, what a Python call
does minus Python) and Rust calling `Engine::remember` / `Engine::recall`
directly. `remember` runs with the default durability (a flush per group of
writes) and with a 20 ms flush interval (no fsync in the call, so the
binding's own cost shows); `recall` runs over `--prefill` memories with
top-k 10 and no access records. Figures are ratios within this run; the
machine's other load moves the absolute rates.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List

import mnemon

ROOT = pathlib.Path(__file__).resolve().parent.parent


def memory_text(i: int) -> str:
    """The text of memory `i` (as `memory_text` in examples/bench_rust.rs)."""
    return f"Memory {i}: the user mentioned topic {i % 97} and item {i * 7919 % 10007} on day {i % 31}"


def query_text(j: int) -> str:
    """The query of call `j` (as `query_text` in examples/bench_rust.rs)."""
    return f"what about topic {j % 97} and item {j * 31 % 10007}"


def rust_binary() -> pathlib.Path:
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "examples" / "bench_rust"


def run_rust(op: str, calls: int, threads: int, flush_ms: int, prefill: int, path: str) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(
            [str(rust_binary()), d, op, str(calls), str(threads), str(flush_ms), str(prefill), path],
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(out.stdout)


def run_python(op: str, calls: int, threads: int, flush_ms: int, prefill: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        engine = mnemon.Engine.open(d, embedder="hashing", flush_interval_s=None if flush_ms == 0 else flush_ms / 1000)
        with engine:
            for i in range(prefill):
                engine.remember("bench", memory_text(i), dedup="off")
            errors: List[BaseException] = []

            def work(t: int) -> None:
                try:
                    for c in range(calls):
                        i = prefill + t * calls + c
                        if op == "remember":
                            engine.remember("bench", memory_text(i), dedup="off")
                        else:
                            engine.recall("bench", query_text(i), top_k=10, record_access=False)
                except BaseException as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
            start = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            secs = time.perf_counter() - start
            if errors:
                raise errors[0]
    total = calls * threads
    return {
        "side": "python",
        "op": op,
        "threads": threads,
        "calls": total,
        "flush_ms": flush_ms,
        "seconds": secs,
        "calls_per_s": total / secs,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=400, help="calls per thread (default 400)")
    ap.add_argument("--prefill", type=int, default=1000, help="memories before timing recall (default 1000)")
    ap.add_argument("--json", help="also write every measurement to this file")
    args = ap.parse_args()
    if not rust_binary().exists():
        print(
            f"{rust_binary()} is missing: cargo build --release -p mnemon-python --example bench_rust", file=sys.stderr
        )
        return 2
    configs = [("remember", 0, 0), ("remember", 20, 0), ("recall", 0, args.prefill)]
    rows = []
    print(f"mnemon {mnemon.__version__}, hashing embedder, {args.calls} calls per thread, {os.cpu_count()} CPUs")
    print(
        f"{'op':<10}{'flush':>7}{'threads':>9}{'python/s':>11}{'rust api/s':>12}{'rust engine/s':>15}"
        f"{'py/api':>8}{'py/engine':>11}"
    )
    for op, flush_ms, prefill in configs:
        for threads in (1, 2, 4):
            py = run_python(op, args.calls, threads, flush_ms, prefill)
            api = run_rust(op, args.calls, threads, flush_ms, prefill, "surface")
            eng = run_rust(op, args.calls, threads, flush_ms, prefill, "engine")
            rows.extend([py, api, eng])
            flush = "group" if flush_ms == 0 else f"{flush_ms}ms"
            print(
                f"{op:<10}{flush:>7}{threads:>9}{py['calls_per_s']:>11.0f}{api['calls_per_s']:>12.0f}"
                f"{eng['calls_per_s']:>15.0f}{py['calls_per_s'] / api['calls_per_s']:>8.2f}"
                f"{py['calls_per_s'] / eng['calls_per_s']:>11.2f}",
                flush=True,
            )
    print("\nthreads scaling (calls/s at 4 threads / at 1 thread):")
    for op, flush_ms, _ in configs:
        for side, path in (("python", None), ("rust", "surface"), ("rust", "engine")):
            sel = [
                r
                for r in rows
                if r["op"] == op and r["flush_ms"] == flush_ms and r["side"] == side and r.get("path") == path
            ]
            one = next(r for r in sel if r["threads"] == 1)["calls_per_s"]
            four = next(r for r in sel if r["threads"] == 4)["calls_per_s"]
            label = side if path is None else f"{side} {path}"
            print(f"  {op:<9} flush {flush_ms or 'group'!s:<6} {label:<13} {four / one:.2f}x")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
