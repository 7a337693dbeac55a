// The memory tools driven by the AI SDK itself: generateText with the SDK's
// mock language model, which calls the tools as a model would (no network).
import assert from "node:assert/strict";
import { test } from "node:test";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Engine, InvalidInputError } from "../dist/index.js";
import { memoryTools } from "../dist/ai.js";
import { storePath } from "./helpers.mjs";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A mock model that makes the tool calls `steps` (one step each), then answers with the last tool result. */
function scripted(steps) {
  let i = 0;
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      const step = steps[i++];
      if (step) {
        return {
          content: [{ type: "tool-call", toolCallId: `call-${i}`, toolName: step.tool, input: JSON.stringify(step.input) }],
          finishReason: { unified: "tool-calls", raw: undefined },
          usage,
          warnings: [],
        };
      }
      const last = options.prompt.at(-1);
      const result = last.content.find((p) => p.type === "tool-result");
      return {
        content: [{ type: "text", text: `answer from ${JSON.stringify(result.output)}` }],
        finishReason: { unified: "stop", raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}

test("a model remembers, recalls, reads its context and forgets through the tools", async () => {
  const engine = await Engine.open(storePath(), { embedder: "hashing" });
  try {
    const tools = memoryTools(engine, { namespace: "user:sam", session: "chat-1" });
    assert.deepEqual(Object.keys(tools).sort(), ["context", "forget", "recall", "remember"]);
    const model = scripted([
      { tool: "remember", input: { content: "Sam is vegetarian and avoids fish", kind: "preference" } },
      { tool: "remember", input: { content: "Sam lives in Leeds", key: "sam.city" } },
      { tool: "remember", input: { content: "Sam lives in York", key: "sam.city" } },
      { tool: "recall", input: { query: "where does Sam live" } },
    ]);
    const r = await generateText({ model, tools, prompt: "I moved to York; remember that.", stopWhen: stepCountIs(6) });
    const results = r.steps.flatMap((s) => s.toolResults);
    assert.equal(results.length, 4);
    assert.equal(results[2].output.action, "superseded");
    assert.equal(results[3].output.memories[0].content, "Sam lives in York");
    assert.ok(!results[3].output.memories.some((m) => m.content === "Sam lives in Leeds"));
    assert.match(r.text, /Sam lives in York/);
    const stored = await engine.list("user:sam");
    assert.deepEqual(stored.memories.map((m) => m.content).sort(), ["Sam is vegetarian and avoids fish", "Sam lives in York"]);
    assert.ok(stored.memories.every((m) => m.session === "chat-1"));

    const veg = stored.memories.find((m) => m.content.startsWith("Sam is vegetarian"));
    const second = await generateText({
      model: scripted([
        { tool: "context", input: { query: "what should I cook for Sam" } },
        { tool: "forget", input: { id: veg.id } },
      ]),
      tools,
      prompt: "Plan dinner, then forget the diet note.",
      stopWhen: stepCountIs(4),
    });
    const [block, gone] = second.steps.flatMap((s) => s.toolResults).map((t) => t.output);
    assert.match(block.context, /vegetarian/);
    assert.equal(gone.memories, 1);
    assert.equal((await engine.list("user:sam")).memories.length, 1);
  } finally {
    await engine.close();
  }
});

test("input the engine refuses goes back to the model as an error result", async () => {
  const engine = await Engine.open(storePath(), { embedder: "hashing" });
  try {
    const tools = memoryTools(engine, { namespace: "user:sam" });
    const r = await generateText({
      model: scripted([{ tool: "forget", input: { id: 99999 } }, { tool: "forget", input: {} }]),
      tools,
      prompt: "forget something",
      stopWhen: stepCountIs(3),
    });
    const [missing, none] = r.steps.flatMap((s) => s.toolResults).map((t) => t.output);
    assert.equal(missing.error.code, "not_found");
    assert.equal(none.error.code, "invalid_input");
    assert.throws(() => memoryTools(engine, { namespace: "not a namespace" }), (e) => e instanceof InvalidInputError && e.field === "namespace");
    assert.throws(() => memoryTools(engine, { namespace: "ok", topK: 0 }), (e) => e.field === "topK");
  } finally {
    await engine.close();
  }
});
