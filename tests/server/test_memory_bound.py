"""The broker's memory stays bounded whatever clients ask for and however slowly they read.

* A Fetch naming one partition 1,200 times is answered once for it, and no response is larger
  than the broker's ``fetch.max.bytes``, whatever ``max_bytes`` the request asks.
* Clients that send huge fetches (pipelined, many partitions named many times, 512 MiB asked)
  and never read: responses are streamed as the client takes them, so the broker holds about one
  write buffer per connection (before: every response was copied whole into memory, ~1 GB here).
* Clients that send most of a large frame and stop: the frames being read are bounded by
  ``queued.max.request.bytes`` (others wait unread in the kernel's socket buffers), while small
  requests from a healthy client are still answered and nothing stays reserved after they leave.

Memory is the broker process's resident set (psutil), against a stated bound with a wide margin.
"""

import time

import pytest

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record

from ..waiting import wait_for
from .test_bad_input import rss
from .wire import SIZE, connect_to, create_topics_body, fetch_body, produce_body

MIB = 1024 * 1024
TIMEOUT = 30
PARTITIONS = 100
BATCH_BYTES = 150 * 1024  # below the sendfile threshold: such slices are copied, the costly case
HOSTILE_CONNECTIONS = 3
MENTIONS = 12  # each partition named 12 times: 1,200 partitions in one fetch
GROWTH_LIMIT = 100 * MIB  # before streaming and de-duplication: ~540 MB for these three clients


def records(value_bytes: int, count: int = 1) -> bytes:
    return batch.build([Record(i, 1_700_000_000_000 + i, None, b"x" * value_bytes) for i in range(count)])


def fill(client, topic: str, partitions: int, batches: int) -> None:
    for partition in range(partitions):
        for _ in range(batches):
            result = client.call(ApiKey.PRODUCE, 8, produce_body(topic, partition, records(BATCH_BYTES)))
            assert result["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def hostile_fetch(topic: str, partitions: int, mentions: int) -> dict:
    wanted = [(topic, p, 0) for _ in range(mentions) for p in range(partitions)]
    return fetch_body(wanted, max_bytes=512 * MIB, partition_max_bytes=256 * 1024)


@pytest.mark.timeout(120)
def test_a_partition_named_many_times_is_answered_once_within_fetch_max_bytes(start_broker):
    broker = start_broker({"fetch.max.bytes": str(MIB)})
    with connect_to(broker, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("capped", 4))["topics"][0]["error_code"] == 0
        fill(client, "capped", 4, batches=4)
        once = client.call(ApiKey.FETCH, 11, hostile_fetch("capped", 1, mentions=1200))
        assert [len(t["partitions"]) for t in once["responses"]] == [1]
        assert len(once["responses"][0]["partitions"][0]["records"]) > 0

        capped = client.call(ApiKey.FETCH, 11, hostile_fetch("capped", 4, mentions=1))
        sizes = [len(p["records"]) for t in capped["responses"] for p in t["partitions"]]
        assert [p["partition_index"] for p in capped["responses"][0]["partitions"]] == [0, 1, 2, 3]
        assert 0 < sum(sizes) <= MIB < 4 * 4 * BATCH_BYTES


@pytest.mark.timeout(180)
def test_clients_that_never_read_their_fetch_responses_do_not_balloon_the_broker(start_broker):
    broker = start_broker()
    with connect_to(broker, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("hoard", PARTITIONS))["topics"][0]["error_code"] == 0
        fill(client, "hoard", PARTITIONS, batches=2)
        before = rss(broker)
        hostile = [connect_to(broker, TIMEOUT) for _ in range(HOSTILE_CONNECTIONS)]
        try:
            for connection in hostile:
                for _ in range(5):  # pipelined: the broker must not read on while a response is unsent
                    connection.send_request(ApiKey.FETCH, 11, hostile_fetch("hoard", PARTITIONS, MENTIONS))
            wait_for(lambda: all(c.pending_bytes() for c in hostile), timeout=TIMEOUT,
                     what="the broker answering every hoarder")
            healthy = client.call(ApiKey.FETCH, 11, fetch_body([("hoard", 0, 0)]))  # the broker still serves
            assert healthy["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
            growth = max(rss(broker) for _ in range(10)) - before
            assert growth < GROWTH_LIMIT, f"the broker grew by {growth / MIB:.0f} MiB"
        finally:
            for connection in hostile:
                connection.close()


def send_until_stuck(connections, frame_bytes: int, patience: float = 1.0) -> list[int]:
    """Send each connection a ``frame_bytes`` frame but its last byte, as far as the broker reads;
    stop once one frame is sent and nothing moved for ``patience`` seconds (or after ``TIMEOUT``).
    Return the bytes sent on each connection."""
    chunk = b"\0" * MIB
    sent = [0] * len(connections)
    for connection in connections:
        connection.sock.setblocking(False)
        connection.sock.send(SIZE.pack(frame_bytes))
    deadline = time.monotonic() + TIMEOUT
    last_progress = time.monotonic()
    while time.monotonic() < deadline and (frame_bytes - 1 not in sent or time.monotonic() - last_progress < patience):
        for i, connection in enumerate(connections):
            want = frame_bytes - 1 - sent[i]
            if want <= 0:
                continue
            try:
                sent[i] += connection.sock.send(chunk[:min(want, len(chunk))])
                last_progress = time.monotonic()
            except BlockingIOError:
                pass
        time.sleep(0.001)
    return sent


@pytest.mark.timeout(180)
def test_frames_being_read_are_bounded_by_queued_max_request_bytes(start_broker):
    frame_bytes = 32 * MIB
    broker = start_broker({"queued.max.request.bytes": str(8 * MIB), "socket.request.max.bytes": str(64 * MIB)})
    with connect_to(broker, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("after", 1))["topics"][0]["error_code"] == 0
        before = rss(broker)
        hoarders = [connect_to(broker, TIMEOUT) for _ in range(8)]
        try:
            sent = send_until_stuck(hoarders, frame_bytes)
            assert sent.count(frame_bytes - 1) == 1, f"bytes taken per connection: {sent}"  # one frame read at a time
            growth = rss(broker) - before
            assert growth < 2 * frame_bytes, f"the broker grew by {growth / MIB:.0f} MiB"  # before: 8 frames, 256 MiB
            assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE  # small ones pass
        finally:
            for connection in hoarders:
                connection.close()
        # the hoarders' reservations are given back: a large produce is read and stored
        result = client.call(ApiKey.PRODUCE, 8, produce_body("after", 0, records(MIB // 2)))
        assert result["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


@pytest.mark.timeout(120)
def test_a_topic_deleted_while_its_records_are_streamed_closes_that_connection_with_one_line(start_broker):
    broker = start_broker()
    with connect_to(broker, TIMEOUT) as client, connect_to(broker, TIMEOUT) as reader:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("doomed", PARTITIONS))["topics"][0]["error_code"] == 0
        fill(client, "doomed", PARTITIONS, batches=2)  # a 15 MB response: more than the socket buffers hold
        reader.send_request(ApiKey.FETCH, 11, hostile_fetch("doomed", PARTITIONS, mentions=1))
        wait_for(lambda: reader.pending_bytes(), timeout=TIMEOUT, what="the response being sent")
        deleted = client.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": ["doomed"], "timeout_ms": 5000})
        assert deleted["responses"][0]["error_code"] == ErrorCode.NONE
        received = 0
        reader.sock.settimeout(TIMEOUT)
        while chunk := reader.sock.recv(1 << 20):  # the part already on its way, then the close (the deletion
            received += len(chunk)                 # closes the files so that their space is freed at once)
        assert received < PARTITIONS * BATCH_BYTES
        assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
    log_text = open(broker.stderr_path, encoding="utf-8").read()
    assert "Traceback" not in log_text and "WARNING" not in log_text, log_text  # an expected event, not a problem
    assert log_text.count("cannot send the rest of a response: its topic was deleted") == 1, log_text


@pytest.mark.timeout(180)
def test_a_request_answered_is_not_kept_in_memory_while_its_connection_stays_open(start_broker):
    frame_mib = 24
    broker = start_broker({"queued.max.request.bytes": str(8 * MIB), "socket.request.max.bytes": str(64 * MIB)})
    too_large = produce_body("kept", 0, records(frame_mib * MIB))
    with connect_to(broker, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("kept", 1))["topics"][0]["error_code"] == 0
        before = rss(broker)
        connections = [connect_to(broker, TIMEOUT) for _ in range(8)]
        try:
            for connection in connections:  # each answered, then left open and idle
                result = connection.call(ApiKey.PRODUCE, 8, too_large)
                assert result["responses"][0]["partitions"][0]["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
            growth = rss(broker) - before
            assert growth < 4 * frame_mib * MIB, f"the broker grew by {growth / MIB:.0f} MiB"  # kept: 8 x 24 MiB
        finally:
            for connection in connections:
                connection.close()
