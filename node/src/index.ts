/**
 * mnemon for Node: the embedded long-term memory engine for LLM agents, in
 * process. Open a store with {@link Engine.open}; every method is one
 * operation of the engine's command surface and returns a Promise of its
 * typed response. See docs/guide/node.md.
 *
 * @packageDocumentation
 */

export { Engine, View } from "./engine.js";
export type {
  CallerEmbedder,
  OpenOptions,
  RememberOptions,
  SupersedeOptions,
  ObserveOptions,
  RecallOptions,
  ContextOptions,
  HistoryOptions,
  ListOptions,
  ForgetOptions,
  ImportOptions,
  LogOptions,
  TimelineOptions,
  PageOptions,
} from "./engine.js";
export type { AsOfInput, TimeInput } from "./encode.js";
export * from "./errors.js";
export type * from "./types.js";
export { OPS } from "./types.js";
import { native } from "./native.js";

/** The JSON Schema of every operation's request and response (the output of `mnemon schema --json`), parsed. */
export function schemas(): { op: string; read_only: boolean; request: unknown; response: unknown }[] {
  return JSON.parse(native.schemas());
}

/** The version of the engine the addon was built from. */
export const VERSION: string = native.version();
/** Largest memory or observation text by default, in bytes of UTF-8. */
export const DEFAULT_MAX_CONTENT_BYTES: number = native.defaultMaxContentBytes();
/** Default cap of one response, in estimated tokens. */
export const DEFAULT_MAX_RESPONSE_TOKENS: number = native.defaultMaxResponseTokens();
