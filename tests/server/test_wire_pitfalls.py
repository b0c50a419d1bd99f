"""The broker over raw sockets, one test group per wire pitfall that breaks real Kafka
clients, each asserting Kafka's exact wire behaviour:

1. ApiVersions: v3+ (flexible) gets Kafka's v0-encoded UNSUPPORTED_VERSION reply, byte for byte;
   v0-2 list exactly the advertised table.
2. Response headers carry no tagged-field byte.
3. Produce v0-2 get UNSUPPORTED_VERSION per partition; v3-8 work.
4. Metadata: v0 as a first request, all-topics/no-topics semantics, controller and broker address.
5. Pipelined requests are answered strictly in order.
6. acks=0: no response, data appended; a failed acks=0 produce closes the connection.
7. Fetch contents: mid-batch start, at least one batch, every partition listed, fixed fields, ranges.
8. Long polling: wake-up on produce, empty answer after max_wait.
9. Produce validation error codes, with the high watermark unchanged.
10. Idempotent producers: InitProducerId, duplicates, sequence gaps, state gone with retention,
    across restarts and crashes.
11. Legacy magic-0 and magic-1 message sets are up-converted to v2 batches.
12. ListOffsets v1-5: earliest, latest, by timestamp, leader epoch check.
13. CreateTopics v0-4 and DeleteTopics v0-3 error codes, defaults, validate_only, persistence.
"""

import itertools
import random
import struct
import time
import uuid

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from broker.common.offsets import EARLIEST, LATEST
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from broker.records.batch import ControlType, Record
from broker.records.compression import Codec

from ..waiting import wait_for
from .wire import (
    connect_to,
    create_topics_body,
    decode_response,
    encode_request,
    fetch_body,
    frame,
    list_offsets_body,
    produce_body,
)

BASE_TIME = 1_700_000_000_000
NODE_ID = 0
_names = itertools.count()


# -- helpers --------------------------------------------------------------------------------------


@pytest.fixture
def client(broker):
    with connect_to(broker) as c:
        yield c


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{uuid.uuid4().hex[:6]}"


def new_topic(client, prefix: str, partitions: int = 1, configs=None) -> str:
    name = unique(prefix)
    result = client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(name, partitions, configs=configs))
    assert result["topics"][0]["error_code"] == ErrorCode.NONE, result
    return name


def make_batch(values, timestamp: int = BASE_TIME, **kwargs) -> bytes:
    """A v2 batch with one record per value (keys k0, k1, ...; timestamps ``timestamp + i``)."""
    return batch.build([Record(i, timestamp + i, f"k{i}".encode(), v) for i, v in enumerate(values)], **kwargs)


def produce(client, topic: str, partition: int, records, version: int = 3, acks: int = 1) -> dict:
    """The partition's entry of the Produce response."""
    result = client.call(ApiKey.PRODUCE, version, produce_body(topic, partition, records, acks=acks))
    [topic_result] = result["responses"]
    [partition_result] = topic_result["partitions"]
    assert (topic_result["name"], partition_result["index"]) == (topic, partition)
    return partition_result


def list_offset(client, topic: str, partition: int, timestamp: int, version: int = 1, **kwargs) -> dict:
    result = client.call(ApiKey.LIST_OFFSETS, version, list_offsets_body(topic, partition, timestamp, **kwargs))
    [topic_result] = result["topics"]
    [partition_result] = topic_result["partitions"]
    assert (topic_result["name"], partition_result["partition_index"]) == (topic, partition)
    return partition_result


def high_watermark(client, topic: str, partition: int = 0) -> int:
    result = list_offset(client, topic, partition, LATEST)
    assert result["error_code"] == ErrorCode.NONE, result
    return result["offset"]


def fetch_one(client, topic: str, partition: int, offset: int, version: int = 11, **kwargs) -> dict:
    result = client.call(ApiKey.FETCH, version, fetch_body([(topic, partition, offset)], **kwargs))
    [topic_result] = result["responses"]
    [partition_result] = topic_result["partitions"]
    assert (topic_result["topic"], partition_result["partition_index"]) == (topic, partition)
    return partition_result


def decoded_batches(records) -> list:
    return list(record_set.iter_batches(bytes(records)))


def key_values(records) -> list:
    """``(offset, key, value)`` of every record in a fetched record set."""
    return [(r.offset, r.key, r.value) for b in decoded_batches(records) for r in b.records]


def topic_names(client) -> set:
    """All topics, from Metadata v1 with a null topic list (which never auto-creates)."""
    return {t["name"] for t in client.call(ApiKey.METADATA, 1, {"topics": None})["topics"]}


# -- 1. ApiVersions --------------------------------------------------------------------------------

ADVERTISED = {
    0: (0, 8),
    1: (4, 11),
    2: (1, 5),
    3: (0, 8),
    18: (0, 2),
    19: (0, 4),
    20: (0, 3),
    21: (0, 1),
    22: (0, 1),
    32: (0, 3),
    33: (0, 1),
    35: (0, 1),
    37: (0, 1),
    44: (0, 0),
    17: (0, 1),
    36: (0, 1),
    # the group coordinator's, exactly Kafka's non-flexible ranges of these APIs
    8: (0, 7),
    9: (0, 5),
    10: (0, 2),
    11: (0, 5),
    12: (0, 3),
    13: (0, 3),
    14: (0, 3),
    15: (0, 4),
    16: (0, 2),
    42: (0, 1),
    47: (0, 0),
    # the ACL APIs (v1 adds prefixed patterns)
    29: (0, 1),
    30: (0, 1),
    31: (0, 1),
    # where a leader epoch ends (v4 is flexible)
    23: (0, 3),
    # transaction markers (v1 is flexible)
    27: (0, 0),
    # the transaction coordinator's, Kafka's non-flexible ranges
    24: (0, 2),
    25: (0, 2),
    26: (0, 2),
    28: (0, 2),
    # the transaction tools' (flexible only)
    65: (0, 0),
    66: (0, 1),
}


def flexible_api_versions_request(version: int, correlation_id: int) -> bytes:
    """ApiVersions v3+ as librdkafka sends it: header v2 (classic client id + tag byte), compact body."""
    header = struct.pack(">hhi", ApiKey.API_VERSIONS, version, correlation_id) + b"\x00\x07rdkafka" + b"\x00"
    body = b"\x0b" + b"librdkafka" + b"\x07" + b"2.16.0" + b"\x00"
    return frame(header + body)


def unsupported_reply(correlation_id: int) -> bytes:
    """Kafka's v0-encoded answer: header v0, error 35, one entry (18, 0, 2)."""
    return bytes.fromhex("00000010") + struct.pack(">i", correlation_id) + bytes.fromhex("0023 00000001 0012 0000 0002")


def test_worked_example_bytes_of_the_reference():
    request = flexible_api_versions_request(3, 1)
    assert (
        request
        == bytes.fromhex("00000025 0012 0003 00000001 0007")
        + b"rdkafka"
        + b"\x00\x0b"
        + b"librdkafka"
        + b"\x07"
        + b"2.16.0"
        + b"\x00"
    )
    assert unsupported_reply(1) == bytes.fromhex("00000010 00000001 0023 00000001 0012 0000 0002")


@pytest.mark.parametrize("version", [3, 4, 5, 32767])
def test_flexible_api_versions_gets_the_exact_v0_encoded_error_reply(client, version):
    client.send_raw(flexible_api_versions_request(version, 0x01020304))
    data = client.recv_frame()
    assert data is not None
    assert struct.pack(">i", len(data)) + data == unsupported_reply(0x01020304)
    # the connection stays usable: the client's retry with v0 on the same socket is answered
    result = client.call(ApiKey.API_VERSIONS, 0, {})
    assert result["error_code"] == ErrorCode.NONE


@pytest.mark.parametrize("version", [0, 1, 2])
def test_api_versions_v0_to_v2_list_exactly_the_advertised_table(client, version):
    result = client.call(ApiKey.API_VERSIONS, version, {})
    assert result["error_code"] == ErrorCode.NONE
    table = {k["api_key"]: (k["min_version"], k["max_version"]) for k in result["api_keys"]}
    assert table == ADVERTISED
    assert len(result["api_keys"]) == len(ADVERTISED)
    if version >= 1:
        assert result["throttle_time_ms"] == 0


# -- 2. Response headers ---------------------------------------------------------------------------


def test_api_versions_v3_reply_has_no_header_tag_byte(client):
    client.send_raw(flexible_api_versions_request(3, 77))
    data = client.recv_frame()
    # correlation id, then at once the INT16 error code (a tag byte would put 0x00 before 0x0023)
    assert data[:4] == struct.pack(">i", 77) and data[4:6] == b"\x00\x23" and len(data) == 16


def test_api_versions_v2_reply_starts_the_body_right_after_the_correlation_id(client):
    correlation_id = client.send_request(ApiKey.API_VERSIONS, 2, {})
    data = client.recv_frame()
    assert data[:4] == struct.pack(">i", correlation_id)
    assert data[4:6] == b"\x00\x00"  # error code
    assert struct.unpack(">i", data[6:10])[0] == len(ADVERTISED)  # array count, unshifted
    assert len(data) == 4 + 2 + 4 + 6 * len(ADVERTISED) + 4


def test_every_api_response_is_header_v0_plus_exactly_its_body(client):
    topic = new_topic(client, "hdr")
    requests = [
        (ApiKey.METADATA, 8, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}),
        (ApiKey.PRODUCE, 8, produce_body(topic, 0, make_batch([b"x"]))),
        (ApiKey.FETCH, 11, fetch_body([(topic, 0, 0)])),
        (ApiKey.LIST_OFFSETS, 5, list_offsets_body(topic, 0, LATEST)),
        (ApiKey.CREATE_TOPICS, 4, create_topics_body(unique("hdr"))),
        (ApiKey.DELETE_TOPICS, 3, {"topic_names": ["no-such-topic-hdr"], "timeout_ms": 1000}),
        (ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60000}),
        (ApiKey.API_VERSIONS, 2, {}),
    ]
    for api_key, version, body in requests:
        correlation_id = client.send_request(api_key, version, body)
        data = client.recv_frame()
        # decode_response fails if a byte is left over (or missing), as a stray tag byte would cause
        received, _ = decode_response(data, api_key, version)
        assert received == correlation_id, api_key.name
    # the InitProducerId v1 reply is fixed-size: 4 + throttle 4 + error 2 + id 8 + epoch 2
    client.send_request(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 1})
    assert len(client.recv_frame()) == 20


@pytest.mark.parametrize("client_id", [None, "", "x" * 300])
def test_any_client_id_is_accepted(broker, client_id):
    with connect_to(broker) as c:
        correlation_id = c.send_request(ApiKey.METADATA, 0, {"topics": []}, client_id=client_id)
        assert c.recv_response(ApiKey.METADATA, 0, correlation_id)["brokers"][0]["node_id"] == NODE_ID


# -- 3. Produce versions ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_get_unsupported_version_per_partition(client, version):
    topic = new_topic(client, f"old-produce-v{version}", partitions=2)
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"index": 0, "records": make_batch([b"a"])},
                    {"index": 1, "records": make_batch([b"b"])},
                ],
            }
        ],
    }
    result = client.call(ApiKey.PRODUCE, version, body)  # decoded strictly with the v0/v1/v2 schema
    [topic_result] = result["responses"]
    assert topic_result["name"] == topic
    assert [(p["index"], p["error_code"]) for p in topic_result["partitions"]] == [
        (0, ErrorCode.UNSUPPORTED_VERSION),
        (1, ErrorCode.UNSUPPORTED_VERSION),
    ]
    assert high_watermark(client, topic, 0) == 0 and high_watermark(client, topic, 1) == 0


@pytest.mark.parametrize("version", [3, 4, 5, 6, 7, 8])
def test_produce_v3_to_v8_append(client, version):
    topic = new_topic(client, f"produce-v{version}")
    first = produce(client, topic, 0, make_batch([b"a", b"b"]), version=version)
    second = produce(client, topic, 0, make_batch([b"c"]), version=version)
    assert (first["error_code"], first["base_offset"]) == (ErrorCode.NONE, 0)
    assert (second["error_code"], second["base_offset"]) == (ErrorCode.NONE, 2)
    assert first["log_append_time_ms"] == -1
    if version >= 5:
        assert first["log_start_offset"] == 0
    if version >= 8:
        assert first["record_errors"] == [] and first["error_message"] is None
    assert high_watermark(client, topic) == 3


# -- 4. Metadata -----------------------------------------------------------------------------------


def check_broker_and_controller(result, broker, version):
    assert [(b["node_id"], b["host"], b["port"]) for b in result["brokers"]] == [(NODE_ID, "127.0.0.1", broker.port)]
    if version >= 1:
        assert result["controller_id"] == NODE_ID


def test_metadata_v0_as_the_very_first_request_lists_all_topics(broker, client):
    topics = {new_topic(client, "md0-a", 2): 2, new_topic(client, "md0-b", 3): 3}
    with connect_to(broker) as fresh:  # no ApiVersions first, like aiokafka 0.12
        result = fresh.call(ApiKey.METADATA, 0, {"topics": []})
        check_broker_and_controller(result, broker, 0)
        listed = {t["name"]: t for t in result["topics"]}
        assert topics.keys() <= listed.keys()
        assert set(listed) == topic_names(fresh)
        for name, partitions in topics.items():
            assert listed[name]["error_code"] == ErrorCode.NONE
            assert [p["partition_index"] for p in listed[name]["partitions"]] == list(range(partitions))


@pytest.mark.parametrize("version", range(0, 9))
def test_metadata_of_one_topic_names_this_broker_as_leader_and_controller(broker, client, version):
    topic = new_topic(client, f"md-v{version}", 3)
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    result = client.call(ApiKey.METADATA, version, body)
    check_broker_and_controller(result, broker, version)
    [t] = result["topics"]
    assert (t["error_code"], t["name"]) == (ErrorCode.NONE, topic)
    assert [p["partition_index"] for p in t["partitions"]] == [0, 1, 2]
    for p in t["partitions"]:
        assert p["error_code"] == ErrorCode.NONE
        assert (p["leader_id"], p["replica_nodes"], p["isr_nodes"]) == (NODE_ID, [NODE_ID], [NODE_ID])
        if version >= 7:
            assert p["leader_epoch"] == 0


@pytest.mark.parametrize("version", range(1, 9))
def test_metadata_v1_plus_null_means_all_topics_and_empty_means_none(client, version):
    topic = new_topic(client, f"md-all-v{version}")
    everything = client.call(ApiKey.METADATA, version, {"topics": None, "allow_auto_topic_creation": False})
    assert topic in {t["name"] for t in everything["topics"]}
    nothing = client.call(ApiKey.METADATA, version, {"topics": [], "allow_auto_topic_creation": False})
    assert nothing["topics"] == []
    assert nothing["controller_id"] == NODE_ID


def test_metadata_auto_creates_unknown_topics_with_num_partitions_unless_told_not_to(client):
    refused = unique("md-noauto")
    result = client.call(ApiKey.METADATA, 4, {"topics": [{"name": refused}], "allow_auto_topic_creation": False})
    assert [(t["name"], t["error_code"]) for t in result["topics"]] == [(refused, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert refused not in topic_names(client)
    created = unique("md-auto")
    result = client.call(ApiKey.METADATA, 4, {"topics": [{"name": created}], "allow_auto_topic_creation": True})
    [t] = result["topics"]
    assert t["error_code"] == ErrorCode.NONE and len(t["partitions"]) == 4  # num.partitions=4


# -- 5. Pipelining ---------------------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_request_order(broker, client):
    topic = new_topic(client, "pipe", 2)
    produce(client, topic, 0, make_batch([b"x", b"y"]))
    rng = random.Random(5)
    requests = [(ApiKey.FETCH, 11, fetch_body([(topic, 1, 0)], max_wait_ms=300, min_bytes=1))]  # a slow one first
    for i in range(49):
        kind = i % 5
        if kind == 0:
            requests.append((ApiKey.METADATA, rng.randint(0, 8), {"topics": [{"name": topic}]}))
        elif kind == 1:
            requests.append((ApiKey.API_VERSIONS, rng.randint(0, 2), {}))
        elif kind == 2:
            requests.append((ApiKey.LIST_OFFSETS, rng.randint(1, 5), list_offsets_body(topic, 0, LATEST)))
        elif kind == 3:
            requests.append((ApiKey.FETCH, rng.randint(4, 11), fetch_body([(topic, 0, rng.randint(0, 2))])))
        else:
            requests.append((ApiKey.PRODUCE, rng.randint(3, 8), produce_body(topic, 1, make_batch([b"p%d" % i]))))
    correlation_ids = rng.sample(range(1, 2**31), len(requests))
    with connect_to(broker) as pipe:
        pipe.send_raw(
            b"".join(
                encode_request(api, version, body, cid)
                for (api, version, body), cid in zip(requests, correlation_ids, strict=True)
            )
        )
        for (api, version, _), cid in zip(requests, correlation_ids, strict=True):
            data = pipe.recv_frame()
            assert data is not None
            received, _ = decode_response(data, api, version)
            assert received == cid, f"response to {api.name} v{version} out of order"
    produced = sum(1 for api, _, _ in requests if api == ApiKey.PRODUCE)
    assert high_watermark(client, topic, 1) == produced  # every pipelined produce was appended once


# -- 6. acks=0 -------------------------------------------------------------------------------------


def test_acks_0_produce_gets_no_response_but_is_appended(client):
    topic = new_topic(client, "acks0")
    client.send_request(ApiKey.PRODUCE, 3, produce_body(topic, 0, make_batch([b"silent"]), acks=0))
    metadata_id = client.send_request(ApiKey.METADATA, 1, {"topics": [{"name": topic}]})
    received, body = decode_response(client.recv_frame(), ApiKey.METADATA, 1)
    assert received == metadata_id and body["topics"][0]["name"] == topic
    assert key_values(fetch_one(client, topic, 0, 0)["records"]) == [(0, b"k0", b"silent")]


def test_a_failed_acks_0_produce_closes_the_connection(broker):
    with connect_to(broker) as c:
        topic = new_topic(c, "acks0-fail")
        c.send_request(ApiKey.PRODUCE, 3, produce_body(topic, 99, make_batch([b"lost"]), acks=0))
        assert c.closed_by_peer(timeout=10)


# -- 7. Fetch --------------------------------------------------------------------------------------


@pytest.fixture
def two_batches(client):
    """A topic whose partition 0 holds a 5-record batch (offsets 0-4) and a 3-record one (5-7)."""
    topic = new_topic(client, "fetch", partitions=2)
    assert produce(client, topic, 0, make_batch([b"a%d" % i for i in range(5)]))["base_offset"] == 0
    assert produce(client, topic, 0, make_batch([b"b%d" % i for i in range(3)]))["base_offset"] == 5
    return topic


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_from_mid_batch_starts_with_the_batch_containing_the_offset(client, two_batches, version):
    for offset, expected_base in [(2, 0), (4, 0), (6, 5), (7, 5)]:
        result = fetch_one(client, two_batches, 0, offset, version=version)
        assert result["error_code"] == ErrorCode.NONE
        first = decoded_batches(result["records"])[0]
        assert first.base_offset == expected_base and first.base_offset <= offset <= first.last_offset
        assert offset in [r.offset for r in first.records]


def test_fetch_returns_one_whole_batch_even_when_the_limits_are_1_byte(client, two_batches):
    result = fetch_one(client, two_batches, 0, 0, partition_max_bytes=1, max_bytes=1)
    records = bytes(result["records"])
    header = batch.parse_header(records)
    assert header.size == len(records) and header.base_offset == 0
    assert [v for _, _, v in key_values(records)] == [b"a%d" % i for i in range(5)]


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_lists_every_requested_partition_with_kafkas_fixed_fields(client, two_batches, version):
    wanted = [(two_batches, 0, 0), (two_batches, 1, 0), (two_batches, 7, 0), ("no-such-topic-fetch", 0, 0)]
    result = client.call(ApiKey.FETCH, version, fetch_body(wanted, max_wait_ms=0, min_bytes=1))
    if version >= 7:
        assert (result["error_code"], result["session_id"]) == (ErrorCode.NONE, 0)
    listed = [(t["topic"], p["partition_index"]) for t in result["responses"] for p in t["partitions"]]
    assert listed == [(t, p) for t, p, _ in wanted]
    parts = [p for t in result["responses"] for p in t["partitions"]]
    expected = [
        (ErrorCode.NONE, 8),
        (ErrorCode.NONE, 0),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]
    assert [(p["error_code"], p["high_watermark"]) for p in parts] == expected
    for p in parts:
        assert p["records"] is not None  # never null, even for errors
        assert p["last_stable_offset"] == p["high_watermark"]
        assert p["aborted_transactions"] == []  # an empty array, not null
        if version >= 11:
            assert p["preferred_read_replica"] == -1
    assert len(parts[0]["records"]) > 0 and len(parts[1]["records"]) == 0
    if version >= 5:
        assert parts[0]["log_start_offset"] == 0


def test_fetch_at_the_high_watermark_is_empty_not_an_error(client, two_batches):
    result = fetch_one(client, two_batches, 0, 8)
    assert (result["error_code"], result["high_watermark"], bytes(result["records"])) == (ErrorCode.NONE, 8, b"")


@pytest.mark.parametrize("offset", [9, 1000, -1, -2])
def test_fetch_outside_the_log_is_offset_out_of_range_with_the_watermark(client, two_batches, offset):
    result = fetch_one(client, two_batches, 0, offset, version=11, max_wait_ms=5000)
    assert result["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (result["high_watermark"], result["last_stable_offset"], result["log_start_offset"]) == (8, 8, 0)
    assert result["records"] is not None and len(result["records"]) == 0


# -- 8. Long polling -------------------------------------------------------------------------------


def test_long_poll_returns_as_soon_as_another_connection_produces(broker, client):
    topic = new_topic(client, "longpoll")
    with connect_to(broker) as waiter:
        # Ten minutes of max wait: only the produce can answer it within the receive's bound.
        correlation_id = waiter.send_request(
            ApiKey.FETCH, 11, fetch_body([(topic, 0, 0)], max_wait_ms=600_000, min_bytes=1)
        )
        wait_for(waiter.sent_and_read_by_peer, what="the broker reading the fetch")
        assert waiter.pending_bytes() == 0  # parked: no answer while there is no data
        produce(client, topic, 0, make_batch([b"wake"]))
        result = waiter.recv_response(ApiKey.FETCH, 11, correlation_id, timeout=10)
    partition = result["responses"][0]["partitions"][0]
    assert key_values(partition["records"]) == [(0, b"k0", b"wake")]


def test_long_poll_returns_empty_after_max_wait(client):
    topic = new_topic(client, "longpoll-empty")
    correlation_id = client.send_request(ApiKey.FETCH, 11, fetch_body([(topic, 0, 0)], max_wait_ms=1000, min_bytes=1))
    wait_for(client.sent_and_read_by_peer, what="the broker reading the fetch")
    result = client.recv_response(ApiKey.FETCH, 11, correlation_id, timeout=10)
    partition = result["responses"][0]["partitions"][0]
    assert partition["error_code"] == ErrorCode.NONE and bytes(partition["records"]) == b""


# -- 9. Produce validation -------------------------------------------------------------------------


def corrupt_crc(data: bytes) -> bytes:
    out = bytearray(data)
    out[-1] ^= 0xFF  # a record byte: covered by the CRC
    return bytes(out)


def control_batch(transactional: bool) -> bytes:
    key, value = batch.control_record(ControlType.COMMIT)
    return batch.build(
        [Record(0, BASE_TIME, key, value)],
        is_control=True,
        is_transactional=transactional,
        producer_id=7 if transactional else -1,
        producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1,
    )


PRODUCE_FAILURES = {
    "bad-crc": (lambda: corrupt_crc(make_batch([b"a", b"b"])), 3, 1, ErrorCode.CORRUPT_MESSAGE),
    "two-batches": (lambda: make_batch([b"a"]) + make_batch([b"b"]), 3, 1, ErrorCode.INVALID_RECORD),
    "control-batch": (lambda: control_batch(False), 3, 1, ErrorCode.INVALID_RECORD),
    "transactional-control-batch": (lambda: control_batch(True), 3, 1, ErrorCode.INVALID_RECORD),
    "zstd-before-v7": (
        lambda: make_batch([b"z"], compression=Codec.ZSTD),
        5,
        1,
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    ),
    "acks-2": (lambda: make_batch([b"a"]), 3, 2, ErrorCode.INVALID_REQUIRED_ACKS),
    "acks-minus-2": (lambda: make_batch([b"a"]), 8, -2, ErrorCode.INVALID_REQUIRED_ACKS),
}


@pytest.mark.parametrize("case", sorted(PRODUCE_FAILURES))
def test_produce_validation_errors_leave_the_log_unchanged(client, case):
    build, version, acks, expected = PRODUCE_FAILURES[case]
    topic = new_topic(client, "invalid")
    assert produce(client, topic, 0, make_batch([b"before"]))["error_code"] == ErrorCode.NONE
    result = produce(client, topic, 0, build(), version=version, acks=acks)
    assert result["error_code"] == expected, result
    assert high_watermark(client, topic) == 1
    assert key_values(fetch_one(client, topic, 0, 0)["records"]) == [(0, b"k0", b"before")]


def test_zstd_from_produce_v7_is_accepted(client):
    topic = new_topic(client, "zstd")
    assert produce(client, topic, 0, make_batch([b"z1", b"z2"], compression=Codec.ZSTD), version=7)["error_code"] == 0
    assert [v for _, _, v in key_values(fetch_one(client, topic, 0, 0, version=10)["records"])] == [b"z1", b"z2"]


@pytest.mark.parametrize("topic_suffix, partition", [("missing-topic", 0), ("", 99), ("", -1)])
def test_produce_to_an_unknown_topic_or_partition(client, topic_suffix, partition):
    existing = new_topic(client, "known")
    topic = unique(topic_suffix) if topic_suffix else existing
    result = produce(client, topic, partition, make_batch([b"x"]))
    assert result["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert high_watermark(client, existing) == 0
    if topic_suffix:
        assert topic not in topic_names(client)  # produce does not auto-create


def test_a_batch_above_message_max_bytes_is_message_too_large(start_broker):
    small = start_broker({"message.max.bytes": "5000"})
    with connect_to(small) as c:
        topic = new_topic(c, "large")
        random_bytes = random.Random(1).randbytes
        fits = make_batch([random_bytes(4000)])
        too_big = make_batch([random_bytes(6000)])
        assert len(fits) <= 5000 < len(too_big)
        assert produce(c, topic, 0, too_big)["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
        assert high_watermark(c, topic) == 0
        assert produce(c, topic, 0, fits)["error_code"] == ErrorCode.NONE
        assert high_watermark(c, topic) == 1


# -- 10. Idempotent producers ----------------------------------------------------------------------


def init_producer_id(client, version: int = 1) -> tuple[int, int]:
    result = client.call(ApiKey.INIT_PRODUCER_ID, version, {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert result["error_code"] == ErrorCode.NONE and result["throttle_time_ms"] == 0
    return result["producer_id"], result["producer_epoch"]


def idempotent_batch(producer_id: int, sequence: int, values, epoch: int = 0, timestamp: int = BASE_TIME) -> bytes:
    return make_batch(values, timestamp, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)


def test_init_producer_id_v0_and_v1_give_fresh_increasing_ids_at_epoch_0(client):
    ids = []
    for version in (0, 1, 0, 1):
        producer_id, epoch = init_producer_id(client, version)
        assert producer_id >= 0 and epoch == 0
        ids.append(producer_id)
    assert ids == sorted(set(ids))


def test_producer_ids_keep_increasing_across_restarts(start_broker):
    first = start_broker()
    with connect_to(first) as c:
        before = [init_producer_id(c)[0] for _ in range(3)]
    assert first.stop() == 0
    second = start_broker(log_dir=first.log_dir)
    with connect_to(second) as c:
        after_stop = init_producer_id(c, 0)[0]
    second.kill()
    third = start_broker(log_dir=first.log_dir)
    with connect_to(third) as c:
        after_kill = init_producer_id(c, 1)[0]
    assert before == sorted(set(before)) and max(before) < after_stop < after_kill


def test_a_retried_idempotent_produce_returns_the_original_offset(client):
    topic = new_topic(client, "idem")
    producer_id, _ = init_producer_id(client)
    first = idempotent_batch(producer_id, 0, [b"a", b"b", b"c"])
    assert produce(client, topic, 0, first)["base_offset"] == 0
    retry = produce(client, topic, 0, first, version=8)
    assert (retry["error_code"], retry["base_offset"]) == (ErrorCode.NONE, 0)
    assert produce(client, topic, 0, idempotent_batch(producer_id, 3, [b"d"]))["base_offset"] == 3
    assert produce(client, topic, 0, first)["base_offset"] == 0  # still remembered (one of the last 5)
    assert high_watermark(client, topic) == 4
    assert [v for _, _, v in key_values(fetch_one(client, topic, 0, 0)["records"])] == [b"a", b"b", b"c", b"d"]


def test_a_sequence_gap_is_out_of_order_sequence_number(client):
    topic = new_topic(client, "gap")
    producer_id, _ = init_producer_id(client)
    assert produce(client, topic, 0, idempotent_batch(producer_id, 0, [b"a"]))["error_code"] == ErrorCode.NONE
    gap = produce(client, topic, 0, idempotent_batch(producer_id, 5, [b"x"]))
    assert gap["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    new_epoch = produce(client, topic, 0, idempotent_batch(producer_id, 1, [b"x"], epoch=1))
    assert new_epoch["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a new epoch starts at 0
    # as in Kafka, a producer the partition has no state for may start at any sequence
    new_producer = produce(client, topic, 0, idempotent_batch(init_producer_id(client)[0], 3, [b"y"]))
    assert (new_producer["error_code"], new_producer["base_offset"]) == (ErrorCode.NONE, 1)
    assert high_watermark(client, topic) == 2


def test_a_producer_whose_state_retention_deleted_continues_and_is_still_deduplicated(start_broker):
    broker = start_broker({"log.retention.check.interval.ms": "100"})
    with connect_to(broker) as c:
        topic = new_topic(c, "idem-retention", configs={"retention.ms": "3600000"})
        producer_id, _ = init_producer_id(c)
        assert produce(c, topic, 0, idempotent_batch(producer_id, 0, [b"a", b"b"]))["base_offset"] == 0
        # BASE_TIME is long past retention.ms: the batch is gone
        wait_for(lambda: list_offset(c, topic, 0, EARLIEST)["offset"] >= 2, what="retention deleting the batch")
        continued = idempotent_batch(producer_id, 2, [b"c"], timestamp=int(time.time() * 1000))
        first, retry = produce(c, topic, 0, continued), produce(c, topic, 0, continued, version=8)
        assert (first["error_code"], first["base_offset"]) == (ErrorCode.NONE, 2)
        assert (retry["error_code"], retry["base_offset"]) == (ErrorCode.NONE, 2)  # deduplicated, not appended
        assert high_watermark(c, topic) == 3
        assert key_values(fetch_one(c, topic, 0, 2)["records"]) == [(2, b"k0", b"c")]


def test_duplicates_are_detected_after_a_clean_restart_and_after_a_crash(start_broker):
    process = start_broker()
    with connect_to(process) as c:
        topic = new_topic(c, "idem-restart")
        producer_id, _ = init_producer_id(c)
        batches = [idempotent_batch(producer_id, 0, [b"a", b"b"]), idempotent_batch(producer_id, 2, [b"c"])]
        assert [produce(c, topic, 0, b)["base_offset"] for b in batches] == [0, 2]
    assert process.stop() == 0

    process = start_broker(log_dir=process.log_dir)
    with connect_to(process) as c:
        assert produce(c, topic, 0, batches[1])["base_offset"] == 2  # duplicate: not appended again
        assert high_watermark(c, topic) == 3
        batches.append(idempotent_batch(producer_id, 3, [b"d", b"e"]))
        assert produce(c, topic, 0, batches[2])["base_offset"] == 3
    process.kill()

    process = start_broker(log_dir=process.log_dir)
    with connect_to(process) as c:
        # as in Kafka, the state rebuilt after a crash holds the snapshot's last batch (sequence 2) and
        # the batches replayed from the log after it (sequence 3-4): retries of both are duplicates
        for expected, retried in [(2, batches[1]), (3, batches[2])]:
            result = produce(c, topic, 0, retried)
            assert (result["error_code"], result["base_offset"]) == (ErrorCode.NONE, expected)
        assert high_watermark(c, topic) == 5
        assert (
            produce(c, topic, 0, idempotent_batch(producer_id, 9, [b"x"]))["error_code"]
            == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )
        assert produce(c, topic, 0, idempotent_batch(producer_id, 5, [b"f"]))["base_offset"] == 5
        assert [v for _, _, v in key_values(fetch_one(c, topic, 0, 0)["records"])] == [
            b"a",
            b"b",
            b"c",
            b"d",
            b"e",
            b"f",
        ]


# -- 11. Legacy message sets -----------------------------------------------------------------------


@pytest.mark.parametrize("codec", [0, 1], ids=["none", "gzip"])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_magic_0_and_1_sets_are_stored_as_v2_batches(client, magic, codec):
    topic = new_topic(client, "legacy")
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(3):
        builder.append(i, BASE_TIME + i, b"key%d" % i, b"value%d" % i)
    timestamps = [BASE_TIME + i for i in range(3)] if magic == 1 else [batch.NO_TIMESTAMP] * 3  # magic 0 has none
    result = produce(client, topic, 0, bytes(builder.build()))
    assert (result["error_code"], result["base_offset"]) == (ErrorCode.NONE, 0)
    assert produce(client, topic, 0, make_batch([b"after"]))["base_offset"] == 3
    records = bytes(fetch_one(client, topic, 0, 0)["records"])
    assert records[16] == batch.MAGIC
    [legacy, after] = decoded_batches(records)
    assert legacy.magic == batch.MAGIC and (legacy.base_offset, legacy.last_offset) == (0, 2)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in legacy.records] == [
        (i, timestamps[i], b"key%d" % i, b"value%d" % i) for i in range(3)
    ]
    assert after.base_offset == 3


# -- 12. ListOffsets -------------------------------------------------------------------------------


@pytest.fixture
def timed_topic(client):
    """Three 2-record batches at BASE_TIME+0/1, +1000/1001, +2000/2001: offsets 0-5."""
    topic = new_topic(client, "times")
    for i in range(3):
        produce(client, topic, 0, make_batch([b"x", b"y"], timestamp=BASE_TIME + 1000 * i))
    return topic


@pytest.mark.parametrize("version", range(1, 6))
def test_list_offsets_earliest_latest_and_by_timestamp(client, timed_topic, version):
    def lookup(timestamp):
        result = list_offset(client, timed_topic, 0, timestamp, version=version)
        assert result["error_code"] == ErrorCode.NONE
        if version >= 4 and result["offset"] >= 0:
            assert result["leader_epoch"] == 0
        return result["timestamp"], result["offset"]

    assert lookup(EARLIEST) == (-1, 0)
    assert lookup(LATEST) == (-1, 6)
    assert lookup(BASE_TIME) == (BASE_TIME, 0)
    assert lookup(BASE_TIME + 999) == (BASE_TIME + 1000, 2)
    assert lookup(BASE_TIME + 1001) == (BASE_TIME + 1001, 3)
    assert lookup(0) == (BASE_TIME, 0)
    assert lookup(BASE_TIME + 5000) == (-1, -1)


@pytest.mark.parametrize("version", [4, 5])
def test_list_offsets_with_a_future_leader_epoch_is_unknown_leader_epoch(client, timed_topic, version):
    result = list_offset(client, timed_topic, 0, LATEST, version=version, current_leader_epoch=5)
    assert result["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
    for epoch in (0, -1):
        assert list_offset(client, timed_topic, 0, LATEST, version=version, current_leader_epoch=epoch)["offset"] == 6


def test_list_offsets_of_an_unknown_partition(client, timed_topic):
    assert list_offset(client, timed_topic, 9, LATEST)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- 13. CreateTopics and DeleteTopics -------------------------------------------------------------


def partition_count(client, topic: str) -> int | None:
    result = client.call(ApiKey.METADATA, 4, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    [t] = result["topics"]
    return len(t["partitions"]) if t["error_code"] == ErrorCode.NONE else None


def create_error(client, version: int, name: str, **kwargs) -> int:
    result = client.call(ApiKey.CREATE_TOPICS, version, create_topics_body(name, **kwargs))
    [t] = result["topics"]
    assert t["name"] == name
    if version >= 1 and t["error_code"] != ErrorCode.NONE:
        assert t["error_message"]
    return t["error_code"]


@pytest.mark.parametrize("version", range(0, 5))
def test_create_topics_error_codes(client, version):
    name = unique(f"create-v{version}")
    assert create_error(client, version, name, partitions=3) == ErrorCode.NONE
    assert partition_count(client, name) == 3
    assert create_error(client, version, name, partitions=3) == ErrorCode.TOPIC_ALREADY_EXISTS
    assert create_error(client, version, unique("rf"), replication_factor=3) == ErrorCode.INVALID_REPLICATION_FACTOR
    assert create_error(client, version, "bad/name") == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert create_error(client, version, unique("cfg"), configs={"no.such.config": "1"}) == ErrorCode.INVALID_CONFIG
    assert create_error(client, version, unique("zero"), partitions=0) == ErrorCode.INVALID_PARTITIONS
    assert "bad/name" not in topic_names(client)


def test_create_topics_v4_defaults_and_validate_only(client):
    defaulted = unique("defaults")
    assert create_error(client, 4, defaulted, partitions=-1, replication_factor=-1) == ErrorCode.NONE
    assert partition_count(client, defaulted) == 4  # num.partitions
    for version in range(1, 5):
        dry = unique(f"dry-v{version}")
        assert create_error(client, version, dry, partitions=2, validate_only=True) == ErrorCode.NONE
        assert (
            create_error(client, version, dry, replication_factor=3, validate_only=True)
            == ErrorCode.INVALID_REPLICATION_FACTOR
        )
        assert dry not in topic_names(client)
    assert create_error(client, 1, defaulted, validate_only=True) == ErrorCode.TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize("version", range(0, 4))
def test_delete_topics(client, version):
    name = new_topic(client, f"delete-v{version}", partitions=2)
    produce(client, name, 1, make_batch([b"x"]))
    missing = unique("never-created")
    result = client.call(ApiKey.DELETE_TOPICS, version, {"topic_names": [name, missing], "timeout_ms": 5000})
    assert [(r["name"], r["error_code"]) for r in result["responses"]] == [
        (name, ErrorCode.NONE),
        (missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    if version >= 1:
        assert result["throttle_time_ms"] == 0
    assert name not in topic_names(client)
    assert produce(client, name, 1, make_batch([b"y"]))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_topics_and_their_configs_survive_a_restart(start_broker):
    process = start_broker({"num.partitions": "2"})
    with connect_to(process) as c:
        kept = new_topic(c, "kept", partitions=3, configs={"max.message.bytes": "2000"})
        deleted = new_topic(c, "deleted", partitions=1)
        dry = unique("dry")
        assert create_error(c, 4, dry, validate_only=True) == ErrorCode.NONE
        assert (
            c.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": [deleted], "timeout_ms": 5000})["responses"][0][
                "error_code"
            ]
            == ErrorCode.NONE
        )
        assert produce(c, kept, 2, make_batch([b"x" * 100]))["base_offset"] == 0
    assert process.stop() == 0
    process = start_broker(log_dir=process.log_dir)
    with connect_to(process) as c:
        names = topic_names(c)
        assert kept in names and deleted not in names and dry not in names
        assert partition_count(c, kept) == 3
        big = make_batch([random.Random(2).randbytes(3000)])
        assert produce(c, kept, 2, big)["error_code"] == ErrorCode.MESSAGE_TOO_LARGE  # the topic config is back
        assert produce(c, kept, 2, make_batch([b"y"]))["base_offset"] == 1


def test_a_topic_with_the_longest_legal_name_can_be_deleted(start_broker):
    """Kafka allows 249-character names and shortens the name in its "-delete" directory for them."""
    process = start_broker()
    name = "n" * 249
    with connect_to(process) as c:
        assert create_error(c, 4, name, partitions=2) == ErrorCode.NONE
        assert produce(c, name, 1, make_batch([b"x"]))["base_offset"] == 0
        result = c.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": [name], "timeout_ms": 5000})
        assert result["responses"] == [{"name": name, "error_code": ErrorCode.NONE}]
    with connect_to(process) as c:
        assert name not in topic_names(c)
        assert produce(c, name, 1, make_batch([b"y"]))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert process.stop() == 0
    process = start_broker(log_dir=process.log_dir)
    with connect_to(process) as c:
        assert name not in topic_names(c)
