"""Requests that name one partition (or topic) more than once, answered as Kafka answers them, against
a real broker process: Produce appends the last mention once and answers once (it used to append
every mention under one acknowledgement), ListOffsets refuses every mention (INVALID_REQUEST),
DeleteTopics refuses a name given twice and keeps the topic (it used to delete it and then say the
second mention's topic did not exist), and Metadata answers a topic named twice once."""

import uuid

from broker.common.offsets import LATEST
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from broker.records.batch import Record

from .wire import connect_to, create_topics_body, fetch_body, list_offsets_body


def new_topic(client, partitions: int = 2) -> str:
    name = f"repeated-{uuid.uuid4().hex[:8]}"
    result = client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(name, partitions))
    assert result["topics"][0]["error_code"] == ErrorCode.NONE, result
    return name


def make_batch(*values: bytes, **kwargs) -> bytes:
    return batch.build([Record(i, 1_700_000_000_000 + i, None, v) for i, v in enumerate(values)], **kwargs)


def stored_values(client, topic: str, partition: int) -> list[bytes]:
    result = client.call(ApiKey.FETCH, 11, fetch_body([(topic, partition, 0)]))
    records = result["responses"][0]["partitions"][0]["records"]
    return [record.value for _, record in record_set.iter_user_records(bytes(records))]


def produce_request(topics: list[tuple[str, list[tuple[int, bytes]]]]) -> dict:
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topics": [
            {"name": name, "partitions": [{"index": index, "records": records} for index, records in partitions]}
            for name, partitions in topics
        ],
    }


def test_a_partition_named_twice_in_a_produce_is_appended_once_with_its_last_mention(broker):
    with connect_to(broker) as client:
        topic = new_topic(client)
        request = produce_request(
            [
                (topic, [(0, make_batch(b"first")), (1, make_batch(b"other")), (0, make_batch(b"second", b"third"))]),
                (topic, [(1, make_batch(b"other again"))]),
            ]
        )
        [answer] = client.call(ApiKey.PRODUCE, 8, request)["responses"]
        assert answer["name"] == topic
        assert [(p["index"], p["error_code"], p["base_offset"]) for p in answer["partitions"]] == [
            (0, ErrorCode.NONE, 0),
            (1, ErrorCode.NONE, 0),
        ]
        assert stored_values(client, topic, 0) == [b"second", b"third"]
        assert stored_values(client, topic, 1) == [b"other again"]


def test_an_idempotent_batch_named_twice_is_stored_once(broker):
    with connect_to(broker) as client:
        topic = new_topic(client, partitions=1)
        ids = client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60_000})
        records = make_batch(
            b"once", producer_id=ids["producer_id"], producer_epoch=ids["producer_epoch"], base_sequence=0
        )
        [answer] = client.call(ApiKey.PRODUCE, 8, produce_request([(topic, [(0, records), (0, records)])]))["responses"]
        assert [(p["index"], p["error_code"]) for p in answer["partitions"]] == [(0, ErrorCode.NONE)]
        assert stored_values(client, topic, 0) == [b"once"]


def test_a_partition_named_twice_in_list_offsets_is_refused_at_every_mention(broker):
    with connect_to(broker) as client:
        topic = new_topic(client)
        request = list_offsets_body(topic, 0, LATEST)
        partitions = request["topics"][0]["partitions"]
        partitions += [dict(partitions[0], partition_index=1), dict(partitions[0])]
        [answer] = client.call(ApiKey.LIST_OFFSETS, 5, request)["topics"]
        assert [(p["partition_index"], p["error_code"]) for p in answer["partitions"]] == [
            (0, ErrorCode.INVALID_REQUEST),
            (1, ErrorCode.NONE),
            (0, ErrorCode.INVALID_REQUEST),
        ]


def test_a_topic_named_twice_in_delete_topics_is_refused_and_kept(broker):
    with connect_to(broker) as client:
        topic, other = new_topic(client), new_topic(client)
        result = client.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": [topic, other, topic], "timeout_ms": 5000})
        assert [(r["name"], r["error_code"]) for r in result["responses"]] == [
            (topic, ErrorCode.INVALID_REQUEST),
            (other, ErrorCode.NONE),
            (topic, ErrorCode.INVALID_REQUEST),
        ]
        metadata = client.call(
            ApiKey.METADATA, 4, {"topics": [{"name": topic}, {"name": other}], "allow_auto_topic_creation": False}
        )
        assert [(t["name"], t["error_code"]) for t in metadata["topics"]] == [
            (topic, ErrorCode.NONE),
            (other, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]


def test_a_topic_named_twice_in_metadata_is_answered_once(broker):
    """Kafka reads the names into a set: a small request naming a topic of many partitions a
    thousand times must not make a response a thousand times that topic's size."""
    with connect_to(broker) as client:
        topic, other = new_topic(client), new_topic(client)
        names = [{"name": topic}, {"name": other}] + [{"name": topic}] * 1000
        metadata = client.call(ApiKey.METADATA, 4, {"topics": names, "allow_auto_topic_creation": False})
        assert [(t["name"], len(t["partitions"])) for t in metadata["topics"]] == [(topic, 2), (other, 2)]
