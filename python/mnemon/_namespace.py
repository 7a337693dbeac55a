"""`Namespace`: a validated namespace name."""

from __future__ import annotations

from . import _native
from ._errors import InvalidInputError, error_for

__all__ = ["Namespace"]


class Namespace(str):
    """A namespace name, checked: 1–128 characters of `[A-Za-z0-9_.:@-]`
    (the engine's rule; e.g. `"user:42"`, `"team.alpha@eu"`).

    Every read and write of the engine names one; nothing reads across
    namespaces. A `Namespace` is a `str`, so it can be passed wherever a
    namespace is expected; plain strings are checked the same way by the
    engine on every call.

    Raises:
        InvalidInputError: (field `namespace`) the name is empty, longer
            than 128 characters, or holds another character.
    """

    __slots__ = ()

    def __new__(cls, name: str) -> "Namespace":
        if not isinstance(name, str):
            raise InvalidInputError(f"namespace: expected str, got {type(name).__name__}", "namespace")
        try:
            _native.check_namespace(name)
        except _native.SurfaceError as e:
            raise error_for(*e.args) from None
        except UnicodeEncodeError:
            raise InvalidInputError("namespace: not valid Unicode text", "namespace") from None
        return super().__new__(cls, name)

    def __repr__(self) -> str:
        return f"Namespace({str.__repr__(self)})"
