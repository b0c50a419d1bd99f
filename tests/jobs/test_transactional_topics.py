"""Readers of a topic written with transactions, against the real broker (no fake): committed and
aborted transactions interleaved with plain writes on one partition, one transaction left open.

* A Spark batch read under read_committed returns exactly the committed records below the last
  stable offset, each with its own offset; under read_uncommitted every data record, never a marker.
* A stream's latest offset is the last stable offset under read_committed.
* ``kafkalog load`` (read_committed by default) writes exactly the committed records, and
  ``kafkalog consume --isolation-level read_committed`` prints them.
* Once the open transaction commits, the next load run takes its records and what follows.
"""

import pytest

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record
from spark_kafka_source.options import parse
from spark_kafka_source.streaming import KafkaLogStreamReader
from tests.cli.support import kafkalog
from tests.server.wire import connect_to, create_topics_body, produce_body
from tests.spark.feed import load, rows
from tests.transactions import RawTransaction, write_txn_marker

from .loads import load_args, ok, output_rows, run_load

pytestmark = pytest.mark.timeout(300)

TOPIC = "txn-e2e"


class Written:
    """What the partition holds: every data record's (offset, value), the committed ones, and the
    open transaction."""

    def __init__(self) -> None:
        self.all: list[tuple[int, bytes]] = []
        self.committed: list[tuple[int, bytes]] = []
        self.open: RawTransaction | None = None
        self.open_records: list[tuple[int, bytes]] = []


def _plain(client, values: list[bytes], written: Written) -> None:
    records = [Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)]
    reply = client.call(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, batch.build(records)))
    base = reply["responses"][0]["partitions"][0]["base_offset"]
    pairs = [(base + i, v) for i, v in enumerate(values)]
    written.all += pairs
    written.committed += pairs


def _in_transaction(transaction: RawTransaction, values: list[bytes], pending: list) -> None:
    base = transaction.send(values)
    pending += [(base + i, v) for i, v in enumerate(values)]


@pytest.fixture(scope="module")
def written(broker) -> Written:
    """p = plain, a = committed, b = aborted, c = committed while d (aborted) interleaves, e = open."""
    result = Written()
    with connect_to(broker) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC, 1))["topics"][0]["error_code"] == 0
        _plain(client, [b"p0", b"p1"], result)
        for name, commit in ((b"a", True), (b"b", False)):
            transaction, pending = RawTransaction(client, TOPIC, 0), []
            _in_transaction(transaction, [name + b"0", name + b"1"], pending)
            assert transaction.end(commit) == ErrorCode.NONE
            result.all += pending
            result.committed += pending if commit else []
        c, d = RawTransaction(client, TOPIC, 0), RawTransaction(client, TOPIC, 0)
        c_pending: list = []
        d_pending: list = []
        _in_transaction(c, [b"c0"], c_pending)
        _in_transaction(d, [b"d0"], d_pending)
        _plain(client, [b"p2"], result)
        _in_transaction(c, [b"c1"], c_pending)
        assert d.end(commit=False) == ErrorCode.NONE
        assert c.end(commit=True) == ErrorCode.NONE
        result.all = sorted(result.all + c_pending + d_pending)
        result.committed = sorted(result.committed + c_pending)
        result.open = RawTransaction(client, TOPIC, 0)
        _in_transaction(result.open, [b"e0", b"e1"], result.open_records)
        result.all = sorted(result.all + result.open_records)
        _plain(client, [b"p3"], result)  # after the open transaction's start: above the LSO
        result.all = sorted(result.all)
    return result


def _lso(written: Written) -> int:
    return written.open_records[0][0]


def _read(spark, broker, **options) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value) for r in rows(load(spark, f"127.0.0.1:{broker.port}", subscribe=TOPIC, **options))]


def test_spark_reads_exactly_the_committed_records_below_the_last_stable_offset(spark, broker, written):
    committed = [(o, v) for o, v in written.committed if o < _lso(written)]
    assert [v for _, v in committed] == [b"p0", b"p1", b"a0", b"a1", b"c0", b"p2", b"c1"]
    assert _read(spark, broker, **{"kafka.isolation.level": "read_committed"}) == committed
    assert _read(spark, broker) == written.all  # read_uncommitted: aborted and open records too, no marker


def test_a_streams_latest_offset_is_the_last_stable_offset(broker, written):
    options = {"kafka.bootstrap.servers": f"127.0.0.1:{broker.port}", "subscribe": TOPIC}
    committed = KafkaLogStreamReader(parse({**options, "kafka.isolation.level": "read_committed"}, "stream"))
    assert committed.initialOffset() == {TOPIC: {"0": _lso(written)}}
    uncommitted = KafkaLogStreamReader(parse(options, "stream"))
    assert uncommitted.initialOffset() == {TOPIC: {"0": written.all[-1][0] + 1}}


def test_consume_read_committed_prints_the_committed_records(broker, written):
    done = kafkalog(
        "consume",
        TOPIC,
        "--bootstrap-server",
        f"127.0.0.1:{broker.port}",
        "--timeout",
        10,
        "--isolation-level",
        "read_committed",
    )
    assert done.returncode == 0, done.stderr
    printed = [
        (int(offset), value) for _, offset, _, _, value in (line.split("\t") for line in done.stdout.splitlines())
    ]
    assert printed == [(o, v.decode()) for o, v in written.committed if o < _lso(written)]


def test_a_load_takes_committed_records_then_the_transaction_once_it_commits(spark, broker, written, tmp_path):
    output = tmp_path / "out"
    args = load_args(f"127.0.0.1:{broker.port}", TOPIC, output, "--no-group-commit")
    ok(run_load(args, tmp_path))
    first = sorted((row.offset, row.value) for row in output_rows(output))
    assert first == [(o, v) for o, v in written.committed if o < _lso(written)]
    transaction = written.open
    assert transaction is not None
    with connect_to(broker) as client:  # the transaction's own connection closed with the fixture
        marker = write_txn_marker(client, TOPIC, 0, transaction.producer_id, transaction.producer_epoch, commit=True)
    assert marker == ErrorCode.NONE
    ok(run_load(args, tmp_path))
    everything = sorted((row.offset, row.value) for row in output_rows(output))
    assert everything == sorted(written.committed + written.open_records)  # each once, nothing aborted
