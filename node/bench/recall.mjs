#!/usr/bin/env node
// Recall latency from Node vs the Rust library on the same store, one run.
//
//   cargo build --release -p mnemon-node --example recall_p50
//   node bench/recall.mjs [--prefill N] [--calls N] [--warmup N] [--repeat N]
//
// Fills a fresh store (hashing embedder, namespace `bench`) with `--prefill`
// memories through the Node package, then times `--calls` recalls one after
// another (top-k 10, no access records), alternately from Node
// (`Engine.recall`: JSON request, the surface, JSON response, a Promise
// resolved on the JavaScript thread) and from Rust (`examples/recall_p50.rs`:
// `Engine::recall` on the library, in its own process), `--repeat` times
// each, and prints the median p50 of each side and their ratio. The machine's
// other load moves the absolute figures; the ratio is measured within one run.

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Engine } from "../dist/index.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values } = parseArgs({
  options: {
    prefill: { type: "string", default: "5000" },
    calls: { type: "string", default: "500" },
    warmup: { type: "string", default: "50" },
    repeat: { type: "string", default: "3" },
  },
});
const [prefill, calls, warmup, repeat] = [values.prefill, values.calls, values.warmup, values.repeat].map(Number);
const NS = "bench";

/** The text of memory `i` (as `memory_text` in python/bench.py). */
const memoryText = (i) => `Memory ${i}: the user mentioned topic ${i % 97} and item ${(i * 7919) % 10007} on day ${i % 31}`;
/** The query of call `j` (as `query_text` in examples/recall_p50.rs). */
const queryText = (j) => `what about topic ${j % 97} and item ${(j * 31) % 10007}`;

const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.round((xs.length - 1) * q)];
const median = (xs) => quantile(xs, 0.5);

async function nodeP50(dir) {
  const engine = await Engine.open(dir, { embedder: "hashing" });
  try {
    for (let j = 0; j < warmup; j++) await engine.recall(NS, queryText(j), { top_k: 10, record_access: false });
    const micros = [];
    for (let j = 0; j < calls; j++) {
      const t = process.hrtime.bigint();
      await engine.recall(NS, queryText(warmup + j), { top_k: 10, record_access: false });
      micros.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    return median(micros);
  } finally {
    await engine.close();
  }
}

function rustP50(dir) {
  const bin = join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "release", "examples", "recall_p50");
  const out = execFileSync(bin, [dir, NS, String(calls), String(warmup)], { encoding: "utf8" });
  return JSON.parse(out).p50_us;
}

const dir = mkdtempSync(join(tmpdir(), "mnemon-bench-"));
try {
  const engine = await Engine.open(dir, { embedder: "hashing", flush_interval_s: 0.05 });
  for (let i = 0; i < prefill; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, prefill - i) }, (_, k) => engine.remember(NS, memoryText(i + k), { dedup: "off" })),
    );
  }
  await engine.close();
  const node = [];
  const rust = [];
  for (let r = 0; r < repeat; r++) {
    node.push(await nodeP50(dir));
    rust.push(rustP50(dir));
  }
  const result = {
    prefill,
    calls,
    node_p50_us: Number(median(node).toFixed(1)),
    rust_p50_us: Number(median(rust).toFixed(1)),
    ratio: Number((median(node) / median(rust)).toFixed(3)),
  };
  console.log(JSON.stringify(result));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
