"""Every client's consumer on transactional data the broker holds (transactions written by raw
requests, markers by WriteTxnMarkers): read_committed sees exactly the committed records and
skips the markers' offsets, read_uncommitted also the aborted ones, and an open transaction holds
read_committed consumers back."""

import pytest

from broker.protocol.apis import ApiKey

from ..server.test_wire_pitfalls import create_topics_body, make_batch, produce
from ..server.wire import connect
from ..transactions import RawTransaction, write_transaction
from .client_api import EARLIEST

ISOLATION_SETTING = {"confluent": "isolation.level", "kafka-python": "isolation_level", "aiokafka": "isolation_level"}


def _write(bootstrap: str, topic: str) -> tuple[list[bytes], list[bytes]]:
    """Plain records and committed and aborted transactions interleaved on partition 0; the
    values a read_committed and a read_uncommitted consumer must see."""
    host, _, port = bootstrap.rpartition(":")
    committed, everything = [], []
    with connect(host, int(port)) as wire:
        created = wire.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(topic, 1))
        assert created["topics"][0]["error_code"] == 0, created
        for round_ in range(3):
            plain = f"plain-{round_}".encode()
            assert produce(wire, topic, 0, make_batch([plain]))["error_code"] == 0
            kept = [f"kept-{round_}-{i}".encode() for i in range(2)]
            gone = [f"gone-{round_}-{i}".encode() for i in range(2)]
            write_transaction(bootstrap, topic, 0, kept, commit=True)
            write_transaction(bootstrap, topic, 0, gone, commit=False)
            committed += [plain, *kept]
            everything += [plain, *kept, *gone]
    return committed, everything


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_consumers_see_the_committed_records_or_all_of_them(broker, client, topic, isolation):
    committed, everything = _write(broker.bootstrap, topic)
    expected = committed if isolation == "read_committed" else everything
    native = {ISOLATION_SETTING[client.name]: isolation}
    got = client.consume(topic, {0: EARLIEST}, len(expected), **native)
    assert [r.value for r in got] == expected


def test_an_open_transaction_holds_read_committed_consumers(broker, client, topic):
    committed, _ = _write(broker.bootstrap, topic)
    host, _, port = broker.bootstrap.rpartition(":")
    with connect(host, int(port)) as wire:
        transaction = RawTransaction(wire, topic, 0)
        transaction.send([b"pending"])
        assert produce(wire, topic, 0, make_batch([b"after-pending"]))["error_code"] == 0
        native = {ISOLATION_SETTING[client.name]: "read_committed"}
        with client.consumer(**native) as consumer:
            consumer.assign(topic, {0: EARLIEST})
            assert [r.value for r in consumer.poll(len(committed), grace=1.0)] == committed
            assert transaction.end(commit=True) == 0
            assert [r.value for r in consumer.poll(2)] == [b"pending", b"after-pending"]
