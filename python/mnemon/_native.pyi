"""Type stub of the compiled module `mnemon._native` (python/src/)."""

import os
from typing import Any, Callable, List, Optional, Union, final

__all__ = [
    "Engine",
    "SurfaceError",
    "schemas",
    "ops",
    "check_namespace",
    "version",
    "DEFAULT_MAX_RESPONSE_TOKENS",
    "DEFAULT_MAX_CONTENT_BYTES",
]

DEFAULT_MAX_RESPONSE_TOKENS: int
DEFAULT_MAX_CONTENT_BYTES: int

class SurfaceError(Exception):
    """args: (code, message, field)."""

@final
class Engine:
    def __new__(
        cls,
        path: Union[str, "os.PathLike[str]"],
        *,
        embedder: str = ...,
        embed_documents: Optional[Callable[[List[str]], Any]] = None,
        embed_query: Optional[Callable[[str], Any]] = None,
        embedder_name: Optional[str] = None,
        dims: Optional[int] = None,
        models_dir: Union[str, "os.PathLike[str]", None] = None,
        flush_interval_s: Optional[float] = None,
        max_content_bytes: Optional[int] = None,
        pii_policy: Optional[str] = None,
        injection_policy: Optional[str] = None,
        max_response_tokens: Optional[int] = None,
        embed_mode: Optional[str] = None,
        reranker: Optional[str] = None,
        key_file: Optional[str] = None,
        key_env: Optional[str] = None,
        keyring: Optional[str] = None,
    ) -> "Engine": ...
    def call(self, op: str, args: str) -> bytes: ...
    def embed(self, texts: List[str], *, query: bool = False) -> List[List[float]]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def notice(self) -> Optional[str]: ...
    @property
    def model_id(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def path(self) -> Union[str, "os.PathLike[str]"]: ...
    @property
    def max_content_bytes(self) -> int: ...
    @property
    def max_response_tokens(self) -> int: ...

def schemas() -> str: ...
def ops() -> List[str]: ...
def check_namespace(name: str) -> None: ...
def version() -> str: ...
