// The JavaScript examples of docs/guide/node.md, run as written (with the
// package under test as `mnemon`), each in a fresh working directory.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { tempDir } from "./helpers.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = join(root, "..", "docs", "guide", "node.md");
const pkg = pathToFileURL(join(root, "dist", "index.js")).href;

function blocks(text) {
  const out = [];
  const re = /^```js\n([\s\S]*?)^```$/gm;
  let m;
  while ((m = re.exec(text))) out.push({ line: text.slice(0, m.index).split("\n").length, code: m[1] });
  return out;
}

const found = blocks(readFileSync(page, "utf8"));

test("the guide has JavaScript examples", () => {
  assert.ok(found.length >= 2);
});

for (const { line, code } of found) {
  test(`docs/guide/node.md:${line} runs`, () => {
    const cwd = tempDir("mnemon-doc-");
    const file = join(cwd, "example.mjs");
    writeFileSync(file, code.replaceAll('from "mnemon"', `from ${JSON.stringify(pkg)}`));
    const r = spawnSync(process.execPath, [file], { cwd, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  });
}
