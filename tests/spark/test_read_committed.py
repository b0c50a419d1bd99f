"""``kafka.isolation.level`` through Spark and the stream reader, against a partition written by
committing and aborting transactional producers interleaved with plain ones, with one transaction
still open (tests/records/transactional_logs.py's example).

The partition is served by the ``FakeBroker`` (a real Kafka-protocol server in a thread,
tests/client/fake_servers.py) answering as Kafka does, so random logs can cover more than a real
producer writes (tests/jobs/test_transactional_topics.py reads the real broker): under
read_committed, LATEST is the last stable offset, fetches stop below it and list the aborted
transactions among their records.

* A batch read under read_committed returns exactly the committed records below the last stable
  offset, each with its real offset (gaps where markers and aborted records are), also when the
  range is cut into tasks of which some hold only markers and aborted records (they read nothing
  and do not fail); under read_uncommitted (Spark's default) every data record below the high
  watermark, never a marker.
* A stream's latest offset is the last stable offset under read_committed, the high watermark under
  read_uncommitted.
"""

import pytest

from spark_kafka_source.options import parse
from spark_kafka_source.streaming import KafkaLogStreamReader
from tests.records.transactional_logs import EXAMPLE_EVENTS, build_log, serving

from .feed import load, rows

pytestmark = pytest.mark.timeout(150)

TOPIC = "txn"
LOG = build_log(EXAMPLE_EVENTS)
END = LOG.batches[-1][2] + 1  # the high watermark; LOG.open_from is the last stable offset


@pytest.fixture(scope="module")
def fake():
    with serving(TOPIC, LOG) as server:
        yield server


def _read(spark, bootstrap: str, **options) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value) for r in rows(load(spark, bootstrap, subscribe=TOPIC, **options))]


def _expected(offsets: list[int]) -> list[tuple[int, bytes]]:
    return [(o, b"v%d" % o) for o in offsets]


def test_read_committed_reads_the_committed_records_below_the_last_stable_offset(spark, fake):
    assert LOG.aborted and LOG.open_from < END  # aborted transactions, and one still open
    assert _read(spark, fake.bootstrap, **{"kafka.isolation.level": "read_committed"}) == _expected(LOG.committed)


def test_tasks_holding_only_markers_and_aborted_records_read_nothing(spark, fake):
    df = load(spark, fake.bootstrap, subscribe=TOPIC, minPartitions="6", **{"kafka.isolation.level": "read_committed"})
    assert df.rdd.getNumPartitions() == 6  # [0, 18) in threes: [6, 9) aborted only, [9, 12) markers only
    assert [(r.offset, r.value) for r in rows(df)] == _expected(LOG.committed)


def test_read_uncommitted_is_the_default_and_reads_every_data_record(spark, fake):
    assert _read(spark, fake.bootstrap) == _expected(LOG.all_data)
    assert _read(spark, fake.bootstrap, **{"kafka.isolation.level": "read_uncommitted"}) == _expected(LOG.all_data)


@pytest.mark.parametrize(("level", "latest"), [("read_committed", LOG.open_from), ("read_uncommitted", END)])
def test_a_streams_latest_offset_follows_the_isolation_level(fake, level, latest):
    options = {"kafka.bootstrap.servers": fake.bootstrap, "subscribe": TOPIC, "kafka.isolation.level": level}
    reader = KafkaLogStreamReader(parse(options, "stream"))
    assert reader.initialOffset() == {TOPIC: {"0": latest}}
