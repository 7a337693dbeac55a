// The errors of the package: one class per error code of the command surface.

/**
 * Base class of every error mnemon raises.
 *
 * `code` is the command surface's stable error code (the same string the
 * CLI's `--json` errors, the MCP server and the Python package report, e.g.
 * `"invalid_input"`); `field` the request field at fault (a JSON path such as
 * `"kinds[1]"`) or `null`. Branch on the class or on `code`, never on the
 * message.
 */
export class MnemonError extends Error {
  /** The surface's error code. */
  readonly code: string;
  /** The request field at fault, or null. */
  readonly field: string | null;

  /** An error with `message`, naming `field` (or null); `code` defaults to the class's. */
  constructor(message: string, field: string | null = null, code?: string) {
    super(message);
    this.name = new.target.name;
    this.field = field;
    this.code = code ?? (new.target as unknown as { CODE: string }).CODE ?? "internal";
  }

  /** The code of errors of this class. */
  static readonly CODE: string = "internal";
}

/** The request was malformed or a value out of range; nothing was written. `field` names the argument. */
export class InvalidInputError extends MnemonError {
  static override readonly CODE = "invalid_input";
}
/** A target that does not exist (an id not in the namespace, or forgotten). */
export class NotFoundError extends MnemonError {
  static override readonly CODE = "not_found";
}
/** The operation conflicts with the current state (e.g. superseding a memory that is not active). */
export class ConflictError extends MnemonError {
  static override readonly CODE = "conflict";
}
/** Refused by the safety policy (personal data under `reject`, an injected instruction under `reject`). */
export class RejectedError extends MnemonError {
  static override readonly CODE = "rejected";
}
/** The caller may not use this namespace (servers with an allow-list). */
export class NamespaceNotAllowedError extends MnemonError {
  static override readonly CODE = "namespace_not_allowed";
}
/** The response would exceed the response cap (`max_response_tokens`). */
export class ResponseTooLargeError extends MnemonError {
  static override readonly CODE = "response_too_large";
}
/** Another process or engine holds the store's lock. */
export class LockedError extends MnemonError {
  static override readonly CODE = "locked";
}
/** A service the call needs is unavailable for now; retry later. */
export class UnavailableError extends MnemonError {
  static override readonly CODE = "unavailable";
}
/** The engine was closed. */
export class ClosedError extends MnemonError {
  static override readonly CODE = "closed";
}
/** The call was cancelled. */
export class CancelledError extends MnemonError {
  static override readonly CODE = "cancelled";
}
/** A flush failed earlier: the writer refuses writes rather than diverge from the disk. */
export class PoisonedError extends MnemonError {
  static override readonly CODE = "poisoned";
}
/** A record of the store is damaged. */
export class CorruptedError extends MnemonError {
  static override readonly CODE = "corrupted";
}
/** The store was written by an incompatible version. */
export class IncompatibleFormatError extends MnemonError {
  static override readonly CODE = "incompatible_format";
}
/** The embedder failed or answered wrongly, or the model is not installed. */
export class EmbedderError extends MnemonError {
  static override readonly CODE = "embedder";
}
/** A file could not be read or written. */
export class IoError extends MnemonError {
  static override readonly CODE = "io";
}
/** The storage layer failed. */
export class StorageError extends MnemonError {
  static override readonly CODE = "storage";
}
/** A bug in mnemon. */
export class InternalError extends MnemonError {
  static override readonly CODE = "internal";
}
/** A newer owner of the namespace took over (cluster mode). */
export class FencedError extends MnemonError {
  static override readonly CODE = "fenced";
}
/** The caller is not authorised (servers with tokens). */
export class UnauthorizedError extends MnemonError {
  static override readonly CODE = "unauthorized";
}

/**
 * The store is encrypted at rest and was opened without a key (no `keyFile`,
 * no `MNEMON_KEY_FILE`, no `MNEMON_KEY`), or the key file named does not
 * exist. Nothing was opened or written; `field` is `"key"`.
 */
export class KeyRequiredError extends MnemonError {
  static override readonly CODE = "key_required";
}
/**
 * The key given does not open the encrypted store (not the key it was
 * created with). Nothing was opened or written; `field` is `"key"`. A key
 * given to a store created without one is an {@link InvalidInputError}.
 */
export class WrongKeyError extends MnemonError {
  static override readonly CODE = "wrong_key";
}

/** The class of each error code. */
export const ERROR_CLASSES: Readonly<Record<string, typeof MnemonError>> = Object.freeze(
  Object.fromEntries(
    [
      InvalidInputError,
      NotFoundError,
      ConflictError,
      RejectedError,
      NamespaceNotAllowedError,
      ResponseTooLargeError,
      LockedError,
      UnavailableError,
      ClosedError,
      CancelledError,
      PoisonedError,
      CorruptedError,
      IncompatibleFormatError,
      EmbedderError,
      IoError,
      StorageError,
      InternalError,
      FencedError,
      UnauthorizedError,
      KeyRequiredError,
      WrongKeyError,
    ].map((c) => [c.CODE, c]),
  ),
);

/** The error of `code` with `message` and `field`: its class, or `MnemonError` for a code this version does not know. */
export function errorFor(code: string, message: string, field: string | null): MnemonError {
  const cls = ERROR_CLASSES[code] ?? MnemonError;
  return new cls(message, field, code);
}

/**
 * A rejection of the addon as a {@link MnemonError}: the addon's errors carry
 * `{"code", "message", "field"}` as their message; anything else (a bug) is
 * an {@link InternalError}.
 */
export function fromNative(e: unknown): MnemonError {
  if (e instanceof MnemonError) return e;
  const message = e instanceof Error ? e.message : String(e);
  try {
    const body = JSON.parse(message) as { code?: unknown; message?: unknown; field?: unknown };
    if (body && typeof body.code === "string" && typeof body.message === "string") {
      return errorFor(body.code, body.message, typeof body.field === "string" ? body.field : null);
    }
  } catch {
    // Not one of the addon's surface errors.
  }
  return new InternalError(message, null);
}
