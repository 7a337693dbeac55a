// Many calls at once on one engine, and engines in worker threads.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Worker } from "node:worker_threads";
import { Engine, LockedError } from "../dist/index.js";
import { storePath } from "./helpers.mjs";

const CITIES = ["Lisbon", "Porto", "Madrid", "Berlin", "Tokyo", "Lima", "Oslo", "Cairo"];

test("hundreds of concurrent calls on one engine: every write lands once", async () => {
  const engine = await Engine.open(storePath(), { embedder: "hashing" });
  try {
    const writes = [];
    for (let i = 0; i < 200; i++) {
      const ns = `user:${i % 8}`;
      writes.push(engine.remember(ns, `Customer ${i} ordered ${i % 5} boxes of tea from ${CITIES[i % 8]}`, { session: `s${i}` }));
    }
    // Reads interleaved with the writes.
    const reads = CITIES.map((c, i) => engine.recall(`user:${i}`, `tea from ${c}`));
    const done = await Promise.all(writes);
    await Promise.all(reads);
    const ids = new Set(done.map((r) => r.id));
    assert.equal(ids.size, 200);
    let total = 0;
    for (let i = 0; i < 8; i++) total += (await engine.list(`user:${i}`, { limit: 1000 })).memories.length;
    assert.equal(total, 200);
    assert.equal((await engine.check()).consistent, true);
  } finally {
    await engine.close();
  }
});

const WORKER = `
import { parentPort, workerData } from "node:worker_threads";
const { Engine } = await import(workerData.pkg);
const { path, n, tag } = workerData;
try {
  const engine = await Engine.open(path, { embedder: "hashing" });
  const ids = await Promise.all(
    Array.from({ length: n }, (_, i) => engine.remember("team", tag + " note " + i + ": the release train leaves on Thursday")),
  );
  const hits = await engine.recall("team", tag + " note 3 release train", { top_k: 3 });
  await engine.close();
  parentPort.postMessage({ ids: ids.map((r) => r.id), top: hits.hits[0]?.content ?? null });
} catch (e) {
  parentPort.postMessage({ error: { name: e.constructor.name, code: e.code, message: e.message } });
}
`;

function runWorker(data) {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { eval: true, workerData: { pkg: new URL("../dist/index.js", import.meta.url).href, ...data } });
    w.once("message", resolve);
    w.once("error", reject);
  });
}

test("worker threads each run their own engine on their own store", async () => {
  const results = await Promise.all(
    Array.from({ length: 4 }, (_, k) => runWorker({ path: storePath(`w${k}`), n: 40, tag: `w${k}` })),
  );
  results.forEach((r, k) => {
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(new Set(r.ids).size, 40);
    assert.match(r.top, new RegExp(`^w${k} note`));
  });
});

test("a store held by one thread is locked for another", async () => {
  const path = storePath();
  const engine = await Engine.open(path, { embedder: "hashing" });
  try {
    await engine.remember("team", "held by the main thread");
    const r = await runWorker({ path, n: 1, tag: "w" });
    assert.equal(r.error?.code, "locked", JSON.stringify(r));
    assert.equal(r.error?.name, LockedError.name);
  } finally {
    await engine.close();
  }
  const r = await runWorker({ path, n: 5, tag: "after" });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
});
