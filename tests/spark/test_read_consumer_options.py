"""The consumer options of Spark's Kafka source that concern how a task waits and who it says it
is: ``kafkaConsumer.pollTimeoutMs``, ``groupIdPrefix`` and ``kafka.group.id``, through Spark.

* ``kafkaConsumer.pollTimeoutMs`` is how long a task keeps fetching without getting a record while
  the partition's high watermark says there are records at its offset (reading.py): past it the
  task fails naming the partition, the offset and the timeout; a shorter stall is waited out. No
  real broker answers a fetch below its high watermark with nothing, so a ``FakeBroker`` (a real
  Kafka-protocol server in a thread, tests/client/fake_servers.py) serves the partition with its
  first fetch answers emptied. (A broker that does not answer at all is a different wait, the
  request timeout ``kafka.request.timeout.ms``; see test_read_errors.py.)
* ``groupIdPrefix`` and ``kafka.group.id`` are accepted and change nothing (docs/spark/batch.md: the
  source uses no consumer group): a broker whose advertised address is a recording proxy shows every
  request of the read, planning's and the tasks', with no group API, the default client id, and
  neither value anywhere on the wire.
"""

import pytest
from pyspark.errors import PythonException

from broker.protocol.apis import ApiKey
from broker.records import batch
from broker.records.batch import Record
from tests.client.fake_servers import FakeBroker

from .feed import CREATE_TIME, Rec, assert_rows, create_topic, load, messages, produce, rows, without_headers
from .proxy import RecordingProxy

pytestmark = pytest.mark.timeout(150)

STALL_TOPIC = "stall"


class StallingBroker(FakeBroker):
    """A FakeBroker whose first ``stalled`` fetch answers (all of them with None) carry no records,
    while the high watermark still says the records are there."""

    def __init__(self, topic: str, batches: list[bytes], stalled: int | None):
        super().__init__(topic, batches, truncate=False)
        self.stalled = stalled
        self.empty_answers = 0

    def _fetch(self, body: dict, version: int) -> dict:
        answer = super()._fetch(body, version)
        if self.stalled is None or self.empty_answers < self.stalled:
            self.empty_answers += 1
            answer["responses"][0]["partitions"][0]["records"] = b""
        return answer


@pytest.fixture(scope="module")
def stall_log():
    """Two batches, offsets [0, 6) and [6, 10); and the rows Spark should read from them."""
    records = [Record(i, 1_700_000_000_000 + 1000 * i, b"k%d" % i, b"v%d" % i) for i in range(10)]
    batches = [batch.build(records[:6]), batch.build(records[6:], base_offset=6)]
    expected = [Rec(STALL_TOPIC, 0, r.offset, r.key, r.value, r.timestamp, CREATE_TIME, None) for r in records]
    return batches, expected


def test_a_fetch_stalled_longer_than_poll_timeout_fails_the_task_naming_it(spark, stall_log):
    batches, _ = stall_log
    with StallingBroker(STALL_TOPIC, batches, stalled=None) as fake:
        df = load(spark, fake.bootstrap, subscribe=STALL_TOPIC, **{"kafkaConsumer.pollTimeoutMs": "1500"})
        assert df.rdd.getNumPartitions() == 1
        with pytest.raises(PythonException) as raised:
            df.collect()
        fetches = fake.empty_answers
    message = str(raised.value)
    assert (
        f"{STALL_TOPIC}-0: no record could be fetched at offset 0 within kafkaConsumer.pollTimeoutMs (1500 ms)"
    ) in message, message[-1500:]
    assert fetches >= 2, "the task gave up at the first empty answer instead of waiting for the timeout"


def test_a_stall_shorter_than_poll_timeout_is_waited_out(spark, stall_log):
    batches, expected = stall_log
    with StallingBroker(STALL_TOPIC, batches, stalled=5) as fake:
        df = load(spark, fake.bootstrap, subscribe=STALL_TOPIC, **{"kafkaConsumer.pollTimeoutMs": "60000"})
        assert_rows(rows(df), expected)
        assert fake.empty_answers == 5


# -- groupIdPrefix and kafka.group.id --------------------------------------------------------------

# a read asks for versions, metadata, offsets and records; a consumer group would add OffsetCommit (8),
# OffsetFetch (9), FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14)
READ_APIS = {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.LIST_OFFSETS, ApiKey.FETCH}


def test_group_id_prefix_and_group_id_are_accepted_and_sent_nowhere(spark, start_broker):
    with RecordingProxy() as proxy:
        broker = start_broker({"num.partitions": "3", "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
        proxy.target = ("127.0.0.1", broker.port)
        topic = "consumer-groups"
        create_topic(broker.bootstrap, topic, 3)
        produced = produce(broker.bootstrap, topic, messages(9, partitions=(0, 1, 2), tag="grp"))
        proxy.take()  # the producer's and admin's requests
        df = load(
            spark,
            f"127.0.0.1:{proxy.port}",
            {"groupIdPrefix": "grp-prefix-marker", "kafka.group.id": "grp-id-marker"},
            subscribe=topic,
        )
        assert_rows(rows(df), without_headers(produced))
        seen = proxy.take()
    keys = {api_key for api_key, _, _ in seen}
    # planning's requests and every task's went through the proxy (bootstrap and advertised address)
    assert {ApiKey.METADATA, ApiKey.LIST_OFFSETS, ApiKey.FETCH} <= keys, keys
    assert sum(1 for api_key, _, _ in seen if api_key == ApiKey.FETCH) >= 3
    assert keys <= READ_APIS, keys - READ_APIS
    assert {client_id for _, client_id, _ in seen} == {"kafkalog-spark"}  # the default client.id, unchanged
    wire = b"".join(frame for _, _, frame in seen)
    assert b"grp-prefix-marker" not in wire and b"grp-id-marker" not in wire
