"""A structure-aware protocol fuzzer: for every API and version the broker advertises, requests
built from the API's own request schema with random field values (the extremes of each integer
type, empty, long and non-ASCII strings, null where the version allows it, empty and short arrays,
names of a topic and a group that exist among random ones), sent to a real broker.

Every request must be answered (a response with its correlation id that decodes to its last
byte), the connection kept, no handler may fail (the broker logs no traceback) and the broker
stays up. Seeded and bounded: a few cases per API version, a few seconds in all; a failing case is
reported with its API, version and body, to be replayed with the same seed.
"""

import random
import time

import pytest

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.flexible import COMPACT_STRING
from broker.protocol.types import (
    BOOLEAN,
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    NULLABLE_BYTES,
    NULLABLE_STRING,
    STRING,
    Array,
    Struct,
)
from broker.records import batch
from broker.security.acls import Operation, Permission, ResourceType
from broker.server.handlers import SERVED

from ..conftest import FAST_GROUPS
from .test_group_coordinator import find_coordinator
from .wire import connect_to, create_topics_body, decode_response

SEED = 20261128
CASES_PER_VERSION = 10
TOPIC, GROUP = "fuzz", "fuzz-group"
RANGES = {
    INT8: (-(2**7), 2**7 - 1),
    INT16: (-(2**15), 2**15 - 1),
    INT32: (-(2**31), 2**31 - 1),
    INT64: (-(2**63), 2**63 - 1),
}
# Fields whose value sets how much the broker must do or wait: small (negative too), as a client
# could send without anyone noticing; everything else takes any value of its type.
SMALL = {
    "num_partitions",
    "replication_factor",
    "count",
    "timeout_ms",
    "max_wait_ms",
    "session_timeout_ms",
    "rebalance_timeout_ms",
    "max_bytes",
    "partition_max_bytes",
}
NAMES = ("name", "topic", "topic_names", "resource_name", "resource_name_filter")
GROUP_FIELDS = ("group_id", "groups", "groups_names", "key")
SETTINGS = (
    "retention.ms",
    "segment.bytes",
    "cleanup.policy",
    "max.message.bytes",
    "log.retention.ms",
    "message.timestamp.type",
    "log.segment.bytes",
    "min.cleanable.dirty.ratio",
    "compression.type",
)
VALUES = (
    "-1",
    "0",
    "1",
    "9223372036854775807",
    "99999999999999999999",
    "-99999999999999999999",
    "1e3",
    "0.5",
    "NaN",
    "inf",
    "compact,delete",
    "delete",
    "",
    " ",
    "LogAppendTime",
    "zstd",
    "abc",
)
# Answered, then the connection closes, as Kafka does: SASL on a plaintext listener.
CLOSING = {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}


class Fuzz:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, kind, field: str) -> int:
        low, high = RANGES[kind]
        if field in SMALL:
            return self.rng.randint(-2, 20)
        if field == "acks":  # acks=0 has no response
            return self.rng.choice((-1, 1, 2, -7))
        if "generation" in field and self.rng.random() < 0.5:
            return -1  # a commit from outside the group protocol
        if ("partition" in field or field == "index") and self.rng.random() < 0.7:
            return self.rng.choice((0, 1, -1))  # mostly a partition of the topic that exists
        return self.rng.choice(
            (0, 1, -1, 2, low, high, high - 1, self.rng.randint(low, high), self.rng.randint(-9, 99))
        )

    def text(self, field: str) -> str:
        if field in ("name", "configuration_keys") and self.rng.random() < 0.3:
            return self.rng.choice(SETTINGS)
        if field == "value" and self.rng.random() < 0.7:
            return self.rng.choice(VALUES)
        if field in NAMES and self.rng.random() < 0.7:
            return self.rng.choice((TOPIC, TOPIC, TOPIC, "__consumer_offsets", "absent"))
        if field in GROUP_FIELDS and self.rng.random() < 0.5:
            return GROUP
        if field == "member_id" and self.rng.random() < 0.5:
            return ""  # a commit from outside the group protocol
        return self.rng.choice(
            (
                "",
                "x",
                ".",
                "..",
                "a" * 300,
                "é\u2603\U0001f600",
                "t/1",
                " ",
                "".join(self.rng.choice("ab-_.9") for _ in range(self.rng.randint(1, 12))),
            )
        )

    def data(self, field: str) -> bytes:
        if field == "records" and self.rng.random() < 0.5:
            return batch.build([batch.Record(0, int(time.time() * 1000), b"k", b"v")])
        return self.rng.choice((b"", b"\0", bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 70)))))

    def value(self, kind, version: int, field: str):
        if isinstance(kind, Struct):
            return {f.name: self.value(f.type, version, f.name) for f in kind.fields if f.present_in(version)}
        if isinstance(kind, Array):
            if kind.nullable_since is not None and version >= kind.nullable_since and self.rng.random() < 0.2:
                return None
            return [self.value(kind.item, version, field) for _ in range(self.rng.choice((0, 1, 1, 2, 3)))]
        if kind in (NULLABLE_STRING, NULLABLE_BYTES) and self.rng.random() < 0.2:
            return None
        if kind in (STRING, NULLABLE_STRING, COMPACT_STRING):
            return self.text(field)
        if kind in (BYTES, NULLABLE_BYTES):
            return self.data(field)
        if kind is BOOLEAN:
            return self.rng.random() < 0.5
        return self.integer(kind, field)


def cases(seed: int):
    """``(api, version, body)`` for every advertised API version, ``CASES_PER_VERSION`` each."""
    fuzz = Fuzz(random.Random(seed))
    for api in SERVED.values():
        for version in range(api.min_version, api.max_version + 1):
            for _ in range(CASES_PER_VERSION):
                yield api.key, version, fuzz.value(api.request, version, "")


def deny(resource_type: ResourceType, name: str, operation: Operation) -> dict:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": 3,
        "principal": "User:ANONYMOUS",
        "host": "*",
        "operation": operation,
        "permission_type": Permission.DENY,
    }


@pytest.mark.timeout(300)
@pytest.mark.parametrize("authorizer", [False, True], ids=["open", "authorizer"])
def test_every_advertised_request_with_random_values_is_answered_and_the_broker_stays_up(start_broker, authorizer):
    """With the authorizer, the group may not be read nor the topic deleted: the refusals are fuzzed too."""
    settings = (
        {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "allow.everyone.if.no.acl.found": "true"}
        if authorizer
        else {}
    )
    broker = start_broker({"offsets.topic.num.partitions": "2", **FAST_GROUPS, **settings})
    with connect_to(broker) as client:
        assert (
            client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC, partitions=2))["topics"][0]["error_code"]
            == ErrorCode.NONE
        )
        find_coordinator(client, GROUP)
        if authorizer:
            acls = [deny(ResourceType.GROUP, GROUP, Operation.READ), deny(ResourceType.TOPIC, TOPIC, Operation.DELETE)]
            assert (
                client.call(ApiKey.CREATE_ACLS, 1, {"creations": acls})["results"]
                == [{"error_code": ErrorCode.NONE, "error_message": None}] * 2
            )
    failures = []
    client = connect_to(broker)
    try:
        for api, version, body in cases(SEED):
            correlation_id = client.send_request(api, version, body)
            data = client.recv_frame()
            if data is None or api in CLOSING:
                client.close()
                client = connect_to(broker)
            if data is None:
                failures.append(f"closed: {api.name} v{version} {body!r}")
                continue
            try:
                received, _ = decode_response(data, api, version)
            except ValueError as exc:
                failures.append(f"undecodable answer ({exc}): {api.name} v{version} {body!r}")
                continue
            if received != correlation_id:
                failures.append(f"correlation id {received} for {correlation_id}: {api.name} v{version}")
        assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
    finally:
        client.close()
    assert not failures, f"{len(failures)} request(s) not answered:\n" + "\n".join(f[:400] for f in failures[:20])
    assert broker.running
    log = broker.stderr_tail(100_000)
    assert "Traceback" not in log, log[log.index("Traceback") - 300 :][:3000]
