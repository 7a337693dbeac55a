"""The base of the typed results: a read-only view over one JSON object."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, Dict, Mapping, Tuple, cast

__all__ = ["Record", "parse_time", "unwrap_tagged"]


class Record:
    """A typed, read-only view over one JSON object of a surface response.

    Subclasses (generated from the surface's JSON Schemas) expose each
    field as a property. Two records are equal when they are of the same
    class and hold equal JSON. Records are not hashable (they wrap dicts).
    """

    __slots__ = ("_data",)
    _FIELDS: ClassVar[Tuple[str, ...]] = ()

    def __init__(self, data: Mapping[str, Any]) -> None:
        """Wraps `data`, one JSON object as the surface returned it."""
        if not isinstance(data, Mapping):
            raise TypeError(f"{type(self).__name__} wraps a JSON object, got {type(data).__name__}")
        self._data: Dict[str, Any] = dict(data)

    def to_dict(self) -> Dict[str, Any]:
        """The object exactly as the surface's JSON has it (a deep copy):
        the same keys and values as `mnemon ... --json` prints and the MCP
        tools return. Times are RFC 3339 strings, ids integers."""
        return cast(Dict[str, Any], _copy(self._data))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._data == other._data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={self._data[k]!r}" for k in self._FIELDS if k in self._data)
        return f"{type(self).__name__}({shown})"


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# RFC 3339 as the engine writes it (chrono): seconds, an optional fraction
# of up to nine digits, and `Z` or a numeric offset.
_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?([Zz]|[+-]\d\d:\d\d)")


def parse_time(text: str) -> datetime:
    """Parses an RFC 3339 time of the surface into an aware `datetime`.

    Fractions beyond microseconds (the engine stores microseconds) are cut.
    Raises ValueError for text that is not RFC 3339.
    """
    m = _TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not an RFC 3339 time")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    off = m.group(8)
    if off in ("Z", "z"):
        tz = timezone.utc
    else:
        sign = -1 if off[0] == "-" else 1
        tz = timezone(sign * timedelta(hours=int(off[1:3]), minutes=int(off[4:6])))
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)


def unwrap_tagged(value: Any) -> str:
    """A value that is a string constant or a one-field object (`"fact"` or
    `{"other": "habit"}`, the JSON of a memory's kind) as its string."""
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value.values())))
    return str(value)
