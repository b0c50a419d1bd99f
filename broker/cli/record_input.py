"""How ``kafkalog produce`` turns one input line into a record: the whole line as the value, or
``key<SEP>value`` with ``--key-separator``, or (``--format json``) a JSON object with ``key``,
``value``, ``headers`` and ``timestamp``, the shape ``kafkalog consume --format json`` prints, so its
output can be produced again. ``--header`` and ``--timestamp`` apply to every record; a JSON line's
own ``timestamp`` wins, and its headers come before the ``--header`` ones.

A line that cannot be a record raises ``BadLine`` with the reason, for the caller to name the line.
"""

import argparse
import base64
import binascii
import json
import os
from collections.abc import Callable
from typing import NamedTuple

from broker.arguments import timestamp_ms

# What `kafkalog consume --format json` prints besides the record itself: accepted and ignored
# (the partition comes from --partition or the key, the offset from the broker).
CONSUMED_FIELDS = {"topic", "partition", "offset", "timestampType"}
RECORD_FIELDS = {"key", "keyEncoding", "value", "valueEncoding", "headers", "timestamp"}
MAX_TIMESTAMP = 2**63 - 1


class BadLine(Exception):
    """A line that cannot be sent as a record; the message says why."""


class InputRecord(NamedTuple):
    key: bytes | None
    value: bytes | None
    timestamp: int | None  # epoch ms; None: when it is sent
    headers: tuple  # ((str, bytes | None), ...)


def parser_for(
    form: str, key_separator: bytes | None, headers: tuple, timestamp: int | None
) -> Callable[[bytes], InputRecord]:
    """The function ``line -> InputRecord`` for the options given."""
    if form == "json":
        return lambda line: _json_record(line, headers, timestamp)

    def plain(line: bytes) -> InputRecord:
        if key_separator is None:
            return InputRecord(None, line, timestamp, headers)
        key, found, value = line.partition(key_separator)
        if not found:
            raise BadLine(f"no key separator {os.fsdecode(key_separator)!r}")
        return InputRecord(key, value, timestamp, headers)

    return plain


def header(text: str) -> tuple[str, bytes]:
    """``--header KEY=VALUE`` -> ``(KEY, the bytes of VALUE as given)``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (for example --header trace-id=abc123)")
    try:
        key.encode()
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"the key of {text!r} is not UTF-8 text") from None
    return key, os.fsencode(value)  # the value's bytes as given, UTF-8 or not


def _json_record(line: bytes, extra_headers: tuple, default_timestamp: int | None) -> InputRecord:
    try:
        fields = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BadLine(f"not JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # not UTF-8
        raise BadLine(f"not JSON: {exc}") from None
    if not isinstance(fields, dict):
        raise BadLine('not a JSON object like {"key": "k", "value": "v"}')
    unknown = sorted(set(fields) - RECORD_FIELDS - CONSUMED_FIELDS)
    if unknown:
        raise BadLine(f"unknown field {unknown[0]!r} (a record has {', '.join(sorted(RECORD_FIELDS))})")
    timestamp = _timestamp(fields["timestamp"]) if fields.get("timestamp") is not None else default_timestamp
    return InputRecord(
        _bytes(fields, "key"), _bytes(fields, "value"), timestamp, _headers(fields.get("headers")) + extra_headers
    )


def _bytes(fields: dict, name: str, where: str = "") -> bytes | None:
    """A field as bytes: text as UTF-8, or base64 when ``<name>Encoding`` says so; None for null."""
    data, encoding = fields.get(name), fields.get(name + "Encoding")
    if data is None:
        return None
    if not isinstance(data, str):
        raise BadLine(f"{where}{name} is not a string or null")
    if encoding is None:
        return _utf8(data, f"{where}{name}")
    if encoding != "base64":
        raise BadLine(f'{where}{name}Encoding {encoding!r} is not "base64"')
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error:
        raise BadLine(f"{where}{name} is not base64") from None


def _headers(headers) -> tuple:
    """``[{"key": k, "value": v}, ...]`` (as consume prints them, in order, repeats allowed) or
    ``{k: v, ...}`` -> ``((k, bytes), ...)``."""
    if headers is None:
        return ()
    if isinstance(headers, dict):
        headers = [{"key": k, "value": v} for k, v in headers.items()]
    if not isinstance(headers, list) or not all(isinstance(h, dict) and isinstance(h.get("key"), str) for h in headers):
        raise BadLine('headers are not [{"key": "k", "value": "v"}, ...] nor {"k": "v", ...}')
    for h in headers:
        _utf8(h["key"], "a header key")
    return tuple((h["key"], _bytes(h, "value", f"header {h['key']!r}: ")) for h in headers)


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate, such as "\ud800"
        raise BadLine(f"{what} is not valid Unicode text (a lone surrogate escape)") from None


def _timestamp(value) -> int:
    """Epoch milliseconds, or an ISO-8601 string."""
    if isinstance(value, str):
        try:
            value = timestamp_ms(value)
        except argparse.ArgumentTypeError as exc:
            raise BadLine(f"timestamp {exc}") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TIMESTAMP:
        raise BadLine(f"timestamp {value!r} is not epoch milliseconds >= 0 nor an ISO-8601 string")
    return value
