// Memory tools for the Vercel AI SDK: remember, recall, context and forget
// on one namespace of an engine, as `ai`'s `tool()` definitions.

import { tool } from "ai";
import { z } from "zod";
import type { Engine } from "./engine.js";
import { fromNative, InvalidInputError, MnemonError } from "./errors.js";
import { native } from "./native.js";

/** Settings of {@link memoryTools}. */
export interface MemoryToolsOptions {
  /** The namespace every tool reads and writes: 1–128 characters of `[A-Za-z0-9_.:@-]`, e.g. `"user:alice"`. */
  namespace: string;
  /** The conversation's session id (1–128 bytes): memories are stamped with it and `context` shows its recent turns. */
  session?: string;
  /** Hits `recall` returns when the model asks for no number, 1–50 (default 5). */
  topK?: number;
  /** Token budget of the `context` tool's block (default 400). */
  budgetTokens?: number;
}

/** Codes of errors the model can act on (its input was at fault): returned to it as the tool's result, not thrown. */
const MODEL_FAULT = new Set(["invalid_input", "not_found", "conflict", "rejected"]);

/** The result of a tool call that the engine refused for the model's input. */
export interface ToolRefusal {
  /** The surface's error code, its message and the input field at fault. */
  error: { code: string; message: string; field: string | null };
}

async function guarded<R>(run: () => Promise<R>): Promise<R | ToolRefusal> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof MnemonError && MODEL_FAULT.has(e.code)) {
      return { error: { code: e.code, message: e.message, field: e.field } };
    }
    throw e;
  }
}

/**
 * Memory tools for `generateText` / `streamText` of the `ai` package, on
 * `namespace` of `engine`:
 *
 * - `remember({content, kind?, key?, importance?})` → `{id, action}`: stores
 *   a memory (a `key` such as `"alice.city"` makes it the key's new version);
 * - `recall({query, top_k?})` → `{memories: [{id, content, score}]}`, best first;
 * - `context({query})` → `{context}`: the `<memories>` prompt block within
 *   `budgetTokens` estimated tokens;
 * - `forget({id})` or `forget({matching})` → `{memories, observations}`: the
 *   counts forgotten (gone from every read path at once).
 *
 * Input the engine refuses (empty text, an unknown id, a value out of range)
 * is returned to the model as `{error: {code, message, field}}` so it can
 * correct itself; other failures (a closed engine, a failed flush) throw.
 *
 * @throws {InvalidInputError} a bad `namespace` (field `namespace`), `session`, `topK` or `budgetTokens`.
 */
export function memoryTools(engine: Engine, options: MemoryToolsOptions) {
  const { namespace, session, topK = 5, budgetTokens = 400 } = options;
  try {
    native.checkNamespace(namespace);
  } catch (e) {
    throw fromNative(e);
  }
  if (!Number.isInteger(topK) || topK < 1 || topK > 50) {
    throw new InvalidInputError(`topK: must be 1 to 50, got ${topK}`, "topK");
  }
  if (!Number.isInteger(budgetTokens) || budgetTokens < 1) {
    throw new InvalidInputError(`budgetTokens: must be a whole number ≥ 1, got ${budgetTokens}`, "budgetTokens");
  }
  return {
    remember: tool({
      description:
        "Store one lasting fact, preference or decision about the user in long-term memory. " +
        "Give `key` (entity.attribute, e.g. alice.city) when the fact replaces an earlier value of the same thing.",
      inputSchema: z.object({
        content: z.string().min(1).describe("the memory, one self-contained sentence"),
        kind: z.enum(["fact", "preference", "decision", "task_state", "episode", "procedure"]).optional(),
        key: z.string().optional().describe("slot key entity.attribute; a later memory under it supersedes this one"),
        importance: z.number().min(0).max(1).optional().describe("0 to 1, default 0.5"),
      }),
      execute: (input) =>
        guarded(async () => {
          const r = await engine.remember(namespace, input.content, {
            kind: input.kind,
            key: input.key,
            importance: input.importance,
            session,
          });
          return { id: r.id, action: r.action };
        }),
    }),
    recall: tool({
      description: "Search long-term memory for what is known about something; returns the best matching memories.",
      inputSchema: z.object({
        query: z.string().min(1).describe("what to look for, in words"),
        top_k: z.number().int().min(1).max(50).optional().describe("most memories to return"),
      }),
      execute: (input) =>
        guarded(async () => {
          const r = await engine.recall(namespace, input.query, { top_k: input.top_k ?? topK, current_session: session });
          return { memories: r.hits.map((h) => ({ id: h.id, content: h.content, score: h.score })) };
        }),
    }),
    context: tool({
      description: "Get a compact block of everything relevant known about the user for a question, to answer from.",
      inputSchema: z.object({ query: z.string().min(1).describe("the question to be answered") }),
      execute: (input) =>
        guarded(async () => {
          const r = await engine.context(namespace, input.query, { budget_tokens: budgetTokens, current_session: session });
          return { context: r.context };
        }),
    }),
    forget: tool({
      description:
        "Forget a memory for good: by its id (from recall), or every memory with the given text (matching). Give exactly one.",
      inputSchema: z.object({
        id: z.number().int().min(1).optional().describe("the memory's id"),
        matching: z.string().min(1).optional().describe("the text of the memories to forget"),
      }),
      execute: (input) =>
        guarded(async () => {
          const r = await engine.forget(namespace, { id: input.id, matching: input.matching, reason: "forgotten by the agent" });
          return { memories: r.memories, observations: r.observations };
        }),
    }),
  };
}
