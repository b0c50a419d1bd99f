"""``__consumer_offsets`` records as readable JSON, in the shape of Kafka's ``--offsets-decoder``.

A key becomes ``{"type": "<key version>", "data": {...}}`` and a value ``{"version": "<value
version>", "data": {...}}`` with Kafka's camelCase field names and only the fields of that
version; a tombstone's value is None. The members' subscription and assignment of a ``consumer``
group are decoded with the consumer protocol; other protocols' bytes (and bytes that do not
decode) are shown as base64, as Kafka's JSON converters show bytes.
"""

import base64
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any

from .consumer_protocol import ConsumerProtocolError, decode_assignment, decode_subscription
from .offsets_records import GroupValue, decode_key, decode_value, fields_in_version, version_of

CONSUMER_PROTOCOL_TYPE = "consumer"

JsonObject = dict[str, Any]


def record_json(key: bytes | None, value: bytes | None) -> tuple[JsonObject, JsonObject | None]:
    """The key's and the value's JSON objects; OffsetsRecordError when either does not decode."""
    decoded_key = decode_key(key)
    key_json = {"type": str(version_of(key)), "data": _camel(asdict(decoded_key))}
    decoded_value = decode_value(decoded_key, value)
    if decoded_value is None:
        return key_json, None
    version = version_of(value)
    fields = fields_in_version(decoded_value, version)
    if isinstance(decoded_value, GroupValue):
        consumer = decoded_value.protocol_type == CONSUMER_PROTOCOL_TYPE
        for member in fields["members"]:
            member["subscription"] = _opaque(member["subscription"], _subscription_json if consumer else None)
            member["assignment"] = _opaque(member["assignment"], _assignment_json if consumer else None)
    return key_json, {"version": str(version), "data": _camel(fields)}


def _subscription_json(data: bytes) -> JsonObject:
    fields = asdict(decode_subscription(data))
    fields["owned_partitions"] = _topic_partitions(fields["owned_partitions"])
    return fields


def _assignment_json(data: bytes) -> JsonObject:
    assignment = decode_assignment(data)
    return {"assigned_partitions": _topic_partitions(assignment.partitions), "user_data": assignment.user_data}


def _topic_partitions(grouped: Iterable[tuple[str, Iterable[int]]]) -> list[JsonObject]:
    return [{"topic": topic, "partitions": list(numbers)} for topic, numbers in grouped]


def _opaque(data: bytes, to_json: Callable[[bytes], JsonObject] | None) -> object:
    if to_json is not None:
        try:
            return to_json(data)
        except ConsumerProtocolError:
            pass
    return base64.b64encode(data).decode("ascii")


def _camel(value: Any) -> Any:
    """snake_case keys to Kafka's camelCase, through nested dicts and lists; bytes as base64."""
    if isinstance(value, dict):
        return {_camel_name(k): _camel(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_camel(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _camel_name(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)
