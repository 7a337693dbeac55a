"""Arguments of a call as the surface's JSON, with the field at fault named."""

from __future__ import annotations

import json
import math
from datetime import date, datetime, timezone
from collections.abc import Mapping
from typing import Any, Dict, Optional, Tuple

from ._errors import InvalidInputError

__all__ = ["encode_args", "find_bad_string", "time_text", "as_of_value"]


def time_text(field: str, value: Any, keep_offset: bool = False) -> str:
    """An aware `datetime` (or an RFC 3339 string, passed through) as RFC 3339 text,
    in UTC unless `keep_offset` (then in the datetime's own offset, which
    decides where its days begin).

    Raises InvalidInputError for a naive datetime (its zone is unknown) or
    another type.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise InvalidInputError(
                f"{field}: a naive datetime has no time zone; pass an aware one (e.g. datetime.now(timezone.utc))",
                field,
            )
        return value.isoformat() if keep_offset else value.astimezone(timezone.utc).isoformat()
    if isinstance(value, str):
        return value
    raise InvalidInputError(f"{field}: expected a timezone-aware datetime, got {type(value).__name__}", field)


def as_of_value(value: Any, field: str = "as_of") -> Dict[str, Any]:
    """A read position as the surface's `as_of` object: an int is a log
    position (`{"seq": n}`), a datetime or RFC 3339 string a time
    (`{"time": ...}`)."""
    if isinstance(value, bool):
        raise InvalidInputError(f"{field}: expected a log position (int) or a datetime, got bool", field)
    if isinstance(value, int):
        return {"seq": value}
    if isinstance(value, (datetime, str)):
        return {"time": time_text(field, value)}
    if isinstance(value, Mapping):
        return dict(value)
    raise InvalidInputError(f"{field}: expected a log position (int) or a datetime, got {type(value).__name__}", field)


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return time_text("datetime", value)
    if isinstance(value, (set, frozenset)):
        raise TypeError("set")
    if isinstance(value, date):
        raise TypeError("date")
    raise TypeError(type(value).__name__)


def encode_args(args: Mapping[str, Any]) -> str:
    """`args` as compact JSON text for the surface.

    Raises InvalidInputError naming the field for a value JSON cannot hold:
    NaN or infinite floats, objects of other types (sets, bytes, custom
    classes), dict keys that are not strings, naive datetimes.
    """
    try:
        return json.dumps(args, allow_nan=False, ensure_ascii=False, separators=(",", ":"), default=_default)
    except InvalidInputError:
        raise
    except (TypeError, ValueError, RecursionError) as e:
        path, why = _find_bad(args, "")
        raise InvalidInputError(f"{path}: {why}" if path else f"arguments: {e}", path or "arguments") from None


def _find_bad(value: Any, path: str) -> Tuple[Optional[str], str]:
    """The path of the first value JSON cannot hold, and why."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return path, f"{value} is not a finite number"
        return None, ""
    if value is None or isinstance(value, (str, int, bool)):
        return None, ""
    if isinstance(value, datetime):
        try:
            time_text(path, value)
        except InvalidInputError as e:
            return path, e.message.split(": ", 1)[-1]
        return None, ""
    if isinstance(value, Mapping):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if not isinstance(k, str):
                return sub, f"object keys must be strings, got {type(k).__name__}"
            found = _find_bad(v, sub)
            if found[0] is not None:
                return found
        return None, ""
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _find_bad(v, f"{path}[{i}]")
            if found[0] is not None:
                return found
        return None, ""
    return path, f"{type(value).__name__} is not a JSON value"


def find_bad_string(value: Any, path: str = "") -> Optional[str]:
    """The path of the first string that is not valid Unicode text (lone
    surrogates cannot be encoded as UTF-8), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "arguments"
        return None
    if isinstance(value, Mapping):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            found = find_bad_string(k, sub) or find_bad_string(v, sub)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = find_bad_string(v, f"{path}[{i}]")
            if found:
                return found
    return None
