// src/types.ts is what tools/gen-types.mjs makes of the surface's schemas now.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { schemas, OPS } from "../dist/index.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

test("the generated types are fresh", () => {
  const env = { ...process.env };
  delete env.MNEMON_BIN; // read the schemas from the addon under test
  const r = spawnSync(process.execPath, [join(root, "tools", "gen-types.mjs"), "--check"], { env, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr + r.stdout);
});

test("the freshness check fails on stale types", () => {
  // A copy of the types with one type edited: --check must notice.
  const dir = mkdtempSync(join(tmpdir(), "mnemon-types-"));
  const types = readFileSync(join(root, "src", "types.ts"), "utf8");
  assert.match(types, /export interface RememberRequest \{/);
  const stale = join(dir, "types.ts");
  writeFileSync(stale, types.replace("export interface RememberRequest {", "export interface RememberRequest {\n  stale?: true;"));
  const r = spawnSync(process.execPath, [join(root, "tools", "gen-types.mjs"), "--check", "--file", stale], { encoding: "utf8" });
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stderr, /stale/);
  writeFileSync(stale, types);
  const fresh = spawnSync(process.execPath, [join(root, "tools", "gen-types.mjs"), "--check", "--file", stale], { encoding: "utf8" });
  assert.equal(fresh.status, 0, fresh.stderr);
});

test("the types name every operation the addon serves", () => {
  assert.deepEqual([...OPS], schemas().map((s) => s.op));
});
