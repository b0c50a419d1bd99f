"""The broker under hostile input: it must answer or hang up, never hang, crash or balloon.

* A seeded fuzzer sends thousands of bad frames over many connections: random bytes, valid
  requests with flipped/truncated/extended bytes, huge lengths and array counts, unknown API keys
  and versions, garbage inside record batches (with and without a fixed-up CRC), well-formed
  requests full of edge values (extreme integers, odd or huge names, null arrays, duplicates),
  plus framing attacks (oversized, negative and zero size prefixes, truncated frames followed by
  a close).
  After each complete frame the fuzzer pipelines a valid ApiVersions "sentinel": the broker must
  answer the bad frame (a well-formed response with its correlation id, decodable with the
  request's schema when the request was valid) and then the sentinel, or close the connection,
  within a bounded time. Only a successful acks=0 produce may go unanswered.
* Meanwhile a healthy client keeps doing Metadata + Produce + Fetch round trips, and slow
  clients send valid requests one byte at a time; all get correct answers, and the healthy
  client's data is intact at the end. The process stays alive and its RSS bounded.
* Targeted cases: 2 GB size prefixes are refused without allocating; oversized strings,
  huge partition counts and decompression bombs get an answer; a batch with a correct CRC but
  undecodable records is refused, and whatever the fuzzer got stored decodes.
"""

import os
import random
import socket
import struct
import threading
import time
import zlib
from typing import NamedTuple

import psutil
import pytest

from broker.protocol import frames
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.types import (
    BOOLEAN,
    INT8,
    INT16,
    INT32,
    INT64,
    NULLABLE_STRING,
    RECORDS,
    STRING,
    Array,
    ProtocolError,
    Struct,
)
from broker.records import batch, record_set
from broker.records.batch import Record
from broker.records.compression import Codec
from broker.server.handlers import SERVED

from ..log.util import garble_first_record
from ..waiting import wait_for
from .wire import connect_to, decode_response, encode_request, fetch_body, frame, list_offsets_body, produce_body

MAX_REQUEST = 1024 * 1024
FUZZ_SETTINGS = {"socket.request.max.bytes": str(MAX_REQUEST), "num.partitions": "2"}
FUZZ_CASES = 20000
SEED = int(os.environ.get("FUZZ_SEED", "20241121"))  # set FUZZ_SEED to explore other cases
REPLY_TIMEOUT = 5.0
RSS_GROWTH_LIMIT = 150 * 1024 * 1024
HEALTHY_TOPIC = "healthy"
FUZZ_TOPIC = "fuzz"
BASE_TIME = 1_700_000_000_000
SENTINEL = (ApiKey.API_VERSIONS, 0, {})


def rss(process) -> int:
    return psutil.Process(process.pid()).memory_info().rss


def payload_of(api_key, version, body, correlation_id, client_id="fuzz") -> bytes:
    """A request without its size prefix."""
    return encode_request(api_key, version, body, correlation_id, client_id)[4:]


def make_batch(values, timestamp: int = BASE_TIME, **kwargs) -> bytes:
    return batch.build([Record(i, timestamp + i, b"k%d" % i, v) for i, v in enumerate(values)], **kwargs)


def unsupported_api_versions_reply(correlation_id: int) -> bytes:
    return struct.pack(">i", correlation_id) + bytes.fromhex("0023 00000001 0012 0000 0002")


# -- the corpus of valid requests ------------------------------------------------------------------


def seed_requests(rng: random.Random) -> list:
    """Valid ``(api_key, version, body)`` requests of every advertised API and version."""
    seeds = [(ApiKey.API_VERSIONS, v, {}) for v in range(3)]
    for v in range(9):
        seeds.append((ApiKey.METADATA, v, {"topics": [{"name": FUZZ_TOPIC}], "allow_auto_topic_creation": True}))
        seeds.append((ApiKey.METADATA, v, {"topics": [] if v == 0 else None}))
    codecs = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
    for v in range(3, 9):
        for acks in (1, -1, 0):
            codec = rng.choice(codecs if v >= 7 else codecs[:4])
            seeds.append(
                (
                    ApiKey.PRODUCE,
                    v,
                    produce_body(
                        FUZZ_TOPIC,
                        rng.randint(0, 1),
                        make_batch([b"v" * rng.randint(0, 40)] * 3, compression=codec),
                        acks=acks,
                    ),
                )
            )
    for v in range(4, 12):
        seeds.append(
            (ApiKey.FETCH, v, fetch_body([(FUZZ_TOPIC, 0, 0), (FUZZ_TOPIC, 1, 1)], max_wait_ms=0, min_bytes=0))
        )
    for v in range(1, 6):
        for timestamp in (-1, -2, BASE_TIME):
            seeds.append((ApiKey.LIST_OFFSETS, v, list_offsets_body(FUZZ_TOPIC, 0, timestamp)))
    for v in range(1, 5):  # validate_only: the fuzzer never creates topics through CreateTopics
        seeds.append(
            (
                ApiKey.CREATE_TOPICS,
                v,
                {
                    "topics": [
                        {
                            "name": "fuzz-created",
                            "num_partitions": 2,
                            "replication_factor": 1,
                            "assignments": [],
                            "configs": [{"name": "retention.ms", "value": "1000"}],
                        }
                    ],
                    "timeout_ms": 1000,
                    "validate_only": True,
                },
            )
        )
    for v in range(4):
        seeds.append((ApiKey.DELETE_TOPICS, v, {"topic_names": ["fuzz-never-existed"], "timeout_ms": 1000}))
    for v in range(2):
        seeds.append((ApiKey.INIT_PRODUCER_ID, v, {"transactional_id": None, "transaction_timeout_ms": 1000}))
    for v in range(4):
        seeds.append(
            (
                ApiKey.DESCRIBE_CONFIGS,
                v,
                {
                    "resources": [
                        {"resource_type": 2, "resource_name": FUZZ_TOPIC, "configuration_keys": None},
                        {"resource_type": 4, "resource_name": "0", "configuration_keys": ["log.retention.ms"]},
                    ],
                    "include_synonyms": True,
                    "include_documentation": True,
                },
            )
        )
    for v in range(2):
        seeds.append((ApiKey.DESCRIBE_LOG_DIRS, v, {"topics": [{"topic": FUZZ_TOPIC, "partitions": [0, 1, 9]}]}))
        seeds.append((ApiKey.DESCRIBE_LOG_DIRS, v, {"topics": None}))
    for v in range(2):  # the admin requests that change things: validate_only, or on a topic that never exists
        seeds.append(
            (
                ApiKey.CREATE_PARTITIONS,
                v,
                {
                    "topics": [{"name": FUZZ_TOPIC, "count": 3, "assignments": None}],
                    "timeout_ms": 1000,
                    "validate_only": True,
                },
            )
        )
        seeds.append(
            (
                ApiKey.ALTER_CONFIGS,
                v,
                {
                    "resources": [
                        {
                            "resource_type": 2,
                            "resource_name": FUZZ_TOPIC,
                            "configs": [{"name": "retention.ms", "value": "1"}],
                        }
                    ],
                    "validate_only": True,
                },
            )
        )
        seeds.append(
            (
                ApiKey.DELETE_RECORDS,
                v,
                {
                    "topics": [{"name": "fuzz-never-existed", "partitions": [{"partition_index": 0, "offset": 1}]}],
                    "timeout_ms": 1000,
                },
            )
        )
    seeds.append(
        (
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            0,
            {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": "0",
                        "configs": [{"name": "log.retention.ms", "config_operation": 0, "value": "1"}],
                    }
                ],
                "validate_only": True,
            },
        )
    )
    return seeds


# -- mutators: each returns a request payload (no size prefix) -------------------------------------


class Seed(NamedTuple):
    api_key: int
    version: int
    body: dict
    payload: bytes


HUGE_16 = [0x7FFF, 0xFFFF, 0x8000, 0xFFFE]
HUGE_32 = [0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x00100000, 0xFFFFFFFE, 0x0000FFFF]


def random_payload(rng, seed: Seed) -> bytes:
    return rng.randbytes(rng.randint(0, 120))


def flip_bytes(rng, seed: Seed) -> bytes:
    data = bytearray(seed.payload)
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def truncate(rng, seed: Seed) -> bytes:
    return seed.payload[: rng.randrange(len(seed.payload))]


def extend(rng, seed: Seed) -> bytes:
    return seed.payload + rng.randbytes(rng.randint(1, 64))


def huge_length(rng, seed: Seed) -> bytes:
    """A 2- or 4-byte window (a length or an array count, often) overwritten with a huge value."""
    data = bytearray(seed.payload)
    if rng.random() < 0.3:
        position, width = 8, 2  # the client id length
    else:
        width = rng.choice([2, 4])
        position = rng.randrange(8, max(9, len(data) - width + 1))
    value = rng.choice(HUGE_16) if width == 2 else rng.choice(HUGE_32)
    data[position : position + width] = value.to_bytes(width, "big")
    return bytes(data[: max(len(seed.payload), position + width)])


def unknown_api_key(rng, seed: Seed) -> bytes:
    key = rng.choice([k for k in range(-1, 80) if k not in SERVED] + [32767, -32768])
    return struct.pack(">hh", key, rng.randint(-2, 20)) + seed.payload[4:]


def unknown_version(rng, seed: Seed) -> bytes:
    api = SERVED[seed.api_key]
    version = rng.choice(
        [api.min_version - 1, api.max_version + 1, api.max_version + rng.randint(2, 100), -1, 32767, -32768]
    )
    return seed.payload[:2] + struct.pack(">h", version) + seed.payload[4:]


def garbage_batch(rng, seed: Seed) -> bytes:
    """A Produce whose batch is damaged inside (records or header fields), CRC fixed up or not."""
    return payload_of(
        ApiKey.PRODUCE,
        rng.randint(3, 8),
        produce_body(FUZZ_TOPIC, rng.randint(0, 1), damaged_batch(rng), acks=rng.choice([1, -1])),
        rng.randrange(2**31),
    )


def damaged_batch(rng) -> bytes:
    records = bytearray(
        make_batch(
            [rng.randbytes(rng.randint(0, 30)) for _ in range(rng.randint(1, 4))],
            compression=rng.choice([Codec.NONE, Codec.GZIP, Codec.LZ4]),
        )
    )
    for _ in range(rng.randint(1, 4)):
        low = 8 if rng.random() < 0.5 else batch.HEADER_SIZE - 1
        records[rng.randrange(low, len(records))] = rng.randrange(256)
    if rng.random() < 0.2:
        records = records[: rng.randrange(len(records))]
    if rng.random() < 0.7 and len(records) > batch.CRC_START:
        struct.pack_into(">I", records, 17, batch.compute_crc(records))
    return bytes(records)


def flexible_api_versions(rng, seed: Seed) -> bytes:
    body = rng.randbytes(rng.randint(0, 30)) if rng.random() < 0.5 else b"\x05fuzz\x021\x00"
    return (
        struct.pack(">hhi", ApiKey.API_VERSIONS, rng.randint(3, 5), rng.randrange(2**31))
        + b"\x00\x04fuzz"
        + rng.choice([b"\x00", b"\x01\x00\x00", b"\xff\xff\xff\xff\x0f", b""])
        + body
    )


# a few names, so that auto-creation only ever makes a handful of topics
NAMES = [FUZZ_TOPIC, "", ".", "..", "fuzz.a", "fuzz_a", "bad/name", "\u00fc", "f" * 249, "f" * 250, "g" * 32767]


def odd_value(rng, kind, value):
    """An edge value of the same wire type as ``value``."""
    if kind in (INT8, INT16, INT32, INT64):
        bits = {INT8: 8, INT16: 16, INT32: 32, INT64: 64}[kind]
        return rng.choice(
            [
                0,
                1,
                -1,
                -2,
                2 ** (bits - 1) - 1,
                -(2 ** (bits - 1)),
                rng.randint(-10, 10),
                rng.randrange(-(2 ** (bits - 1)), 2 ** (bits - 1)),
            ]
        )
    if kind is BOOLEAN:
        return not value
    if kind in (STRING, NULLABLE_STRING):
        return rng.choice(NAMES + ([None] if kind is NULLABLE_STRING else []))
    if kind is RECORDS:
        return rng.choice([None, b"", damaged_batch(rng), make_batch([b"ok"]), rng.randbytes(rng.randint(1, 80))])
    return value


def odd_values(rng, kind, value, version: int):
    """``value`` (of schema type ``kind``) with some fields, array lengths and elements changed."""
    if isinstance(kind, Struct):
        return {
            f.name: odd_values(rng, f.type, value[f.name], version) if f.present_in(version) else value[f.name]
            for f in kind.fields
            if f.name in value
        }  # absent fields keep their defaults
    if isinstance(kind, Array):
        if value is None or rng.random() < 0.1:
            return rng.choice([[], None if kind._nullable(version) else []])
        items = [odd_values(rng, kind.item, item, version) for item in value]
        if items and rng.random() < 0.2:
            items = items + [items[0]] * rng.randint(1, 3)  # duplicates
        return items
    return odd_value(rng, kind, value) if rng.random() < 0.25 else value


def odd_field_values(rng, seed: Seed) -> bytes:
    """A well-formed request of the seed's API and version, with edge values in its fields."""
    body = odd_values(rng, SERVED[seed.api_key].request, seed.body, seed.version)
    return payload_of(seed.api_key, seed.version, body, rng.randrange(2**31), rng.choice(["fuzz", None, ""]))


MUTATORS = [
    (random_payload, 1),
    (flip_bytes, 4),
    (truncate, 2),
    (extend, 1),
    (huge_length, 3),
    (unknown_api_key, 1),
    (unknown_version, 1),
    (garbage_batch, 2),
    (flexible_api_versions, 1),
    (odd_field_values, 4),
    (lambda rng, seed: seed.payload, 1),
]


# -- judging the broker's reaction -----------------------------------------------------------------


def parse(payload: bytes):
    """``(header, body)`` as the broker would read them; None for the parts it cannot read."""
    try:
        header, reader = frames.parse_request(payload)
    except ProtocolError:
        return None, None
    api = SERVED.get(header.api_key)
    if api is None or not api.min_version <= header.api_version <= api.max_version:
        return header, None
    try:
        return header, frames.decode_request_body(header, reader)
    except ProtocolError:
        return header, None


def legitimately_slow_or_destructive(header, body) -> bool:
    """Mutants that may wait for a long time (fetch long polls) or create big topics: not sent."""
    if body is None:
        return False
    if header.api_key == ApiKey.FETCH:
        return body["max_wait_ms"] > 500
    if header.api_key == ApiKey.CREATE_TOPICS:
        return not body.get("validate_only") and any(
            t["num_partitions"] > 8 or len(t["assignments"]) > 8 for t in body["topics"]
        )
    if header.api_key == ApiKey.METADATA and body["topics"]:
        return len(body["topics"]) > 4  # auto-creation of many topics
    return False


class Outcomes:
    def __init__(self):
        self.counts = {}
        self.closed_on_valid = []

    def add(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1


def judge(client, payload: bytes, sentinel_id: int, outcomes: Outcomes) -> bool:
    """Send one complete bad frame plus the sentinel; check the reaction. True if the connection survived."""
    header, body = parse(payload)
    correlation_id = struct.unpack(">i", payload[4:8])[0] if len(payload) >= 8 else None
    if correlation_id == sentinel_id:
        sentinel_id ^= 0x40000000
    try:
        client.send_raw(frame(payload) + encode_request(*SENTINEL, sentinel_id))
    except (BrokenPipeError, ConnectionResetError):
        outcomes.add("closed")
        return False
    start = time.monotonic()
    data = client.recv_frame(timeout=REPLY_TIMEOUT)  # raises TimeoutError if the broker hangs
    if data is None:
        if body is not None and not (header.api_key == ApiKey.PRODUCE and body["acks"] == 0):
            outcomes.closed_on_valid.append((ApiKey(header.api_key).name, header.api_version, payload))
        outcomes.add("closed")
        return False
    received = struct.unpack(">i", data[:4])[0]
    if received == sentinel_id and correlation_id != sentinel_id:
        assert header is not None and body is not None and header.api_key == ApiKey.PRODUCE and body["acks"] == 0, (
            f"no response to {payload.hex()}"
        )
        outcomes.add("acks0")
    else:
        assert received == correlation_id, f"correlation id {received} answering {payload.hex()}"
        api = SERVED.get(header.api_key) if header is not None else None
        if (
            api is not None
            and api.key == ApiKey.API_VERSIONS
            and not api.min_version <= header.api_version <= api.max_version
        ):
            assert data == unsupported_api_versions_reply(correlation_id), payload.hex()
        elif body is not None:
            decode_response(data, header.api_key, header.api_version)  # well-formed for the request's schema
        outcomes.add("answered")
        remaining = REPLY_TIMEOUT - (time.monotonic() - start)
        sentinel = client.recv_frame(timeout=max(remaining, 1.0))
        assert sentinel is not None, f"connection closed after answering {payload.hex()}"
        data = sentinel
    received, reply = decode_response(data, ApiKey.API_VERSIONS, 0)
    assert received == sentinel_id and reply["error_code"] == ErrorCode.NONE
    return True


def framing_attack(process, rng, outcomes: Outcomes, seeds) -> None:
    """One connection: a bad size prefix, or a truncated frame followed by a half or full close."""
    kind = rng.choice(["oversized", "negative", "zero", "tiny", "truncated-shutdown", "truncated-close"])
    with connect_to(process, timeout=REPLY_TIMEOUT) as c:
        if kind.startswith("truncated"):
            whole = frame(rng.choice(seeds).payload)
            c.send_raw(whole[: rng.randrange(1, len(whole))])
            if kind == "truncated-close":
                outcomes.add(kind)
                return
            c.sock.shutdown(socket.SHUT_WR)
        else:
            size = {
                "oversized": rng.randint(MAX_REQUEST + 1, 2**31 - 1),
                "negative": rng.randint(-(2**31), -1),
                "zero": 0,
                "tiny": rng.randint(1, 7),
            }[kind]
            tail = rng.randbytes(min(max(size, 0), 7) if kind != "oversized" else rng.randint(0, 64))
            try:
                c.send_raw(struct.pack(">i", size) + tail)
            except (BrokenPipeError, ConnectionResetError):
                pass
        assert c.closed_by_peer(timeout=REPLY_TIMEOUT), f"{kind}: connection not closed"
        outcomes.add(kind)


# -- well-behaved clients running alongside --------------------------------------------------------


class Background:
    """Threads that must keep working while the fuzzer runs; failures are collected, not lost."""

    def __init__(self):
        self.stop = threading.Event()
        self.errors = []
        self.threads = []
        self.healthy_values = []
        self.slow_answers = 0

    def start(self, target, *args) -> None:
        def run():
            try:
                target(*args)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.errors.append(f"{target.__name__}: {exc!r}")
                self.stop.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)
            assert not thread.is_alive(), "a background client hung"

    def healthy(self, process) -> None:
        with connect_to(process) as c:
            while not self.stop.is_set():
                offset = len(self.healthy_values)
                metadata = c.call(ApiKey.METADATA, 1, {"topics": [{"name": HEALTHY_TOPIC}]})
                assert [t["error_code"] for t in metadata["topics"]] == [ErrorCode.NONE]
                value = b"healthy-%d" % offset
                result = c.call(ApiKey.PRODUCE, 3, produce_body(HEALTHY_TOPIC, 0, make_batch([value])))
                partition = result["responses"][0]["partitions"][0]
                assert (partition["error_code"], partition["base_offset"]) == (ErrorCode.NONE, offset)
                self.healthy_values.append(value)
                fetched = c.call(ApiKey.FETCH, 11, fetch_body([(HEALTHY_TOPIC, 0, offset)]))
                records = fetched["responses"][0]["partitions"][0]["records"]
                assert [r.value for _, r in record_set.iter_user_records(bytes(records))] == [value]

    def slow(self, process, number: int) -> None:
        requests = [
            (ApiKey.METADATA, 1, {"topics": [{"name": HEALTHY_TOPIC}]}),
            (ApiKey.API_VERSIONS, 2, {}),
            (ApiKey.LIST_OFFSETS, 1, list_offsets_body(HEALTHY_TOPIC, 0, -2)),
        ]
        with connect_to(process) as c:
            rounds = 0
            while not self.stop.is_set() or rounds < 2:
                api, version, body = requests[(rounds + number) % len(requests)]
                correlation_id = 1000 * number + rounds
                for byte in encode_request(api, version, body, correlation_id):
                    c.send_raw(bytes([byte]))
                    time.sleep(0.004)
                reply = c.recv_response(api, version, correlation_id)
                if api == ApiKey.METADATA:
                    assert reply["topics"][0]["name"] == HEALTHY_TOPIC and reply["topics"][0]["error_code"] == 0
                elif api == ApiKey.API_VERSIONS:
                    assert reply["error_code"] == 0 and len(reply["api_keys"]) == len(SERVED)
                else:
                    assert reply["topics"][0]["partitions"][0]["offset"] == 0
                rounds += 1
                self.slow_answers += 1


# -- the tests -------------------------------------------------------------------------------------


def test_the_broker_survives_thousands_of_bad_frames(start_broker):
    process = start_broker(FUZZ_SETTINGS)
    rng = random.Random(SEED)
    with connect_to(process) as setup:  # the topics exist before the fuzzing starts
        setup.call(ApiKey.METADATA, 1, {"topics": [{"name": HEALTHY_TOPIC}, {"name": FUZZ_TOPIC}]})
    seeds = [
        Seed(api, version, body, payload_of(api, version, body, rng.randrange(2**31)))
        for api, version, body in seed_requests(rng)
    ]
    mutators = [m for m, weight in MUTATORS for _ in range(weight)]
    background = Background()
    background.start(background.healthy, process)
    for number in range(3):
        background.start(background.slow, process, number)
    wait_for(lambda: len(background.healthy_values) >= 5 or background.errors, timeout=30)
    rss_before = rss(process)

    outcomes = Outcomes()
    client = connect_to(process, timeout=REPLY_TIMEOUT)
    connections = 1
    try:
        for case in range(FUZZ_CASES):
            if background.stop.is_set():
                break
            if rng.random() < 0.06:
                framing_attack(process, rng, outcomes, seeds)
                connections += 1
                continue
            payload = rng.choice(mutators)(rng, rng.choice(seeds))
            if legitimately_slow_or_destructive(*parse(payload)):
                outcomes.add("skipped")
                continue
            try:
                alive = judge(client, payload, 0x5EED0000 + case, outcomes)
            except TimeoutError:
                raise AssertionError(f"no answer and no close within {REPLY_TIMEOUT}s for {payload.hex()}") from None
            if not alive:
                client.close()
                client = connect_to(process, timeout=REPLY_TIMEOUT)
                connections += 1
    finally:
        client.close()
        background.join()
    print(
        f"\nfuzz outcomes: {outcomes.counts}, {connections} connections, "
        f"{len(background.healthy_values)} healthy round trips, {background.slow_answers} slow answers"
    )
    # allowed by the contract (answer or close), but worth a look: Kafka answers every valid request
    print("valid requests answered by a close:", sorted({(name, v) for name, v, _ in outcomes.closed_on_valid}))

    assert background.errors == []
    assert process.running
    assert sum(outcomes.counts.values()) >= FUZZ_CASES * 0.9
    assert outcomes.counts.get("answered", 0) > 500 and outcomes.counts.get("closed", 0) > 500
    assert len(background.healthy_values) >= 20 and background.slow_answers >= 6
    growth = rss(process) - rss_before
    assert growth < RSS_GROWTH_LIMIT, f"RSS grew by {growth / 2**20:.0f} MiB"
    with connect_to(process) as c:  # the healthy client's data is all there, in order
        result = c.call(
            ApiKey.FETCH, 11, fetch_body([(HEALTHY_TOPIC, 0, 0)], max_bytes=2**30, partition_max_bytes=2**30)
        )
        records = result["responses"][0]["partitions"][0]["records"]
        values = [r.value for _, r in record_set.iter_user_records(bytes(records))]
        assert values == background.healthy_values
        for partition in (0, 1):  # whatever the fuzzer got stored decodes, record by record
            result = c.call(
                ApiKey.FETCH, 11, fetch_body([(FUZZ_TOPIC, partition, 0)], max_bytes=2**30, partition_max_bytes=2**30)
            )
            stored = bytes(result["responses"][0]["partitions"][0]["records"])
            offsets = [
                r.offset
                for p, h in record_set.iter_entries(stored)
                for r in record_set.decode_entry(stored[p : p + h.size]).records
            ]
            assert offsets == list(range(len(offsets)))
            print(f"fuzz topic partition {partition}: {len(offsets)} records stored")


@pytest.mark.parametrize("size", [2**31 - 1, 2 * 10**9, MAX_REQUEST + 1, -1, -(2**31), 0, 3])
def test_a_bad_size_prefix_closes_the_connection_without_allocating(start_broker, size):
    process = start_broker(FUZZ_SETTINGS)
    before = rss(process)
    with connect_to(process) as c:
        c.send_raw(struct.pack(">i", size) + b"\x00\x12\x00\x00")
        assert c.closed_by_peer(timeout=REPLY_TIMEOUT)
    assert rss(process) - before < 20 * 1024 * 1024
    with connect_to(process) as c:
        assert c.call(ApiKey.API_VERSIONS, 2, {})["error_code"] == ErrorCode.NONE


def produce_of_exact_size(size: int, correlation_id: int) -> bytes:
    """A Produce v3 frame whose payload (after the size prefix) is exactly ``size`` bytes."""
    value_size = size
    for _ in range(5):
        records = make_batch([bytes(value_size)])
        request = encode_request(ApiKey.PRODUCE, 3, produce_body(FUZZ_TOPIC, 0, records), correlation_id)
        excess = len(request) - 4 - size
        if excess == 0:
            return request
        value_size -= excess
    raise AssertionError(f"cannot build a request of exactly {size} bytes")


def test_a_request_of_exactly_the_size_limit_is_served(start_broker):
    process = start_broker(FUZZ_SETTINGS)
    with connect_to(process) as c:
        c.call(ApiKey.METADATA, 1, {"topics": [{"name": FUZZ_TOPIC}]})
        c.send_raw(produce_of_exact_size(MAX_REQUEST, 7))
        reply = c.recv_response(ApiKey.PRODUCE, 3, 7)
        assert reply["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    with connect_to(process) as c:
        c.send_raw(produce_of_exact_size(MAX_REQUEST + 1, 8))
        assert c.closed_by_peer(timeout=REPLY_TIMEOUT)


def test_truncated_frames_followed_by_a_close_leave_the_broker_serving(start_broker):
    process = start_broker(FUZZ_SETTINGS)
    whole = encode_request(ApiKey.METADATA, 1, {"topics": [{"name": FUZZ_TOPIC}]}, 1)
    for cut in range(1, len(whole)):
        with connect_to(process) as c:
            c.send_raw(whole[:cut])
            c.sock.shutdown(socket.SHUT_WR)
            assert c.closed_by_peer(timeout=REPLY_TIMEOUT), f"cut at {cut}"
    with connect_to(process) as c:
        c.send_raw(whole[:10])  # then a plain close, without waiting
    with connect_to(process) as c:
        assert c.call(ApiKey.METADATA, 1, {"topics": None})["controller_id"] == 0


def test_a_slow_request_split_across_many_writes_is_answered(start_broker):
    process = start_broker(FUZZ_SETTINGS)
    request = encode_request(ApiKey.METADATA, 8, {"topics": None, "allow_auto_topic_creation": False}, 42)
    with connect_to(process) as slow, connect_to(process) as fast:
        for i, byte in enumerate(request):
            slow.send_raw(bytes([byte]))
            if i % 10 == 0:  # other clients are served while the slow one dribbles
                assert fast.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
            time.sleep(0.002)
        assert slow.recv_response(ApiKey.METADATA, 8, 42)["controller_id"] == 0


HUGE_NAME = "g" * 32767  # the longest STRING: legal on the wire, far too long for a topic
DUPLICATED = {"name": HUGE_NAME, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}


@pytest.mark.parametrize(
    "api_key, version, body, expected",
    [
        (ApiKey.PRODUCE, 3, produce_body(HUGE_NAME, 0, make_batch([b"x"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (ApiKey.PRODUCE, 8, produce_body(HUGE_NAME, 0, make_batch([b"x"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (ApiKey.CREATE_TOPICS, 0, {"topics": [DUPLICATED, DUPLICATED], "timeout_ms": 1000}, ErrorCode.INVALID_REQUEST),
        (
            ApiKey.CREATE_TOPICS,
            1,
            {"topics": [DUPLICATED, DUPLICATED], "timeout_ms": 1000, "validate_only": False},
            ErrorCode.INVALID_REQUEST,
        ),
    ],
    ids=["produce-v3", "produce-v8", "create-topics-v0", "create-topics-v1"],
)
def test_requests_naming_a_huge_topic_are_answered(start_broker, api_key, version, body, expected):
    """Kafka answers these with an error code (its error messages stay short, or are null)."""
    process = start_broker(FUZZ_SETTINGS)
    with connect_to(process) as c:
        result = c.call(api_key, version, body)
        entries = result["responses"][0]["partitions"] if api_key == ApiKey.PRODUCE else result["topics"]
        assert entries[0]["error_code"] == expected


def test_a_huge_partition_count_is_refused_promptly(start_broker):
    """Kafka's controller refuses a request creating more than 10000 partitions (POLICY_VIOLATION)
    at once; here, the request must at least be answered quickly while others are served."""
    process = start_broker(FUZZ_SETTINGS)
    body = {
        "topics": [
            {"name": "enormous", "num_partitions": 2**31 - 1, "replication_factor": 1, "assignments": [], "configs": []}
        ],
        "timeout_ms": 1000,
        "validate_only": False,
    }
    with connect_to(process) as c, connect_to(process) as other:
        correlation_id = c.send_request(ApiKey.CREATE_TOPICS, 4, body)
        start = time.monotonic()
        try:
            answer = other.call(ApiKey.API_VERSIONS, 0, {}, timeout=5)
        except TimeoutError:
            answer = None
        assert answer is not None, f"the broker stopped serving others for {time.monotonic() - start:.1f}s+"
        result = c.recv_response(ApiKey.CREATE_TOPICS, 4, correlation_id, timeout=5)
        assert result["topics"][0]["error_code"] != ErrorCode.NONE
    assert process.stop() == 0
    restarted = start_broker(FUZZ_SETTINGS, log_dir=process.log_dir)  # nothing half-created blocks a restart
    with connect_to(restarted) as c:
        assert c.call(ApiKey.METADATA, 1, {"topics": None})["topics"] == []


def legacy_gzip_wrapper(compressed: bytes) -> bytes:
    """One magic-1 message set entry whose (gzip) value is ``compressed``."""
    message = (
        struct.pack(">bbq", 1, Codec.GZIP, BASE_TIME)
        + struct.pack(">i", -1)
        + struct.pack(">i", len(compressed))
        + compressed
    )
    crc = zlib.crc32(message) & 0xFFFFFFFF
    return struct.pack(">qi", 0, 4 + len(message)) + struct.pack(">I", crc) + message


def test_a_legacy_gzip_bomb_does_not_balloon_the_broker(start_broker):
    """256 MiB of zeros in 256 concatenated gzip members (about 260 KB on the wire)."""
    process = start_broker(FUZZ_SETTINGS)
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one_mib = member.compress(bytes(1 << 20)) + member.flush()
    bomb = legacy_gzip_wrapper(one_mib * 256)
    assert len(bomb) < MAX_REQUEST // 2
    with connect_to(process) as c:
        c.call(ApiKey.METADATA, 1, {"topics": [{"name": FUZZ_TOPIC}]})
        before = rss(process)
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                try:
                    peak[0] = max(peak[0], rss(process))
                except psutil.Error:
                    return
                time.sleep(0.005)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            c.send_request(ApiKey.PRODUCE, 3, produce_body(FUZZ_TOPIC, 0, bomb))
            data = c.recv_frame(timeout=30)
        finally:
            done.set()
            sampler.join(5)
    assert process.running
    growth = peak[0] - before
    if data is not None:
        _, result = decode_response(data, ApiKey.PRODUCE, 3)
        assert result["responses"][0]["partitions"][0]["error_code"] != ErrorCode.NONE
    assert growth < RSS_GROWTH_LIMIT, f"a {len(bomb)}-byte produce made the broker grow by {growth / 2**20:.0f} MiB"


def test_a_batch_with_a_correct_crc_but_undecodable_records_is_refused(start_broker):
    """Kafka refuses such a batch at produce time (INVALID_RECORD): nothing is stored, and a
    lookup by timestamp finds nothing rather than an error."""
    process = start_broker(FUZZ_SETTINGS)
    good = make_batch([b"value"])
    bad = bytearray(good)
    bad[batch.HEADER_SIZE :] = b"\xff" * (len(good) - batch.HEADER_SIZE)
    struct.pack_into(">I", bad, 17, batch.compute_crc(bad))
    with connect_to(process) as c:
        c.call(ApiKey.METADATA, 1, {"topics": [{"name": FUZZ_TOPIC}]})
        result = c.call(ApiKey.PRODUCE, 3, produce_body(FUZZ_TOPIC, 0, bytes(bad)))
        assert result["responses"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_RECORD
        reply = c.call(ApiKey.LIST_OFFSETS, 1, list_offsets_body(FUZZ_TOPIC, 0, BASE_TIME))
        assert reply["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        assert reply["topics"][0]["partitions"][0]["offset"] == -1


def test_a_lookup_by_timestamp_over_records_damaged_on_disk_is_an_error_answer(start_broker):
    """Records garbled behind a valid CRC on disk: ListOffsets by timestamp, which decodes the
    batch, answers CORRUPT_MESSAGE; earliest/latest and other partitions are still served."""
    process = start_broker(FUZZ_SETTINGS)
    with connect_to(process) as c:
        c.call(ApiKey.METADATA, 1, {"topics": [{"name": FUZZ_TOPIC}]})
        for partition in (0, 1):
            assert (
                c.call(ApiKey.PRODUCE, 3, produce_body(FUZZ_TOPIC, partition, make_batch([b"value"])))["responses"][0][
                    "partitions"
                ][0]["error_code"]
                == ErrorCode.NONE
            )
        garble_first_record(process.log_dir, FUZZ_TOPIC, 0)
        answers = {
            (p, t): c.call(ApiKey.LIST_OFFSETS, 1, list_offsets_body(FUZZ_TOPIC, p, t))["topics"][0]["partitions"][0]
            for p in (0, 1)
            for t in (BASE_TIME, -1)
        }
        assert answers[0, BASE_TIME]["error_code"] == ErrorCode.CORRUPT_MESSAGE
        assert (answers[0, -1]["error_code"], answers[0, -1]["offset"]) == (ErrorCode.NONE, 1)
        assert (answers[1, BASE_TIME]["error_code"], answers[1, BASE_TIME]["offset"]) == (ErrorCode.NONE, 0)
