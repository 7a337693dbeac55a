// Encrypted stores from Node: Engine.open with key_file / key_env, the typed
// KeyRequiredError and WrongKeyError, and forgetUser, which forgets a user's
// namespaces and shreds each one's key.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  Engine,
  InvalidInputError,
  KeyRequiredError,
  MnemonError,
  NotFoundError,
  WrongKeyError,
} from "../dist/index.js";
import { storePath, tempDir } from "./helpers.mjs";

// Each test names its own key; none comes from the environment.
for (const v of ["MNEMON_KEY_FILE", "MNEMON_KEY", "MNEMON_KEYRING"]) delete process.env[v];

/** A key file as `mnemon key new` writes it: 64 hex digits, mode 0600. */
function newKey(dir, name = "store.key") {
  const path = join(dir, name);
  writeFileSync(path, randomBytes(32).toString("hex") + "\n", { mode: 0o600, flag: "wx" });
  return path;
}

async function fill(path, key_file) {
  const e = await Engine.open(path, { embedder: "hashing", key_file });
  try {
    await e.remember("alice", "Alice prefers a window seat on long flights");
    await e.remember("alice", "Alice is allergic to peanuts");
    await e.remember("alice:work", "Alice's team ships the billing service on Thursdays");
    await e.observe("alice:work", "s1", "Can you book the Lisbon offsite?");
    await e.remember("bob", "Bob lives in Porto");
  } finally {
    await e.close();
  }
}

test("an encrypted store opens with its key, and refuses none or another with typed errors", async () => {
  const dir = tempDir();
  const key = newKey(dir);
  const path = storePath();
  await fill(path, key);
  const e = await Engine.open(path, { embedder: "hashing", key_file: key });
  const hits = await e.recall("alice", "which seat does Alice like on a flight");
  assert.match(hits.hits[0].content, /window seat/);
  await e.close();

  await assert.rejects(Engine.open(path, { embedder: "hashing" }), (err) => {
    assert.ok(err instanceof KeyRequiredError && err instanceof MnemonError);
    assert.equal(err.code, "key_required");
    assert.equal(err.field, "key");
    return true;
  });
  await assert.rejects(Engine.open(path, { embedder: "hashing", key_file: newKey(dir, "other.key") }), (err) => {
    assert.ok(err instanceof WrongKeyError);
    assert.equal(err.code, "wrong_key");
    return true;
  });
  await assert.rejects(Engine.open(path, { embedder: "hashing", key_file: join(dir, "nowhere.key") }), KeyRequiredError);
  await assert.rejects(Engine.open(path, { embedder: "hashing", key_file: key, key_env: "K" }), InvalidInputError);
  await assert.rejects(Engine.open(path, { embedder: "hashing", key_file: 7 }), InvalidInputError);

  process.env.NODE_TEST_MNEMON_KEY = (await import("node:fs")).readFileSync(key, "utf8").trim();
  const byVar = await Engine.open(path, { embedder: "hashing", key_env: "NODE_TEST_MNEMON_KEY" });
  try {
    assert.equal((await byVar.list("alice")).memories.length, 2);
  } finally {
    await byVar.close();
    delete process.env.NODE_TEST_MNEMON_KEY;
  }
});

test("forgetUser forgets each namespace whole and shreds its key", async () => {
  const dir = tempDir();
  const key = newKey(dir);
  const path = storePath();
  await fill(path, key);
  const e = await Engine.open(path, { embedder: "hashing", key_file: key });
  try {
    const r = await e.forgetUser(["alice", "alice:work"], { reason: "account closed" });
    assert.deepEqual(
      r.namespaces.map((n) => [n.namespace, n.memories, n.observations, n.key_shredded]),
      [
        ["alice", 2, 0, true],
        ["alice:work", 1, 1, true],
      ],
    );
    assert.equal(r.memories, 3);
    assert.equal((await e.list("alice")).memories.length, 0);
    assert.equal((await e.list("bob")).memories[0].content, "Bob lives in Porto");

    const before = (await e.stats()).last_seq;
    await assert.rejects(e.forgetUser([]), (err) => err instanceof InvalidInputError && err.field === "namespaces");
    await assert.rejects(e.forgetUser(["bob", "bad name"]), (err) => err instanceof InvalidInputError && err.field === "namespaces[1]");
    await assert.rejects(e.forgetUser(["bob", "nobody"]), NotFoundError);
    assert.equal((await e.stats()).last_seq, before);
    assert.equal((await e.list("bob")).memories.length, 1);
  } finally {
    await e.close();
  }
});

test("verifyShred proves a shredded namespace unreadable in the store, a backup and an export", async () => {
  const dir = tempDir();
  const key = newKey(dir);
  const path = storePath();
  await fill(path, key);
  const e = await Engine.open(path, { embedder: "hashing", key_file: key });
  try {
    const backup = storePath("before-backup");
    const exported = join(dir, "before.jsonl");
    await e.backup(backup);
    await e.export(exported);
    await assert.rejects(e.verifyShred("alice"), (err) => err instanceof InvalidInputError && err.field === "namespace");
    await e.forgetUser(["alice"]);
    const report = await e.verifyShred("alice", { backups: [backup], exports: [exported] });
    assert.equal(report.namespace, "alice");
    assert.deepEqual(report.shredded_keys, [1]);
    assert.equal(report.verified, true);
    assert.deepEqual(report.checks.map((c) => c.source).sort(), [backup, exported, "store"].sort());
    for (const c of report.checks) {
      assert.ok(c.sealed >= 2, JSON.stringify(c));
      assert.equal(c.opened, 0);
      assert.equal(c.plain, 0);
    }
    await assert.rejects(e.verifyShred("alice", { backups: [dir] }), (err) => err instanceof InvalidInputError && err.field === "backups");
    await assert.rejects(e.verifyShred("alice", { colour: "red" }), InvalidInputError);
  } finally {
    await e.close();
  }
});
