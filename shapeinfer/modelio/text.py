"""Names as text, and text as one safe line.

A model's names (nodes, tensors, op types, domains) and the paths it is read from are data,
not text we wrote: they may hold newlines, control characters, terminal escape sequences, XML
specials or bytes that are not UTF-8. Two rules keep every report sound with them:

- :func:`as_text` -- a protobuf string field as a ``str``. protobuf hands a string that is not
  valid UTF-8 over as ``bytes``; it becomes a ``str`` whose bad bytes are lone surrogates
  (``surrogateescape``, as Python decodes file names), so the exact bytes come back with
  ``.encode("utf-8", "surrogateescape")`` and JSON carries it exactly (``\\udcff``).
- :func:`one_line` -- text as it may appear in a line of a human report (text, JUnit): every
  character that is not printable written as a visible escape (``\\n``, ``\\x1b``, ``\\x00``,
  ``\\u2028``; a byte that was not UTF-8 as ``\\xff``). The result is printable: one line,
  nothing a terminal acts on, nothing XML 1.0 cannot hold, nothing UTF-8 cannot encode.
  Printable text is returned as it is (and escaping twice changes nothing).
"""

from __future__ import annotations

import os

_SURROGATE_ESCAPES = range(0xDC80, 0xDD00)  # the bytes 0x80-0xFF of a surrogateescape decoding


def as_text(value) -> str:
    """A protobuf string field (or a path) as ``str``; bytes that are not UTF-8 become lone
    surrogates (surrogateescape), which :func:`one_line` shows as ``\\xNN``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "surrogateescape")
    if isinstance(value, os.PathLike):
        return as_text(os.fspath(value))
    return str(value)


def _escape(c: str) -> str:
    code = ord(c)
    if code in _SURROGATE_ESCAPES:
        return f"\\x{code - 0xDC00:02x}"
    return repr(c)[1:-1]  # \n, \r, \t, \x1b, \x7f, \u2028, \ud800, ...


def one_line(value) -> str:
    """``value`` (a str, bytes or path) as printable text: every character that is not
    printable written as an escape. The result never holds a line break, a control character,
    an escape sequence or a lone surrogate."""
    text = as_text(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)
