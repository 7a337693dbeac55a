// Arguments of a call as the surface's JSON, with the field at fault named.

import { InvalidInputError } from "./errors.js";
import type { AsOf } from "./types.js";

/**
 * A read position: a log position (a number, the `seq` of an event; 0 is
 * before anything), a recorded time (a `Date` or RFC 3339 text: what the
 * store held then), or the surface's object itself (`{seq}`, `{time}`,
 * `{valid_time}`: what was true in the world at that time). A `Date` holds
 * milliseconds while the log records microseconds, so a `Date` read
 * position stands for the end of its millisecond: `new Date()` taken after
 * a write's Promise resolved includes that write.
 */
export type AsOfInput = number | Date | string | AsOf;

/** A time: a `Date` or RFC 3339 text (sent as given). */
export type TimeInput = Date | string;

/** `value` (a Date or text) as RFC 3339 text. Throws InvalidInputError naming `field` otherwise. */
export function timeText(field: string, value: unknown): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new InvalidInputError(`${field}: an invalid Date`, field);
    return value.toISOString();
  }
  if (typeof value === "string") return value;
  throw new InvalidInputError(`${field}: expected a Date or RFC 3339 text, got ${typeName(value)}`, field);
}

/** A read position as the surface's `as_of` object. Throws InvalidInputError naming `field`. */
export function asOfValue(value: unknown, field = "as_of"): AsOf {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new InvalidInputError(`${field}: a log position is a whole number ≥ 0, got ${value}`, field);
    }
    return { seq: value };
  }
  if (value instanceof Date) return { time: timeText(field, value).replace(/Z$/, "999Z") };
  if (typeof value === "string") return { time: timeText(field, value) };
  if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as AsOf;
  throw new InvalidInputError(`${field}: expected a log position (number), a Date or RFC 3339 text, got ${typeName(value)}`, field);
}

/** A short name of the type of `value`, for messages. */
export function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (value instanceof Date) return "Date";
  return typeof value;
}

/**
 * `args` as compact JSON text for the surface: `undefined` fields are left
 * out, Dates become RFC 3339 text.
 *
 * Throws InvalidInputError naming the field for a value JSON cannot hold:
 * NaN or infinite numbers, bigints, functions, symbols, lone surrogates,
 * objects that are not plain (Maps, Sets, class instances), cycles.
 */
export function encodeArgs(args: Record<string, unknown>): string {
  check(args, "", new Set());
  return JSON.stringify(args, (_k, v: unknown) => v);
}

function check(value: unknown, path: string, seen: Set<object>): void {
  const at = path || "arguments";
  switch (typeof value) {
    case "undefined":
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new InvalidInputError(`${at}: ${value} is not a finite number`, at);
      return;
    case "string":
      if (!value.isWellFormed()) throw new InvalidInputError(`${at}: not valid Unicode text (lone surrogate)`, at);
      return;
    case "bigint":
    case "function":
    case "symbol":
      throw new InvalidInputError(`${at}: a ${typeof value} is not a JSON value`, at);
  }
  if (value === null) return;
  if (value instanceof Date) {
    timeText(at, value);
    return;
  }
  if (seen.has(value as object)) throw new InvalidInputError(`${at}: a cycle`, at);
  seen.add(value as object);
  if (Array.isArray(value)) {
    value.forEach((v, i) => check(v, `${path}[${i}]`, seen));
  } else if (ArrayBuffer.isView(value)) {
    throw new InvalidInputError(`${at}: a typed array; pass an array of numbers (Array.from(...))`, at);
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      throw new InvalidInputError(`${at}: a ${proto?.constructor?.name ?? "object"} is not a JSON value`, at);
    }
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) check(v, path ? `${path}.${k}` : k, seen);
  }
  seen.delete(value as object);
}
