"""How the command-line tools show the bytes of a record (key, value, header values): as one-line
text, or as JSON fields that keep the exact bytes (text when UTF-8, else base64 with
``<name>Encoding``).

The text is UTF-8 in which two different byte strings never print alike: a backslash is
``\\\\``; tab, line feed and carriage return are ``\\t``, ``\\n``, ``\\r``; the other ASCII
control characters (NUL, ESC, DEL, ...) and the bytes that are not UTF-8 are ``\\xNN`` (always one
byte); the other characters that do not print (C1 controls, no-break space, line separator, format
characters) are ``\\uNNNN`` (a code point). A null key or value is ``null``, as Kafka's console
consumer shows it (``--format json`` tells it from the text "null")."""

import base64
import re
from collections.abc import Iterable

_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
# what may need escaping: a backslash, the controls, no-break space, soft hyphen, and every character
# beyond Latin-1 (escaped when it does not print: separators, format characters, undecodable bytes)
_CANDIDATES = re.compile("[\\\\\x00-\x1f\x7f-\xa0\xad]|[^\x00-\xff]")


def _escape(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFF and char.isprintable():
        return char
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def text(data: bytes | None) -> str:
    return "null" if data is None else _CANDIDATES.sub(_escape, data.decode("utf-8", "surrogateescape"))


def json_field(out: dict, name: str, data: bytes | None) -> dict:
    """``out`` with ``data`` as its ``name``: text when UTF-8, else base64 with ``<name>Encoding``."""
    if data is None:
        out[name] = None
        return out
    try:
        out[name] = data.decode("utf-8")
    except UnicodeDecodeError:
        out[name] = base64.b64encode(data).decode()
        out[name + "Encoding"] = "base64"
    return out


def json_headers(headers: Iterable[tuple[str, bytes | None]]) -> list[dict]:
    """``((key, value), ...)`` -> ``[{"key": key, "value": value}, ...]``, in order."""
    return [json_field({"key": key}, "value", value) for key, value in headers]
