"""The exceptions of the package: one class per error code of the command surface."""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "MnemonError",
    "InvalidInputError",
    "NotFoundError",
    "ConflictError",
    "RejectedError",
    "NamespaceNotAllowedError",
    "ResponseTooLargeError",
    "LockedError",
    "UnavailableError",
    "ClosedError",
    "CancelledError",
    "PoisonedError",
    "CorruptedError",
    "IncompatibleFormatError",
    "EmbedderError",
    "IoError",
    "StorageError",
    "InternalError",
    "FencedError",
    "UnauthorizedError",
    "KeyRequiredError",
    "WrongKeyError",
]


class MnemonError(Exception):
    """Base class of every error mnemon raises.

    Attributes: `code`, the command surface's stable error code (the same
    string the CLI's `--json` errors and the MCP server report, e.g.
    `"invalid_input"`); `message`, a human-readable explanation; `field`,
    the request field at fault (a JSON path such as `"kinds[1]"`) or None.
    Branch on the class or on `code`, never on the message.
    """

    code: str = "internal"

    def __init__(self, message: str, field: Optional[str] = None, code: Optional[str] = None) -> None:
        """An error with `message`, naming `field` (or None); `code`
        defaults to the class's code."""
        super().__init__(message)
        self.message = message
        self.field = field
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, field={self.field!r})"

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.message, self.field, self.code))


class InvalidInputError(MnemonError, ValueError):
    """The request was malformed or a value out of range: a wrong type, None
    where a value is required, empty or oversized text, control characters,
    a bad namespace or key, NaN or infinite numbers, an unknown field or
    operation. Nothing was written. `field` names the argument."""

    code = "invalid_input"


class NotFoundError(MnemonError, LookupError):
    """A target that does not exist: an id not in the namespace (or
    forgotten); for ``forget``, also a session that holds nothing and that
    no earlier forget named, or a namespace nothing was written to."""

    code = "not_found"


class ConflictError(MnemonError):
    """The operation conflicts with the current state (e.g. superseding a
    superseded memory, a slot key held by another memory). Nothing was
    written."""

    code = "conflict"


class RejectedError(MnemonError):
    """Refused by the safety policy (personal data or an injected
    instruction under policy `reject`). Nothing was written."""

    code = "rejected"


class NamespaceNotAllowedError(MnemonError):
    """The namespace is outside what this door serves. Nothing was written."""

    code = "namespace_not_allowed"


class UnauthorizedError(MnemonError):
    """An HTTP door refused the caller: a missing or wrong bearer token
    (HTTP 401), or a browser origin or host name the server does not answer
    (HTTP 403). Nothing was run. The in-process engine never raises it."""

    code = "unauthorized"


class ResponseTooLargeError(MnemonError):
    """A single item is larger than the response cap
    (`Engine.open(max_response_tokens=...)`)."""

    code = "response_too_large"


class LockedError(MnemonError):
    """The store is held by another process (or another open engine in this
    process): one process per data directory."""

    code = "locked"


class UnavailableError(MnemonError):
    """The process holding the store went away during the call."""

    code = "unavailable"


class ClosedError(MnemonError):
    """The engine was closed; the call was refused."""

    code = "closed"


class CancelledError(MnemonError):
    """The call was cancelled before its write was planned: nothing was
    written. (A write cancelled later commits and is answered as usual.)"""

    code = "cancelled"


class PoisonedError(MnemonError):
    """A write failed to reach the disk earlier; the engine refuses writes
    until the store is reopened."""

    code = "poisoned"


class CorruptedError(MnemonError):
    """A stored record failed its checksum or could not be decoded."""

    code = "corrupted"


class IncompatibleFormatError(MnemonError):
    """The store was written by an incompatible format or model."""

    code = "incompatible_format"


class EmbedderError(MnemonError):
    """Embedding failed: the model is not installed (the message says which
    `mnemon model install` to run) or failed to load; or a new store was
    refused because no model is installed (it would recall by exact words
    only; nothing was created: install one, or open with
    `embedder="hashing"`)."""

    code = "embedder"


class IoError(MnemonError, OSError):
    """An operating-system I/O error of the store."""

    code = "io"

    def __init__(self, message: str, field: Optional[str] = None, code: Optional[str] = None) -> None:
        """As `MnemonError`; also an `OSError` (without errno)."""
        MnemonError.__init__(self, message, field, code)

    def __str__(self) -> str:
        return self.message


class StorageError(MnemonError):
    """An error of the storage backend (sled)."""

    code = "storage"


class InternalError(MnemonError):
    """Anything else: a bug in mnemon (please report it)."""

    code = "internal"


class FencedError(MnemonError):
    """In a cluster: the daemon lost the namespace's writer lease or log
    position (another daemon writes it); the write was not applied."""

    code = "fenced"


class KeyRequiredError(MnemonError, PermissionError):
    """The store is encrypted at rest and was opened without a key (no
    ``key_file``, no ``MNEMON_KEY_FILE``, no ``MNEMON_KEY``), or the key
    file named does not exist. Nothing was opened or written: open it with
    its key (``Engine.open(path, key_file=...)``). `field` is ``"key"``.
    Also a ``PermissionError``."""

    code = "key_required"


class WrongKeyError(MnemonError, PermissionError):
    """The key given does not open the encrypted store (it is not the key
    the store was created with). Nothing was opened or written. `field` is
    ``"key"``. Also a ``PermissionError``. (A key given to a store created
    without one raises ``InvalidInputError``, field ``"key"``.)"""

    code = "wrong_key"


_BY_CODE: Dict[str, Type[MnemonError]] = {
    cls.code: cls
    for cls in (
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
    )
}


def error_for(code: str, message: str, field: Optional[str] = None) -> MnemonError:
    """The exception for a surface error: the class of `code`, or
    `MnemonError` carrying the code for a code this version does not know."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return MnemonError(message, field, code)
    return cls(message, field)
