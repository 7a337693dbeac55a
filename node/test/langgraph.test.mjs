// MnemonStore under LangGraph.js itself: a compiled graph whose node puts and
// searches through it, and the same operations answered as LangGraph's own
// InMemoryStore answers them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Annotation, START, StateGraph } from "@langchain/langgraph";
import { InMemoryStore, InvalidNamespaceError } from "@langchain/langgraph-checkpoint";
import { Engine, InvalidInputError } from "../dist/index.js";
import { MnemonStore } from "../dist/langgraph.js";
import { storePath } from "./helpers.mjs";

test("a graph compiled with the store puts and searches through it", async () => {
  const store = await MnemonStore.open(storePath(), { engine: { embedder: "hashing" } });
  try {
    const State = Annotation.Root({ said: Annotation(), found: Annotation() });
    const graph = new StateGraph(State)
      .addNode("remember", async (state, config) => {
        const user = config.configurable.user_id;
        await config.store.put(["memories", user], `note-${state.said.length}`, { text: state.said });
        const found = await config.store.search(["memories", user], { query: state.said, limit: 3 });
        return { found: found.map((i) => i.value.text) };
      })
      .addEdge(START, "remember")
      .compile({ store });
    const config = { configurable: { user_id: "u1" } };
    await graph.invoke({ said: "I sail on weekends in Kiel" }, config);
    const out = await graph.invoke({ said: "I keep my sailing boat in the Kiel marina" }, config);
    assert.equal(out.found[0], "I keep my sailing boat in the Kiel marina");
    assert.ok(out.found.includes("I sail on weekends in Kiel"));
    // The items are mnemon memories: a version chain, recall from any door.
    const ns = store.mnemonNamespace(["memories", "u1"]);
    assert.equal(ns, "lg:memories.u1");
    const recalled = await store.engine.recall(ns, "sailing boat marina");
    assert.match(recalled.hits[0].content, /sailing boat/);
  } finally {
    await store.close();
  }
});

async function apply(store, steps) {
  const answers = [];
  for (const [method, ...args] of steps) {
    const r = await store[method](...args);
    if (method === "get") answers.push(r && { namespace: r.namespace, key: r.key, value: r.value });
    else if (method === "search") {
      answers.push(r.map((i) => JSON.stringify([i.namespace, i.key, i.value])).sort());
    } else if (method === "listNamespaces") answers.push(r);
    else answers.push(null);
  }
  return answers;
}

test("get, put, delete, search with filters and listNamespaces answer as InMemoryStore does", async () => {
  const steps = [
    ["put", ["users", "alice", "prefs"], "food", { likes: "ramen", spicy: true, level: 3 }],
    ["put", ["users", "alice", "prefs"], "drink", { likes: "green tea", spicy: false, level: 1 }],
    ["put", ["users", "bob", "prefs"], "food", { likes: "pizza", spicy: false, level: 2 }],
    ["put", ["users", "bob", "notes"], "k with spaces & ünïcode", { text: "meet at 5", tags: ["work", "urgent"] }],
    ["put", ["teams", "sailing"], "boat", { name: "Gull", length: 7.5 }],
    ["get", ["users", "alice", "prefs"], "food"],
    ["get", ["users", "alice", "prefs"], "missing"],
    ["get", ["users", "bob", "notes"], "k with spaces & ünïcode"],
    ["put", ["users", "alice", "prefs"], "food", { likes: "udon", spicy: true, level: 4 }],
    ["get", ["users", "alice", "prefs"], "food"],
    ["search", ["users"]],
    ["search", ["users", "alice"]],
    ["search", ["users"], { filter: { spicy: false } }],
    ["search", ["users"], { filter: { level: { $gte: 2 } } }],
    ["search", ["users"], { filter: { likes: { $ne: "pizza" }, spicy: true } }],
    ["search", ["users"], { limit: 2, offset: 10 }],
    ["listNamespaces"],
    ["listNamespaces", { prefix: ["users"] }],
    ["listNamespaces", { suffix: ["prefs"] }],
    ["listNamespaces", { prefix: ["users", "*", "prefs"] }],
    ["listNamespaces", { maxDepth: 2 }],
    ["listNamespaces", { limit: 2, offset: 1 }],
    ["delete", ["users", "bob", "prefs"], "food"],
    ["delete", ["users", "bob", "prefs"], "never-there"],
    ["get", ["users", "bob", "prefs"], "food"],
    ["search", ["users", "bob"]],
    ["listNamespaces", { prefix: ["users"] }],
  ];
  const store = await MnemonStore.open(storePath(), { engine: { embedder: "hashing" } });
  try {
    const ours = await apply(store, steps);
    const theirs = await apply(new InMemoryStore(), steps);
    const last = steps.length - 1;
    steps.slice(0, last).forEach((step, i) => assert.deepEqual(ours[i], theirs[i], `step ${i}: ${JSON.stringify(step)}`));
    // One difference, the Python door's: a namespace whose last item was
    // deleted is no longer listed (InMemoryStore keeps listing it, empty).
    assert.deepEqual(theirs[last], [["users", "alice", "prefs"], ["users", "bob", "notes"], ["users", "bob", "prefs"]]);
    assert.deepEqual(ours[last], [["users", "alice", "prefs"], ["users", "bob", "notes"]]);
    // Each put of a key is a version of one memory.
    const versions = await store.history(["users", "alice", "prefs"], "food");
    assert.deepEqual(versions.map((v) => v.value.likes), ["ramen", "udon"]);
  } finally {
    await store.close();
  }
});

test("the store reopens with its catalogue, and refuses bad input", async () => {
  const path = storePath();
  let store = await MnemonStore.open(path, { engine: { embedder: "hashing" } });
  await store.put(["docs", "guide"], "intro", { title: "Getting started" });
  await store.put(["docs", "guide"], "hidden", { title: "Internal draft" }, false);
  await store.close();
  store = await MnemonStore.open(path, { engine: { embedder: "hashing" } });
  try {
    assert.deepEqual(await store.listNamespaces(), [["docs", "guide"]]);
    const hits = await store.search(["docs"], { query: "Internal draft Getting started", limit: 5 });
    assert.equal(hits[0].key, "intro");
    assert.equal(typeof hits[0].score, "number");
    const unranked = hits.find((h) => h.key === "hidden");
    assert.equal(unranked.score, undefined, "an index: false item is never ranked");
    await assert.rejects(store.put(["docs", "a.b"], "k", { x: 1 }), InvalidNamespaceError);
    await assert.rejects(store.put([], "k", { x: 1 }), InvalidNamespaceError);
    await assert.rejects(store.put(["docs"], "k", "not an object"), (e) => e instanceof InvalidInputError && e.field === "value");
    await assert.rejects(store.put(["docs"], "x".repeat(300), { x: 1 }), (e) => e instanceof InvalidInputError && e.field === "key");
    await assert.rejects(store.search(["docs"], { filter: { x: { $regex: "a" } } }), (e) => e.field === "filter");
    assert.deepEqual(await store.listNamespaces(), [["docs", "guide"]], "nothing was written by refused puts");
    assert.throws(() => new MnemonStore(store.engine, { prefix: "no spaces" }), (e) => e.field === "prefix");
  } finally {
    await store.close();
  }
});

// A toy LangChain Embeddings: one component per word bucket.
class BagEmbeddings {
  static DIMS = 32;
  vector(text) {
    const v = new Array(BagEmbeddings.DIMS).fill(0);
    for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
      let h = 7;
      for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
      v[h % BagEmbeddings.DIMS] += 1;
    }
    if (v.every((x) => x === 0)) v[0] = 1;
    return v;
  }
  async embedDocuments(texts) {
    return texts.map((t) => this.vector(t));
  }
  async embedQuery(text) {
    return this.vector(text);
  }
}

test("with an index, search ranks by the indexed fields as InMemoryStore does", async () => {
  const embeddings = new BagEmbeddings();
  const index = { dims: BagEmbeddings.DIMS, fields: ["text"], embeddings };
  const ours = await MnemonStore.open(storePath(), { index });
  const theirs = new InMemoryStore({ index });
  try {
    assert.equal(ours.engine.modelId, "langchain:BagEmbeddings");
    const items = [
      ["k1", { text: "the red fox jumps over the fence", tag: "animal" }],
      ["k2", { text: "stock prices fell sharply on monday", tag: "news" }],
      ["k3", { text: "a quick brown fox and a lazy dog", tag: "animal" }],
      ["k4", { text: "rain is expected over the weekend", tag: "weather" }],
      ["k5", { note: "no text field here", tag: "misc" }],
    ];
    for (const store of [ours, theirs]) {
      for (const [k, v] of items) await store.put(["docs"], k, v);
      await store.put(["docs"], "k6", { text: "fox fox fox", tag: "animal" }, false);
    }
    for (const query of ["brown fox", "monday stock market", "weekend weather rain"]) {
      const a = await ours.search(["docs"], { query, limit: 4 });
      const b = await theirs.search(["docs"], { query, limit: 4 });
      const ranked = (r) => r.filter((i) => i.score !== undefined && i.score !== null);
      assert.deepEqual(ranked(a).map((i) => i.key), ranked(b).map((i) => i.key), query);
      ranked(a).forEach((i, n) => assert.ok(Math.abs(i.score - ranked(b)[n].score) < 1e-4, `${query}: ${i.key}`));
    }
    const foxes = await ours.search(["docs"], { query: "fox", filter: { tag: "animal" }, limit: 10 });
    assert.deepEqual(foxes.map((i) => i.key).slice(0, 2).sort(), ["k1", "k3"]);
    assert.equal(foxes.find((i) => i.key === "k6").score, undefined, "index: false is never ranked");
    // A new version replaces the item's vectors; a delete removes them.
    await ours.put(["docs"], "k2", { text: "the fox watched the stock ticker", tag: "news" });
    assert.equal((await ours.search(["docs"], { query: "fox ticker", limit: 1 }))[0].key, "k2");
    await ours.delete(["docs"], "k2");
    assert.ok(!(await ours.search(["docs"], { query: "fox ticker", limit: 10 })).some((i) => i.key === "k2"));
    assert.throws(() => new MnemonStore(ours.engine, { index: { dims: 3 } }), (e) => e.field === "index.dims");
    assert.throws(() => new MnemonStore(ours.engine, { index: { embeddings: new BagEmbeddings() } }), (e) => e.field === "index.embeddings");
  } finally {
    await ours.close();
  }
});
