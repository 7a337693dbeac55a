// The installed neural model (e5-small, as scripts/test installs it):
// recall by meaning, not only by shared words. Skipped when no model is
// installed, unless MNEMON_REQUIRE_MODELS is set (as in scripts/test).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Engine } from "../dist/index.js";
import { storePath } from "./helpers.mjs";

const modelsDir =
  process.env.MNEMON_MODELS ?? join(process.env.XDG_DATA_HOME ?? join(homedir(), ".local", "share"), "mnemon", "models");
const installed = existsSync(join(modelsDir, "e5-small"));
const required = Boolean(process.env.MNEMON_REQUIRE_MODELS);

test("e5-small recalls by meaning", { skip: !installed && !required && "e5-small is not installed" }, async () => {
  const engine = await Engine.open(storePath(), { embedder: "e5-small" });
  try {
    assert.match(engine.modelId, /^multilingual-e5-small/);
    await engine.remember("u", "Maria is allergic to peanuts");
    await engine.remember("u", "Maria's flight to Chicago leaves at 7am on Friday");
    const car = await engine.remember("u", "Maria drives a blue Toyota Corolla");
    const hits = await engine.recall("u", "what vehicle does she own?", { top_k: 1 });
    assert.equal(hits.hits[0].id, car.id);
  } finally {
    await engine.close();
  }
});
