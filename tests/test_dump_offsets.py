"""``kafkalog dump-log --offsets-decoder``: a real ``__consumer_offsets`` segment, written with
Kafka's key/value formats, printed as readable keys and values (text and JSON)."""

import json

from broker import cli
from broker.coordinator.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from broker.coordinator.offsets_json import record_json
from broker.coordinator.offsets_records import (
    GroupKey,
    GroupMember,
    GroupValue,
    OffsetKey,
    OffsetValue,
    encode_key,
    encode_value,
)
from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.records import batch
from broker.records.compression import Codec

from .log.util import BASE_TIME

MEMBER = GroupMember(
    "consumer-1-abc",
    None,
    "consumer-1",
    "/127.0.0.1",
    300_000,
    45_000,
    encode_subscription(Subscription(("events",))),
    encode_assignment(Assignment((("events", (0, 1)),))),
)
RECORDS = [
    (encode_key(OffsetKey("loads", "events", 0)), encode_value(OffsetValue(42, "run-7", BASE_TIME, 3))),
    (
        encode_key(OffsetKey("loads", "events", 1)),
        encode_value(OffsetValue(9, "", BASE_TIME, expire_timestamp=BASE_TIME + 1)),
    ),
    (
        encode_key(GroupKey("loads")),
        encode_value(GroupValue("consumer", 4, "range", MEMBER.member_id, BASE_TIME, (MEMBER,))),
    ),
    (encode_key(OffsetKey("loads", "events", 1)), None),  # a tombstone
    (b"not an offsets key", b"payload"),
]


def write_offsets_partition(tmp_path):
    log = PartitionLog.open(str(tmp_path / "__consumer_offsets-7"), LogConfig())
    log.append(
        batch.build(
            [batch.Record(i, BASE_TIME, key, value) for i, (key, value) in enumerate(RECORDS[:3])],
            compression=Codec.GZIP,
        )
    )
    log.append(batch.build([batch.Record(i, BASE_TIME, key, value) for i, (key, value) in enumerate(RECORDS[3:])]))
    log.close()
    return tmp_path / "__consumer_offsets-7"


def test_json_output_decodes_keys_values_members_and_tombstones(tmp_path, capsys):
    partition = write_offsets_partition(tmp_path)
    assert cli.main(["dump-log", "--json", "--offsets-decoder", str(partition)]) == 0
    records = [r for line in capsys.readouterr().out.splitlines() for r in json.loads(line).get("records", ())]
    assert [r["offset"] for r in records] == [0, 1, 2, 3, 4]
    assert records[0]["key"] == {"type": "1", "data": {"group": "loads", "topic": "events", "partition": 0}}
    assert records[0]["payload"] == {
        "version": "3",
        "data": {"offset": 42, "leaderEpoch": 3, "metadata": "run-7", "commitTimestamp": BASE_TIME},
    }
    assert records[1]["payload"] == {
        "version": "1",
        "data": {"offset": 9, "metadata": "", "commitTimestamp": BASE_TIME, "expireTimestamp": BASE_TIME + 1},
    }
    group = records[2]["payload"]["data"]
    assert records[2]["key"] == {"type": "2", "data": {"group": "loads"}}
    assert (group["protocolType"], group["generation"], group["leader"]) == ("consumer", 4, "consumer-1-abc")
    member = group["members"][0]
    assert member["subscription"]["topics"] == ["events"]
    assert member["assignment"]["assignedPartitions"] == [{"topic": "events", "partitions": [0, 1]}]
    assert records[3]["payload"] is None
    assert records[4]["key"] == "not an offsets key" and records[4]["payload"] == "payload"
    assert "key version 28271 is unknown" in records[4]["offsetsDecoderError"]


def test_text_output_is_one_line_per_record_with_json_key_and_payload(tmp_path, capsys):
    partition = write_offsets_partition(tmp_path)
    assert cli.main(["dump-log", "--offsets-decoder", str(partition)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(lines) == 5
    assert 'key: {"type": "1", "data": {"group": "loads", "topic": "events", "partition": 0}}' in lines[0]
    assert 'payload: {"version": "3", "data": {"offset": 42,' in lines[0]
    assert lines[3].endswith("payload: null headers: []")
    assert "offsetsDecoderError: __consumer_offsets key version 28271 is unknown" in lines[4]


def test_non_consumer_protocol_members_keep_their_bytes_as_base64():
    member = GroupMember("m", None, "c", "/h", 10, 10, b"\x01\x02", b"")
    _, value = record_json(
        encode_key(GroupKey("connect-cluster")),
        encode_value(GroupValue("connect", 1, "sessioned", "m", -1, (member,)), 2),
    )
    assert value["data"]["members"][0]["subscription"] == "AQI="
    assert "groupInstanceId" not in value["data"]["members"][0]  # v2 has no such field
