"""A caller's embedding model as the engine's embedder (`Engine.open(embedder=...)`)."""

from __future__ import annotations

import inspect
from typing import Any, Callable, List, NamedTuple, Optional, Sequence

from ._errors import InvalidInputError

__all__ = ["EmbedFunc", "CallerEmbedder", "resolve_embedder", "default_embedder_name"]

#: A batch embedding function: texts in, one vector (a sequence of floats,
#: e.g. a list or a NumPy array) per text out, in order.
EmbedFunc = Callable[[List[str]], Sequence[Sequence[float]]]


class CallerEmbedder(NamedTuple):
    """A caller's embedder, taken apart for the native engine."""

    #: `(list[str]) -> list[list[float]]`, for memories.
    documents: Callable[..., Any]
    #: `(str) -> list[float]`, for recall queries; None: `documents`.
    query: Optional[Callable[..., Any]]
    #: The model id the store records.
    name: str


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def default_embedder_name(embedder: Any) -> str:
    """The model id of a caller's embedder given no `embedder_name`:
    `python:` and the function's `module.qualname`, or for an object with
    `embed_documents` its class's, followed by `:<model>` when the object
    has a `model` or `model_name` text attribute (LangChain's `Embeddings`
    classes have one)."""
    if hasattr(embedder, "embed_documents"):
        cls = type(embedder)
        name = f"{cls.__module__}.{cls.__qualname__}"
        for attr in ("model", "model_name"):
            model = getattr(embedder, attr, None)
            if isinstance(model, str) and model:
                name += f":{model}"
                break
    else:
        target = embedder if hasattr(embedder, "__qualname__") else type(embedder)
        name = f"{getattr(target, '__module__', None) or 'python'}.{target.__qualname__}"
    return "python:" + name[:120]


def resolve_embedder(embedder: Any, name: Optional[str]) -> CallerEmbedder:
    """`embedder` (a function or an object with `embed_documents`) as the
    functions the native engine calls, under model id `name` (default
    `default_embedder_name`).

    Raises InvalidInputError (field `embedder`) for anything else, and for
    async functions: the engine calls its embedder from its own threads,
    where no event loop runs.
    """
    query: Optional[Callable[..., Any]] = None
    documents = getattr(embedder, "embed_documents", None)
    if documents is not None:
        if not callable(documents):
            raise InvalidInputError("embedder: its embed_documents is not callable", "embedder")
        query = getattr(embedder, "embed_query", None)
        if query is not None and not callable(query):
            query = None
    elif callable(embedder):
        documents = embedder
    else:
        raise InvalidInputError(
            "embedder: expected a model name (str), a function (list[str]) -> list[list[float]], or an object "
            f"with embed_documents (such as a LangChain Embeddings), got {type(embedder).__name__}",
            "embedder",
        )
    if _is_async(documents) or (query is not None and _is_async(query)):
        raise InvalidInputError(
            "embedder: async functions are not supported (the engine embeds on its own threads, where no "
            "event loop runs); pass a plain function",
            "embedder",
        )
    if name is None:
        name = default_embedder_name(embedder)
    elif not isinstance(name, str):
        raise InvalidInputError(f"embedder_name: expected str, got {type(name).__name__}", "embedder_name")
    return CallerEmbedder(documents, query, name)
