"""SIGTERM ends the broker promptly and quietly, whatever its clients are doing.

Clients that never read their (large, pipelined) fetch responses, idle connections, a client in
the middle of a frame and a long-polling fetch are all connected when SIGTERM arrives: the
long poll is answered, the rest are closed, the broker exits 0 long before its 30 s grace period
for handlers would end (before: it waited all of it for the non-reading clients), writes its
clean-shutdown marker, and logs one line about the abandoned responses instead of a traceback
per connection.
"""

import os

import pytest

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode

from ..waiting import wait_for
from .test_memory_bound import fill, hostile_fetch
from .wire import SIZE, connect_to, create_topics_body, fetch_body

TIMEOUT = 30
EXIT_BOUND = 10  # seconds: a third of the grace period the broker used to wait


@pytest.mark.timeout(120)
def test_sigterm_with_clients_that_do_not_read_exits_at_once_with_one_line(start_broker):
    broker = start_broker()
    with connect_to(broker, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("busy", 20))["topics"][0]["error_code"] == 0
        fill(client, "busy", 20, batches=2)
        idle = [connect_to(broker, TIMEOUT) for _ in range(50)]
        hoarders = [connect_to(broker, TIMEOUT) for _ in range(3)]
        half_sent = connect_to(broker, TIMEOUT)
        try:
            for connection in hoarders:
                for _ in range(3):
                    connection.send_request(ApiKey.FETCH, 11, hostile_fetch("busy", 20, mentions=1))
            half_sent.send_raw(SIZE.pack(1000) + b"\0" * 10)
            long_poll = client.send_request(
                ApiKey.FETCH, 11, fetch_body([("busy", 0, 2)], max_wait_ms=60_000, min_bytes=1)
            )
            for connection in hoarders:
                wait_for(connection.pending_bytes, timeout=TIMEOUT, what="a response being sent")

            broker.process.send_signal(15)
            answered = client.recv_response(ApiKey.FETCH, 11, long_poll)
            assert answered["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
            assert broker.process.wait(EXIT_BOUND) == 0
        finally:
            for connection in idle + hoarders + [half_sent]:
                connection.close()
    log_text = open(broker.stderr_path, encoding="utf-8").read()
    assert "Traceback" not in log_text and "CancelledError" not in log_text, log_text
    assert log_text.count("abandoned the responses to 3 connection(s) that were not reading") == 1, log_text
    assert "stopped cleanly" in log_text
    assert os.path.exists(os.path.join(broker.log_dir, ".kafka_cleanshutdown"))
