"""How the command-line tools show the bytes of a record (key, value, header values): as one-line
text (UTF-8, undecodable bytes as ``\\xNN``, tabs and line ends escaped, ``null`` for null), or
as JSON fields that keep the exact bytes (text when UTF-8, else base64 with ``<name>Encoding``)."""

import base64

_ESCAPES = str.maketrans({"\t": "\\t", "\n": "\\n", "\r": "\\r"})


def text(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", "backslashreplace").translate(_ESCAPES)


def json_field(out: dict, name: str, data: bytes | None) -> dict:
    """``out`` with ``data`` as its ``name``: text when UTF-8, else base64 with ``<name>Encoding``."""
    try:
        out[name] = None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        out[name] = base64.b64encode(data).decode()
        out[name + "Encoding"] = "base64"
    return out


def json_headers(headers) -> list[dict]:
    """``((key, value), ...)`` -> ``[{"key": key, "value": value}, ...]``, in order."""
    return [json_field({"key": key}, "value", value) for key, value in headers]
