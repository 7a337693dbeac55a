// A caller's own embedding function, called from the engine's threads
// through the JavaScript thread; its answers are checked.
import assert from "node:assert/strict";
import { test } from "node:test";
import { EmbedderError, Engine, InvalidInputError } from "../dist/index.js";
import { storePath } from "./helpers.mjs";

// A toy bag-of-words model: one component per word bucket.
const DIMS = 64;
function bag(text) {
  const v = new Array(DIMS).fill(0);
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0;
    for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    v[h % DIMS] += 1;
  }
  if (v.every((x) => x === 0)) v[0] = 1;
  return v;
}

test("an async caller embedder is used for memories and queries", async () => {
  const calls = { passage: 0, query: 0 };
  const embedder = {
    name: "toy-bag-v1",
    dims: DIMS,
    async embed(texts, { query }) {
      calls[query ? "query" : "passage"] += texts.length;
      await new Promise((r) => setTimeout(r, 1));
      return texts.map(bag);
    },
  };
  const engine = await Engine.open(storePath(), { embedder });
  try {
    assert.equal(engine.modelId, "toy-bag-v1");
    assert.equal(engine.dim, DIMS);
    assert.equal(engine.embedder, embedder);
    await engine.remember("ns", "The cat sleeps on the red sofa");
    const dog = await engine.remember("ns", "The dog barks at the postman every morning");
    const hits = await engine.recall("ns", "dog barks postman", { mode: "dense", top_k: 1 });
    assert.equal(hits.hits[0].id, dog.id);
    assert.ok(calls.passage >= 2 && calls.query >= 1, JSON.stringify(calls));
    const [v] = await engine.embed(["a dog"]);
    assert.equal(v.length, DIMS);
    assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5);
  } finally {
    await engine.close();
  }
});

test("the dimension is probed when not given, and checked on every answer", async () => {
  let broken = false;
  const engine = await Engine.open(storePath(), {
    embedder: { name: "toy-probe", embed: (texts) => texts.map((t) => (broken ? bag(t).slice(1) : bag(t))) },
  });
  try {
    assert.equal(engine.dim, DIMS);
    broken = true;
    await assert.rejects(engine.remember("ns", "a memory with the wrong vector size"), (e) => {
      assert.ok(e instanceof EmbedderError, String(e));
      assert.match(e.message, /toy-probe/);
      assert.match(e.message, /63 components, expected 64/);
      return true;
    });
    assert.equal((await engine.list("ns")).memories.length, 0, "nothing was written");
  } finally {
    await engine.close();
  }
});

test("wrong answers and throws are embedder errors, bad settings invalid input", async () => {
  const answers = {
    count: (texts) => texts.slice(1).map(bag),
    nan: (texts) => texts.map(() => new Array(DIMS).fill(Number.NaN)),
    zero: (texts) => texts.map(() => new Array(DIMS).fill(0)),
    text: (texts) => texts.map(() => "not a vector"),
    throws: () => {
      throw new TypeError("model offline");
    },
    rejects: async () => Promise.reject(new Error("quota exceeded")),
  };
  const expect = { count: /0 vectors for 1 texts/, nan: /finite/, zero: /all zeros/, text: /not an array/, throws: /TypeError: model offline/, rejects: /quota exceeded/ };
  for (const [name, embed] of Object.entries(answers)) {
    await assert.rejects(Engine.open(storePath(), { embedder: { name: `toy-${name}`, embed } }), (e) => {
      assert.ok(e instanceof EmbedderError, `${name}: ${e}`);
      assert.match(e.message, expect[name]);
      return true;
    });
  }
  const embed = (texts) => texts.map(bag);
  await assert.rejects(Engine.open(storePath(), { embedder: { name: "", embed } }), (e) => e instanceof InvalidInputError && e.field === "embedder_name");
  await assert.rejects(Engine.open(storePath(), { embedder: { name: "hashing-v1-384", embed } }), (e) => e.field === "embedder_name");
  await assert.rejects(Engine.open(storePath(), { embedder: { name: "toy", dims: 0, embed } }), (e) => e.field === "dims");
  await assert.rejects(Engine.open(storePath(), { embedder: { name: "toy", embed: 5 } }), (e) => e.field === "embedder");
});
