"""How outside ids (users, agents, apps, sessions, keys) become mnemon
namespace names and session ids: one rule, shared by `mnemon.langgraph`
and the framework adapters in `mnemon.adapters`.

* A label is escaped: characters of `[A-Za-z0-9_-]` stay as they are,
  every other one (`@`, `.` and `:` included) becomes `@XX` per byte of its
  UTF-8. The escape is injective and its output never holds `.`, `:` or
  `@@`.
* A namespace is `<prefix>:` followed by its escaped labels joined by `:`
  (the LangGraph store joins by `.`; a `:` never makes an escaped `@`
  read as an e-mail address, which the engine refuses in identifiers);
  one over 128 characters, or any one when `opaque`, becomes
  `<prefix>:@@<digest>`, the SHA-256 of the labels as a JSON list.
  Distinct label tuples never share a namespace.
* A session id is its escaped label; one over 128 characters, or any one
  when `opaque`, becomes `@@<digest>`, the SHA-256 of the id.
* A digest is written with the letters `a`–`p` for the hexadecimal digits
  0–15: no digit, so no personal-data pattern (phone, card or ID number)
  can match it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Sequence

from ._errors import InvalidInputError

__all__ = ["escape_label", "namespace_for", "session_for", "digest", "MAX_NAME_CHARS"]

#: Longest mnemon namespace and session id (the engine's limits).
MAX_NAME_CHARS = 128

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,32}")


def escape_label(label: str) -> str:
    """`label` in mnemon's namespace alphabet: characters of
    `[A-Za-z0-9_-]` as themselves, every other one as `@XX` per byte of its
    UTF-8 (upper-case hex). Injective; the output never holds `.`, `:` or
    `@@`.

    Raises:
        InvalidInputError: (field `id`) `label` is not a str, or not valid
            Unicode (a lone surrogate).
    """
    if not isinstance(label, str):
        raise InvalidInputError(f"id: expected str, got {type(label).__name__}", "id")
    out = []
    for ch in label:
        if ch in _SAFE:
            out.append(ch)
            continue
        try:
            data = ch.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(f"id: {label!r} is not valid Unicode text", "id") from None
        out.extend(f"@{b:02X}" for b in data)
    return "".join(out)


def digest(text: str) -> str:
    """The SHA-256 of `text` (UTF-8) as 64 letters `a`–`p` (one per
    hexadecimal digit)."""
    return "".join(chr(97 + int(c, 16)) for c in hashlib.sha256(text.encode("utf-8")).hexdigest())


def namespace_for(prefix: str, labels: Sequence[str], *, opaque: bool = False) -> str:
    """The mnemon namespace of the id tuple `labels` under `prefix`:
    `<prefix>:<label>:<label>...`, each label escaped, or
    `<prefix>:@@<digest>` when that is over 128 characters or `opaque`.

    Arguments:
        prefix: 1–32 characters of `[A-Za-z0-9_-]` (e.g. `"oa"`, `"adk"`).
        labels: one or more non-empty strings (e.g. `(app_name, user_id)`).
        opaque: always the digest (for ids that hold personal data, such
            as e-mail addresses, which the engine refuses in names).

    Raises:
        InvalidInputError: a bad prefix (field `prefix`), no labels, an
            empty or non-str label (field `id`).
    """
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise InvalidInputError(f"prefix: {prefix!r} is not 1-32 characters of [A-Za-z0-9_-]", "prefix")
    if isinstance(labels, str) or not labels:
        raise InvalidInputError("id: expected a non-empty sequence of ids", "id")
    for label in labels:
        if not isinstance(label, str) or not label:
            raise InvalidInputError(f"id: {label!r} is not a non-empty str", "id")
    name = f"{prefix}:" + ":".join(escape_label(label) for label in labels)
    if len(name) <= MAX_NAME_CHARS and not opaque:
        return name
    return f"{prefix}:@@" + digest(json.dumps(list(labels), ensure_ascii=False))


def session_for(session_id: str, *, opaque: bool = False) -> str:
    """The mnemon session id of a framework's session id: escaped, or
    `@@<digest>` when that is over 128 characters or `opaque`.

    Raises:
        InvalidInputError: (field `id`) an empty or non-str id.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInputError(f"id: session id {session_id!r} is not a non-empty str", "id")
    name = escape_label(session_id)
    if len(name) <= MAX_NAME_CHARS and not opaque:
        return name
    return "@@" + digest(session_id)
