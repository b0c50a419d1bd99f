"""Transient failures, for real: our broker SIGKILLed under a client that holds connections and
restarted on the same port; a broker that accepts connections but never answers (a listening
socket, and our broker frozen with SIGSTOP). Every wait is bounded by the client's ``timeout``."""

import concurrent.futures
import logging
import os
import signal

import pytest

from broker.client import EARLIEST, LATEST, BrokerConnection, BrokerConnectionError, KafkaClient, KafkaError
from broker.records.record_set import iter_user_records

from ..waiting import wait_for
from .fake_servers import SilentListener
from .support import Msg, expected_by_partition, produce, read_partition, topic_for

SETTINGS = {"num.partitions": "2"}


@pytest.fixture
def loaded(start_broker, request):
    """A broker of its own (it gets killed), with 6 records on each of 2 partitions."""
    process = start_broker(SETTINGS)
    topic = topic_for(request)
    groups = [[Msg(p, b"k%d" % i, b"v%d-%d" % (p, i), (), 1_700_000_000_000 + i) for p in (0, 1) for i in range(6)]]
    return process, topic, expected_by_partition(produce(process.bootstrap, topic, groups))


def _restart(start_broker, process):
    return start_broker(process.settings, log_dir=process.log_dir, port=process.port)


def _holding_connections(client, topic):
    assert client.list_offsets({(topic, 0): LATEST, (topic, 1): LATEST}) == {(topic, 0): (6, -1), (topic, 1): (6, -1)}
    assert client._connections, "the client should keep its connection to the leader"


def test_fetch_after_kill_and_restart_reconnects(loaded, start_broker):
    process, topic, expected = loaded
    with KafkaClient(process.bootstrap, timeout=5, retries=3, retry_backoff_ms=50) as client:
        _holding_connections(client, topic)
        process.kill()
        restarted = _restart(start_broker, process)
        assert restarted.port == process.port
        assert read_partition(client, topic, 0) == expected[0]
        assert client.list_offsets({(topic, 1): EARLIEST, (topic, 0): LATEST}) == {
            (topic, 1): (0, -1),
            (topic, 0): (6, -1),
        }


def test_list_offsets_after_kill_and_restart_reconnects(loaded, start_broker):
    process, topic, _ = loaded
    with KafkaClient(process.bootstrap, timeout=5, retries=3, retry_backoff_ms=50) as client:
        _holding_connections(client, topic)
        process.kill()
        _restart(start_broker, process)
        assert client.list_offsets({(topic, 0): LATEST}) == {(topic, 0): (6, -1)}


def test_broker_back_within_the_retry_window(loaded, start_broker, caplog):
    """The broker is down when the fetch starts and comes back once the fetch failed and is retrying."""
    process, topic, expected = loaded
    caplog.set_level(logging.INFO, logger="broker.client")

    def restart_once_retrying():
        wait_for(lambda: any("retrying" in r.getMessage() for r in caplog.records), what="the fetch retrying")
        return _restart(start_broker, process)

    with (
        KafkaClient(process.bootstrap, timeout=5, retries=6, retry_backoff_ms=200) as client,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        _holding_connections(client, topic)
        process.kill()
        restarting = pool.submit(restart_once_retrying)
        result = client.fetch(topic, 1, 0, 1 << 16)
        restarting.result(timeout=30)  # so the fetch failed while the broker was down, and then succeeded
    assert [r for _, r in iter_user_records(result.records)] == expected[1]


def test_without_retries_a_dead_connection_is_an_error_naming_the_attempts(loaded, start_broker):
    process, topic, expected = loaded
    with KafkaClient(process.bootstrap, timeout=5, retries=0) as client:
        _holding_connections(client, topic)
        process.kill()
        _restart(start_broker, process)
        with pytest.raises(KafkaError, match=r"fetch .*-0@0 failed after 1 attempts?: FETCH to 127\.0\.0\.1:\d+"):
            client.fetch(topic, 0, 0, 1 << 16)
        # the dead connection was dropped: the next call reconnects
        assert read_partition(client, topic, 0) == expected[0]


def test_without_retries_a_dead_broker_is_an_error(loaded):
    process, topic, _ = loaded
    with KafkaClient(process.bootstrap, timeout=5, retries=0) as client:
        _holding_connections(client, topic)
        process.kill()
        with pytest.raises(KafkaError, match="after 1 attempt"):
            client.list_offsets({(topic, 0): LATEST})
        with pytest.raises(KafkaError, match=f"after 1 attempt.*127.0.0.1:{process.port}"):
            client.fetch(topic, 0, 0, 1 << 16)


def test_retries_run_out_while_the_broker_stays_down(loaded):
    process, topic, _ = loaded
    with KafkaClient(process.bootstrap, timeout=5, retries=2, retry_backoff_ms=20) as client:
        _holding_connections(client, topic)
        process.kill()
        with pytest.raises(KafkaError, match=f"after 3 attempts.*127.0.0.1:{process.port}"):
            client.fetch(topic, 0, 0, 1 << 16)


# -- a broker that never answers -----------------------------------------------------------


def test_connection_to_a_silent_listener_times_out():
    with SilentListener() as silent:
        with pytest.raises(BrokerConnectionError, match=f"API_VERSIONS to {silent.bootstrap} failed: timed out"):
            BrokerConnection("127.0.0.1", silent.port, timeout=0.5)
        assert silent.frames_received == 1


@pytest.mark.parametrize("retries", [0, 1])
def test_client_against_a_silent_listener_gives_up_after_its_timeout(retries):
    with SilentListener() as silent:
        with KafkaClient(silent.bootstrap, timeout=0.5, retries=retries, retry_backoff_ms=10) as client:
            with pytest.raises(KafkaError, match=silent.bootstrap) as info:
                client.partitions_of("t")
        assert silent.connections_accepted == retries + 1
    assert f"after {retries + 1} attempt" in str(info.value) and "timed out" in str(info.value)


def test_a_frozen_broker_times_out_instead_of_hanging(loaded):
    """SIGSTOP: the kernel still accepts and buffers, nothing answers; then SIGCONT, and it works again."""
    process, topic, expected = loaded
    with KafkaClient(process.bootstrap, timeout=1.0, retries=0) as client:
        _holding_connections(client, topic)
        os.kill(process.pid(), signal.SIGSTOP)
        try:
            with pytest.raises(KafkaError, match="timed out"):
                client.fetch(topic, 0, 0, 1 << 16)
        finally:
            os.kill(process.pid(), signal.SIGCONT)
        assert read_partition(client, topic, 0) == expected[0]
