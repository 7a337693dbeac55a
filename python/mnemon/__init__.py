"""mnemon: an embedded long-term memory engine for LLM agents, in process.

An agent daemon opens a store and remembers what its users said and did,
recalls the few memories that matter for the next prompt, keeps facts
current as they change (a new version supersedes the old), forgets on
request and proves it (compaction and an erasure receipt)::

    import mnemon

    with mnemon.Engine.open("./mnemon-data") as engine:
        engine.remember("user:42", "Prefers window seats", key="user.seat", importance=0.7)
        hits = engine.recall("user:42", "book a flight").hits
        block = engine.context("user:42", "book a flight", budget_tokens=400).context

The package calls the engine's command surface in process — the same
typed requests and responses as the `mnemon` CLI's `--json` output and the
MCP server — so every result's `to_dict()` is the JSON those doors show.
`mnemon.langgraph.MnemonStore` is a LangGraph `BaseStore` on top of it.

Main names: `Engine` (open, every operation), `View` (`Engine.as_of`),
`Namespace`, the result types (`Remembered`, `RecallResponse`, `Hit`,
`Memory`, ...) and the exceptions, all subclasses of `MnemonError`.
mnemon never calls an LLM and is not a server.
"""

from __future__ import annotations

from typing import Any, Dict, List

from . import _native
from ._embedder import EmbedFunc
from ._engine import AsOf, Engine, TimeRange, View
from ._errors import (
    ClosedError,
    ConflictError,
    CorruptedError,
    EmbedderError,
    IncompatibleFormatError,
    InternalError,
    InvalidInputError,
    IoError,
    LockedError,
    MnemonError,
    NamespaceNotAllowedError,
    NotFoundError,
    CancelledError,
    FencedError,
    PoisonedError,
    RejectedError,
    ResponseTooLargeError,
    StorageError,
    UnauthorizedError,
    KeyRequiredError,
    WrongKeyError,
    UnavailableError,
)
from ._namespace import Namespace
from ._record import Record
from ._types import *  # noqa: F401,F403  (the generated result types)
from ._types import __all__ as _type_names

#: Version of the engine this package was built from.
__version__: str = _native.version()

#: Default cap of one response, in estimated tokens (the limit MCP clients
#: apply to tool results); see `Engine.open(max_response_tokens=...)`.
DEFAULT_MAX_RESPONSE_TOKENS: int = _native.DEFAULT_MAX_RESPONSE_TOKENS

#: Default largest memory or observation text, in bytes of UTF-8 (32 KiB).
DEFAULT_MAX_CONTENT_BYTES: int = _native.DEFAULT_MAX_CONTENT_BYTES


__all__ = [
    "Engine",
    "View",
    "AsOf",
    "TimeRange",
    "EmbedFunc",
    "Namespace",
    "Record",
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
    "FencedError",
    "UnauthorizedError",
    "KeyRequiredError",
    "WrongKeyError",
    "PoisonedError",
    "CorruptedError",
    "IncompatibleFormatError",
    "EmbedderError",
    "IoError",
    "StorageError",
    "InternalError",
    "DEFAULT_MAX_RESPONSE_TOKENS",
    "DEFAULT_MAX_CONTENT_BYTES",
    "schemas",
    *_type_names,
]


def schemas() -> List[Dict[str, Any]]:
    """The JSON Schema of every operation's request and response: a list of
    `{"op", "read_only", "request", "response"}` dicts (as `mnemon schema
    --json` prints them)."""
    import json

    return json.loads(_native.schemas())  # type: ignore[no-any-return]
