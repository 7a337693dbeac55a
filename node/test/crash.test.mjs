// A Node process killed (SIGKILL) in the middle of writes: every write whose
// Promise resolved is in the store when it is opened again.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { Engine } from "../dist/index.js";
import { storePath } from "./helpers.mjs";

const CHILD = `
const { Engine } = await import(process.argv[1]);
const engine = await Engine.open(process.argv[2], { embedder: "hashing" });
let i = 0;
async function writer(lane) {
  for (;;) {
    const n = i++;
    const r = await engine.remember("crash", "Lane " + lane + " wrote entry " + n + " about the quarterly budget");
    process.stdout.write(r.id + " " + n + "\\n");
  }
}
console.log("ready");
for (let lane = 0; lane < 8; lane++) writer(lane);
`;

test("acknowledged writes survive SIGKILL", async () => {
  const path = storePath();
  const pkg = new URL("../dist/index.js", import.meta.url).href;
  const child = spawn(process.execPath, ["--input-type=module", "-e", CHILD, pkg, path], { stdio: ["ignore", "pipe", "inherit"] });
  const acked = new Map();
  const lines = createInterface({ input: child.stdout });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal)));
  await new Promise((resolve) => {
    lines.on("line", (line) => {
      if (line === "ready") return;
      const [id, n] = line.split(" ").map(Number);
      acked.set(id, n);
      if (acked.size === 300) {
        child.kill("SIGKILL");
        resolve();
      }
    });
  });
  assert.equal(await exited, "SIGKILL");
  assert.ok(acked.size >= 300);
  const engine = await Engine.open(path, { embedder: "hashing" });
  try {
    for (const [id, n] of acked) {
      const m = await engine.get("crash", id);
      assert.match(m.content, new RegExp(`wrote entry ${n} about`));
    }
    assert.equal((await engine.check()).consistent, true);
  } finally {
    await engine.close();
  }
});
