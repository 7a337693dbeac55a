// The Engine door: one agent's memory through a realistic conversation, the
// typed errors, and that bad input writes nothing.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ClosedError,
  ConflictError,
  Engine,
  InvalidInputError,
  LockedError,
  MnemonError,
  NotFoundError,
  OPS,
} from "../dist/index.js";
import { storePath } from "./helpers.mjs";

const NS = "user:alice";

test("remember, change a keyed fact, recall, context, history, forget", async () => {
  const engine = await Engine.open(storePath(), { embedder: "hashing" });
  try {
    assert.equal(engine.modelId, "hashing-v1-384");
    assert.equal(engine.dim, 384);
    const turn = await engine.observe(NS, "s1", "I moved to Lisbon last spring and I work as a nurse.");
    assert.ok(turn.observation_id > 0);
    const city = await engine.remember(NS, "Alice lives in Lisbon", { key: "alice.city", sources: [turn.observation_id], session: "s1" });
    assert.equal(city.action, "created");
    const job = await engine.remember(NS, "Alice works as a nurse at the city hospital", { kind: "fact", importance: 0.8 });
    const pref = await engine.remember(NS, "Alice prefers green tea over coffee", { kind: "preference", event_time: new Date("2026-03-01T09:00:00Z") });
    const moved = await engine.remember(NS, "Alice lives in Porto", { key: "alice.city" });
    assert.equal(moved.action, "superseded");
    assert.equal(moved.old, city.id);

    const recalled = await engine.recall(NS, "Alice lives in which city", { top_k: 3 });
    assert.ok(recalled.hits.length > 0);
    assert.equal(recalled.hits[0].content, "Alice lives in Porto");
    assert.ok(!recalled.hits.some((h) => h.id === city.id), "the superseded version is not recalled");
    const tea = await engine.recall(NS, "what does Alice drink, tea or coffee", { top_k: 1 });
    assert.equal(tea.hits[0].id, pref.id);

    const block = await engine.context(NS, "where does Alice work", { budget_tokens: 300 });
    assert.match(block.context, /^<memories>/);
    assert.match(block.context, /nurse/);
    assert.ok(block.tokens <= 300);

    const chain = await engine.history(NS, moved.id);
    assert.deepEqual(chain.versions.map((v) => v.content), ["Alice lives in Lisbon", "Alice lives in Porto"]);
    const then = engine.asOf(NS, city.id);
    assert.equal((await then.get(city.id)).content, "Alice lives in Lisbon");
    assert.equal((await then.recall("Alice city")).hits[0].content, "Alice lives in Lisbon");

    const gone = await engine.forget(NS, { id: job.id, reason: "user asked" });
    assert.ok(gone.memories >= 1 || gone.memory_ids?.length >= 1 || JSON.stringify(gone).includes(String(job.id)));
    await assert.rejects(engine.get(NS, job.id), (e) => e instanceof NotFoundError && e.code === "not_found" && e.field === "id");
    const after = await engine.recall(NS, "where does Alice work, nurse hospital");
    assert.ok(!after.hits.some((h) => h.id === job.id));
    const listed = await engine.list(NS);
    assert.deepEqual(listed.memories.map((m) => m.id).sort(), [pref.id, moved.id].sort());

    const stats = await engine.stats();
    assert.equal(stats.model_id ?? stats.model, "hashing-v1-384");
    assert.equal((await engine.check()).consistent, true);
  } finally {
    await engine.close();
  }
});

test("errors are typed, name the field, and bad input writes nothing", async () => {
  const engine = await Engine.open(storePath(), { embedder: "hashing" });
  try {
    const cases = [
      [() => engine.remember(NS, ""), "content"],
      [() => engine.remember(NS, "fine text", { importance: 7 }), "importance"],
      [() => engine.remember(NS, "fine text", { importance: Number.NaN }), "importance"],
      [() => engine.remember("bad namespace!", "fine text"), "namespace"],
      [() => engine.remember(NS, "fine text", { entities: ["ok", 3] }), "entities"],
      [() => engine.remember(NS, "fine text", { tier: "forever" }), "tier"],
      [() => engine.remember(NS, "fine text", { bogus: 1 }), "bogus"],
      [() => engine.remember(NS, "fine text", { event_time: new Date("not a date") }), "event_time"],
      [() => engine.recall(NS, "q", { top_k: 0 }), "top_k"],
      [() => engine.recall(NS, "q", { as_of: -1 }), "as_of"],
      [() => engine.forget(NS, {}), null],
      [() => engine.call("no_such_op", {}), "op"],
    ];
    for (const [run, field] of cases) {
      await assert.rejects(run(), (e) => {
        assert.ok(e instanceof InvalidInputError, `${field}: ${e}`);
        assert.ok(e instanceof MnemonError);
        assert.equal(e.code, "invalid_input");
        if (field !== null) assert.equal(e.field, field, e.message);
        return true;
      });
    }
    const stats = await engine.stats();
    assert.equal((await engine.list(NS)).memories.length, 0);
    assert.equal(JSON.stringify(stats).includes('"active":1'), false);

    const m = await engine.remember(NS, "Bob's birthday is on the 4th of May");
    await engine.supersede(NS, m.id, "Bob's birthday is on the 5th of May");
    await assert.rejects(engine.supersede(NS, m.id, "again"), ConflictError);
    await assert.rejects(engine.get(NS, 424242), NotFoundError);

    await assert.rejects(Engine.open(storePath(), { embedder: "hashing", flush_interval_s: 0 }), (e) => e instanceof InvalidInputError && e.field === "flush_interval_s");
    await assert.rejects(Engine.open(storePath(), { embedder: "hashing", pii_policy: "shout" }), (e) => e.field === "pii_policy");
    await assert.rejects(Engine.open(storePath(), { embedder: "hashing", colour: "red" }), (e) => e.field === "colour");
    await assert.rejects(Engine.open(engine.path, { embedder: "hashing" }), LockedError);
  } finally {
    await engine.close();
  }
  await assert.rejects(engine.recall(NS, "anything"), ClosedError);
  await engine.close();
});

test("every operation of the surface has a method", () => {
  const methods = {
    import: "importRecords",
    apply_extraction: "applyExtraction",
    end_session: "endSession",
    verify_erasure: "verifyErasure",
    verify_shred: "verifyShred",
    extraction_prompt: "extractionPrompt",
    forget_user: "forgetUser",
  };
  for (const op of OPS) {
    const name = methods[op] ?? op;
    assert.equal(typeof Engine.prototype[name], "function", `no method for ${op}`);
  }
});

test("writes and reads survive a reopen; backup opens as a store", async () => {
  const path = storePath();
  let engine = await Engine.open(path, { embedder: "hashing" });
  const a = await engine.remember(NS, "The project deadline is the 14th of November");
  const backup = storePath("backup");
  const report = await engine.backup(backup);
  assert.ok(report.events >= 1 || JSON.stringify(report).length > 2);
  await engine.close();
  engine = await Engine.open(path, { embedder: "hashing" });
  assert.equal((await engine.get(NS, a.id)).content, "The project deadline is the 14th of November");
  await engine.close();
  const copy = await Engine.open(backup, { embedder: "hashing" });
  assert.equal((await copy.get(NS, a.id)).content, "The project deadline is the 14th of November");
  await copy.close();
});

test("every error code of the surface has its class", async () => {
  const { readFileSync } = await import("node:fs");
  const errors = await import("../dist/errors.js");
  const source = readFileSync(new URL("../../crates/mnemon-api/src/error.rs", import.meta.url), "utf8");
  const codes = [...source.matchAll(/ErrorCode::\w+ => "(\w+)"/g)].map((m) => m[1]);
  assert.ok(codes.length >= 19, `read ${codes.length} codes`);
  for (const code of codes) {
    const cls = errors.ERROR_CLASSES[code];
    assert.ok(cls, `no class for ${code}`);
    const e = errors.errorFor(code, "why", "field");
    assert.ok(e instanceof cls && e instanceof MnemonError);
    assert.equal(e.code, code);
    assert.equal(e.field, "field");
  }
  assert.equal(Object.keys(errors.ERROR_CLASSES).length, new Set(codes).size);
});

test("a Date read position taken after a write includes it", async () => {
  // A Date holds milliseconds, the log microseconds: a Date stands for the
  // end of its millisecond, so "now" right after a write sees the write.
  const engine = await Engine.open(storePath(), { embedder: "hashing" });
  try {
    for (let i = 0; i < 40; i++) {
      const r = await engine.remember(NS, `Errand ${i}: pick up the dry cleaning`, { dedup: "off" });
      const now = new Date();
      const got = await engine.get(NS, r.id, { as_of: now });
      assert.equal(got.id, r.id);
      const view = engine.asOf(NS, now);
      assert.equal((await view.get(r.id)).id, r.id);
    }
  } finally {
    await engine.close();
  }
});
