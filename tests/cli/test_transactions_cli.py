"""``kafkalog transactions list|describe`` against a real broker, with a transaction left open by
the project's transactional producer, and an unknown id refused on one line."""

import json

from broker.client import KafkaClient, NewTopic
from broker.client.transactions import TransactionalProducer

from .support import kafkalog, one_line_error


def test_list_and_describe(broker, request):
    topic = f"txn-cli-{request.node.name}"[:60]
    with KafkaClient(broker.bootstrap) as client:
        client.create_topics([NewTopic(topic, 1)])
        producer = TransactionalProducer(client, "cli-open", timeout_ms=300_000)
        producer.init_transactions()
        producer.begin()
        producer.send(topic, 0, [(None, b"open")])

        listed = kafkalog("transactions", "list", "--bootstrap-server", broker.bootstrap, "--format", "json")
        assert listed.returncode == 0, listed.stderr
        rows = [json.loads(line) for line in listed.stdout.splitlines()]
        assert {
            "transactionalId": "cli-open",
            "producerId": producer.sequences.producer_id,
            "state": "Ongoing",
            "coordinator": 0,
        } in rows

        ongoing = kafkalog("transactions", "list", "--state", "Ongoing", "--bootstrap-server", broker.bootstrap)
        assert ongoing.returncode == 0 and "cli-open" in ongoing.stdout and "Ongoing" in ongoing.stdout

        described = kafkalog(
            "transactions", "describe", "--transactional-id", "cli-open", "--bootstrap-server", broker.bootstrap
        )
        assert described.returncode == 0, described.stderr
        header, row = described.stdout.splitlines()
        assert header.split() == [
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs",
            "TopicPartitions",
        ]
        assert row.split()[1:][:4] == ["cli-open", str(producer.sequences.producer_id), "0", "Ongoing"]
        assert row.split()[-1] == f"{topic}-0"
        producer.abort()

    unknown = kafkalog(
        "transactions", "describe", "--transactional-id", "nobody", "--bootstrap-server", broker.bootstrap
    )
    assert "TRANSACTIONAL_ID_NOT_FOUND" in one_line_error(unknown, 1, "kafkalog transactions describe: ")
    bad_state = kafkalog("transactions", "list", "--state", "Sleeping", "--bootstrap-server", broker.bootstrap)
    assert "Sleeping" in one_line_error(bad_state, 1, "kafkalog transactions list: ")
