"""Calls/s of `remember` and `recall` from Python vs the same calls in Rust,
one run, and how they scale from 1 to 4 threads on one engine.

    cargo build --release -p mnemon-python --example bench_rust
    target/python-venv/bin/python python/bench.py [--calls N] [--warmup N] [--repeat N] [--prefill N] [--json FILE]

Every configuration runs three ways on a fresh store (hashing embedder,
namespace `bench`): Python (`mnemon.Engine`, one call per method call),
Rust through the command surface (`examples/bench_rust.rs`: JSON text ->
`mnemon::api::Request` -> `api::execute` -> JSON text, what a Python call
does minus Python) and Rust calling `Engine::remember` / `Engine::recall`
directly. `remember` runs with the default durability (a flush per group of
writes) and with a 20 ms flush interval (no fsync in the call, so the
binding's own cost shows); `recall` runs over `--prefill` memories with
top-k 10 and no access records. Each configuration runs `--repeat` times,
the three ways interleaved, and the median counts. Figures are ratios
within this run; the machine's other load moves the absolute rates. CPU time per call (of the
whole process, every thread: `time.process_time()` in Python, the same
clock in Rust) is the steadier measure of what the binding adds on a busy
machine: `api/py` is the Rust surface's CPU per call over Python's (1.0
means the binding adds nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Tuple

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


def run_rust(op: str, calls: int, threads: int, flush_ms: int, prefill: int, path: str, warmup: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(
            [str(rust_binary()), d, op, str(calls), str(threads), str(flush_ms), str(prefill), path, str(warmup)],
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(out.stdout)


def run_python(op: str, calls: int, threads: int, flush_ms: int, prefill: int, warmup: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        engine = mnemon.Engine.open(d, embedder="hashing", flush_interval_s=None if flush_ms == 0 else flush_ms / 1000)
        with engine:
            for i in range(prefill):
                engine.remember("bench", memory_text(i), dedup="off")

            def run(n: int, base: int) -> Tuple[float, float]:
                errors: List[BaseException] = []

                def work(t: int) -> None:
                    try:
                        for c in range(n):
                            i = base + t * n + c
                            if op == "remember":
                                engine.remember("bench", memory_text(i), dedup="off")
                            else:
                                engine.recall("bench", query_text(i), top_k=10, record_access=False)
                    except BaseException as e:  # noqa: BLE001 - reported below
                        errors.append(e)

                workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
                start, cpu = time.perf_counter(), time.process_time()
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
                secs, cpu_secs = time.perf_counter() - start, time.process_time() - cpu
                if errors:
                    raise errors[0]
                return secs, cpu_secs

            # Warm-up (untimed), then the timed calls, as the Rust side.
            run(warmup, prefill)
            secs, cpu_secs = run(calls, prefill + threads * warmup)
    total = calls * threads
    return {
        "side": "python",
        "op": op,
        "threads": threads,
        "calls": total,
        "flush_ms": flush_ms,
        "seconds": secs,
        "calls_per_s": total / secs,
        "cpu_us_per_call": cpu_secs * 1e6 / total,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1000, help="timed calls per thread (default 1000)")
    ap.add_argument("--prefill", type=int, default=1000, help="memories before timing recall (default 1000)")
    ap.add_argument("--warmup", type=int, default=100, help="untimed calls per thread first (default 100)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved runs per configuration (default 3)")
    ap.add_argument("--json", help="also write every measurement to this file")
    args = ap.parse_args()
    if not rust_binary().exists():
        print(
            f"{rust_binary()} is missing: cargo build --release -p mnemon-python --example bench_rust", file=sys.stderr
        )
        return 2
    configs = [("remember", 0, 0), ("remember", 20, 0), ("recall", 0, args.prefill)]
    rows: List[Dict[str, Any]] = []
    print(
        f"mnemon {mnemon.__version__}, hashing embedder, {args.calls} calls per thread after {args.warmup} "
        f"untimed, median of {args.repeat} interleaved runs, {os.cpu_count()} CPUs"
    )
    print(
        f"{'op':<9}{'flush':>6}{'thr':>4} | {'calls/s: python':>15}{'rust api':>9}{'engine':>8}{'py/api':>7}{'py/eng':>7}"
        f" | {'CPU us/call: python':>19}{'rust api':>9}{'engine':>8}{'api/py':>7}{'eng/py':>7}"
    )
    medians: Dict[Any, float] = {}
    for op, flush_ms, prefill in configs:
        for threads in (1, 2, 4):
            rate: Dict[str, List[float]] = {"python": [], "surface": [], "engine": []}
            cpu: Dict[str, List[float]] = {"python": [], "surface": [], "engine": []}
            for _ in range(args.repeat):
                py = run_python(op, args.calls, threads, flush_ms, prefill, args.warmup)
                api = run_rust(op, args.calls, threads, flush_ms, prefill, "surface", args.warmup)
                eng = run_rust(op, args.calls, threads, flush_ms, prefill, "engine", args.warmup)
                rows.extend([py, api, eng])
                for key, r in (("python", py), ("surface", api), ("engine", eng)):
                    rate[key].append(r["calls_per_s"])
                    cpu[key].append(r["cpu_us_per_call"])
            m = {k: statistics.median(v) for k, v in rate.items()}
            c = {k: statistics.median(v) for k, v in cpu.items()}
            for k, v in m.items():
                medians[(op, flush_ms, threads, k)] = v
            flush = "group" if flush_ms == 0 else f"{flush_ms}ms"
            print(
                f"{op:<9}{flush:>6}{threads:>4} | {m['python']:>15.0f}{m['surface']:>9.0f}{m['engine']:>8.0f}"
                f"{m['python'] / m['surface']:>7.2f}{m['python'] / m['engine']:>7.2f}"
                f" | {c['python']:>19.0f}{c['surface']:>9.0f}{c['engine']:>8.0f}"
                f"{c['surface'] / c['python']:>7.2f}{c['engine'] / c['python']:>7.2f}",
                flush=True,
            )
    print("\nthreads scaling (median calls/s at 4 threads / at 1 thread):")
    for op, flush_ms, _ in configs:
        flush = "group" if flush_ms == 0 else f"{flush_ms}ms"
        cells = "  ".join(
            f"{label} {medians[(op, flush_ms, 4, k)] / medians[(op, flush_ms, 1, k)]:.2f}x"
            for k, label in (("python", "python"), ("surface", "rust api"), ("engine", "rust engine"))
        )
        print(f"  {op:<9} flush {flush:<6} {cells}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
