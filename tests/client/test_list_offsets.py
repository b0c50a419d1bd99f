"""ListOffsets: earliest, latest, and by timestamp (exact on our broker; librdkafka's mock does not
implement timestamp lookups and answers -1)."""

import pytest

from broker.client import EARLIEST, LATEST, KafkaClient

from .support import Msg, produce, topic_for

BASE = 1_650_000_000_000
STEP = 10  # ms between consecutive records' timestamps


def _produce_timed(bootstrap, topic, counts: dict[int, int], batch: int = 4):
    """``counts[p]`` records on partition ``p`` with timestamps BASE + STEP*i, in batches of ``batch``."""
    groups: dict[int, list] = {}
    for p, n in counts.items():
        for i in range(n):
            groups.setdefault(i // batch, []).append(Msg(p, b"k%d" % i, b"v%d" % i, (), BASE + STEP * i))
    return produce(bootstrap, topic, [groups[g] for g in sorted(groups)])


def test_earliest_and_latest(cluster, request):
    topic = topic_for(request)
    counts = {0: 9, 1: 3, 2: 0, 3: 1}
    _produce_timed(cluster.bootstrap, topic, {p: n for p, n in counts.items() if n})
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        latest = client.list_offsets({(topic, p): LATEST for p in counts})
        earliest = client.list_offsets({(topic, p): EARLIEST for p in counts})
    assert {k: v[0] for k, v in latest.items()} == {(topic, p): n for p, n in counts.items()}
    assert {k: v[0] for k, v in earliest.items()} == {(topic, p): 0 for p in counts}


def test_empty_request_gives_an_empty_answer(cluster):
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        assert client.list_offsets({}) == {}


def test_by_timestamp_on_our_broker(broker, request):
    topic = topic_for(request)
    produced = _produce_timed(broker.bootstrap, topic, {0: 12, 1: 5})
    offsets = {(p, r.timestamp): r.offset for p, r in produced}
    assert offsets[(0, BASE)] == 0 and offsets[(0, BASE + STEP * 11)] == 11
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        for partition, count in ((0, 12), (1, 5)):
            # every record's own timestamp finds it exactly
            for i in range(count):
                found = client.list_offsets({(topic, partition): BASE + STEP * i})
                assert found == {(topic, partition): (i, BASE + STEP * i)}
            # between two records: the later one
            assert client.list_offsets({(topic, partition): BASE + STEP * 2 + 1}) == {
                (topic, partition): (3, BASE + STEP * 3)
            }
            # before the first: the first record
            for before in (0, BASE - 1):
                assert client.list_offsets({(topic, partition): before}) == {(topic, partition): (0, BASE)}
            # after the last: none
            assert client.list_offsets({(topic, partition): BASE + STEP * (count - 1) + 1}) == {
                (topic, partition): (-1, -1)
            }
        # several partitions and kinds in one call
        assert client.list_offsets({(topic, 0): BASE + STEP * 7, (topic, 1): LATEST, (topic, 2): EARLIEST}) == {
            (topic, 0): (7, BASE + STEP * 7),
            (topic, 1): (5, -1),
            (topic, 2): (0, -1),
        }


@pytest.mark.parametrize("timestamp", [0, BASE, BASE + STEP, BASE + 10**9])
def test_by_timestamp_on_the_mock_answers_minus_one(mock_cluster, request, timestamp):
    topic = topic_for(request)
    _produce_timed(mock_cluster.bootstrap, topic, {0: 4, 1: 4})
    with KafkaClient(mock_cluster.bootstrap, timeout=10) as client:
        assert client.list_offsets({(topic, 0): timestamp, (topic, 1): timestamp}) == {
            (topic, 0): (-1, -1),
            (topic, 1): (-1, -1),
        }
