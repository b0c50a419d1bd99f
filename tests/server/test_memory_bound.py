"""The broker's memory stays bounded whatever clients ask for and however slowly they read.

* A Fetch naming one partition 1,200 times is answered once for it, and no response is larger
  than the broker's ``fetch.max.bytes``, whatever ``max_bytes`` the request asks.
* Clients that send huge fetches (pipelined, many partitions named many times, 512 MiB asked)
  and never read: responses are streamed as the client takes them, so the broker holds about one
  write buffer per connection (before: every response was copied whole into memory, ~1 GB here).
* Clients that send most of a large frame and stop: the frames being read are bounded by
  ``queued.max.request.bytes`` (others wait unread in the kernel's socket buffers), while small
  requests from a healthy client are still answered and nothing stays reserved after they leave.
* Clients that send once a small request with a large answer and never read (the leader's
  JoinGroup of a group of 200 members with 60 KB of metadata each, DescribeGroups and
  DescribeConfigs naming one group or topic 2,000 times): ``group.max.metadata.bytes`` bounds the
  group, a repeated name is answered once, and each connection holds its answer once (before:
  twice or more, 470 MiB for twenty JoinGroups).
* Answers nobody reads (Metadata naming many topics, ListOffsets many partitions) count in
  ``queued.max.request.bytes`` until their clients take them: other large frames wait meanwhile;
  a client that takes nothing for ``connections.max.idle.ms`` is closed. Such requests decode to
  Python objects ~20 times their frame (about 65 MiB for one of these): large ones are handled one
  at a time, so the broker's peak holds one decoded request, not one per connection.

Memory is the broker process's resident set (psutil), against a stated bound with a wide margin;
where the bound is about a peak, the kernel's high-water mark of it (``VmHWM``, reset first).
"""

import socket
import time

import pytest

from broker.embedded import EmbeddedBroker
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record

from ..waiting import wait_for
from .test_bad_input import rss
from .test_group_coordinator import find_coordinator, join_body
from .wire import SIZE, WireClient, connect_to, create_topics_body, encode_request, fetch_body, produce_body

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
        assert (
            client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("hoard", PARTITIONS))["topics"][0]["error_code"]
            == 0
        )
        fill(client, "hoard", PARTITIONS, batches=2)
        before = rss(broker)
        hostile = [connect_to(broker, TIMEOUT) for _ in range(HOSTILE_CONNECTIONS)]
        try:
            for connection in hostile:
                for _ in range(5):  # pipelined: the broker must not read on while a response is unsent
                    connection.send_request(ApiKey.FETCH, 11, hostile_fetch("hoard", PARTITIONS, MENTIONS))
            wait_for(
                lambda: all(c.pending_bytes() for c in hostile),
                timeout=TIMEOUT,
                what="the broker answering every hoarder",
            )
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
                sent[i] += connection.sock.send(chunk[: min(want, len(chunk))])
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
        assert (
            client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("doomed", PARTITIONS))["topics"][0]["error_code"]
            == 0
        )
        fill(client, "doomed", PARTITIONS, batches=2)  # a 15 MB response: more than the socket buffers hold
        reader.send_request(ApiKey.FETCH, 11, hostile_fetch("doomed", PARTITIONS, mentions=1))
        wait_for(lambda: reader.pending_bytes(), timeout=TIMEOUT, what="the response being sent")
        deleted = client.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": ["doomed"], "timeout_ms": 5000})
        assert deleted["responses"][0]["error_code"] == ErrorCode.NONE
        received = 0
        reader.sock.settimeout(TIMEOUT)
        while chunk := reader.sock.recv(1 << 20):  # the part already on its way, then the close (the deletion
            received += len(chunk)  # closes the files so that their space is freed at once)
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


# -- answers much larger than their requests, to clients that never read them ----------------------

MEMBER_METADATA = 60_000  # under the 64 KiB per member; 17 fit group.max.metadata.bytes (1 MiB)
MEMBERS = 200  # before the group bound: all joined, and the leader's JoinGroup answer was 11.5 MiB
HOARDERS = 20
# before: JoinGroup grew the broker by 364-470 MiB; the 2,000-fold DescribeGroups and DescribeConfigs
# answers took it more than 30 s to build for twenty clients
ANSWER_GROWTH_LIMIT = 64 * MIB


@pytest.fixture(scope="module")
def big_group(tmp_path_factory):
    """A broker with a group of static members, each with 60 KB of protocol metadata, waiting for its
    leader's SyncGroup (CompletingRebalance); yields (broker, leader's member id, leader's instance id)."""
    broker = EmbeddedBroker(
        tmp_path_factory.mktemp("big-group") / "log",
        {"group.min.session.timeout.ms": "100", "group.initial.rebalance.delay.ms": "1500"},
    ).start()
    try:
        with connect_to(broker, TIMEOUT) as client:
            find_coordinator(client, "big")
            assert (
                client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("configured", 1))["topics"][0]["error_code"]
                == 0
            )
        members = [connect_to(broker, TIMEOUT) for _ in range(MEMBERS)]
        try:
            for n, member in enumerate(members):
                member.send_request(ApiKey.JOIN_GROUP, 5, big_join(f"i{n}"))
            answers = [member.recv_response(ApiKey.JOIN_GROUP, 5) for member in members]
        finally:
            for member in members:
                member.close()
        joined = [n for n, a in enumerate(answers) if a["error_code"] == ErrorCode.NONE]
        assert len(joined) * (len("range") + MEMBER_METADATA) <= 1024 * 1024 < (len(joined) + 1) * MEMBER_METADATA
        assert {a["error_code"] for a in answers} == {ErrorCode.NONE, ErrorCode.GROUP_MAX_SIZE_REACHED}
        leader = next(n for n in joined if answers[n]["members"])
        yield broker, answers[leader]["member_id"], f"i{leader}"
    finally:
        broker.kill()


def big_join(instance: str, member: str = "") -> dict:
    return join_body(
        "big", member=member, session_ms=120_000, instance=instance, protocols=(("range", b"m" * MEMBER_METADATA),)
    )


def large_answer_requests(leader: str, instance: str) -> dict:
    """Small requests whose answers were large: (api key, version, body) by name."""
    return {
        "JoinGroup": (ApiKey.JOIN_GROUP, 5, big_join(instance, leader)),  # the leader again: every member's metadata
        "DescribeGroups": (
            ApiKey.DESCRIBE_GROUPS,
            4,
            {"groups": ["big"] * 2000, "include_authorized_operations": False},
        ),
        "DescribeConfigs": (
            ApiKey.DESCRIBE_CONFIGS,
            3,
            {
                "resources": [{"resource_type": 2, "resource_name": "configured", "configuration_keys": None}] * 2000,
                "include_synonyms": True,
                "include_documentation": True,
            },
        ),
    }


@pytest.mark.timeout(180)
@pytest.mark.parametrize("api", ["JoinGroup", "DescribeGroups", "DescribeConfigs"])
def test_clients_that_never_read_large_answers_do_not_balloon_the_broker(big_group, api):
    broker, leader, instance = big_group
    key, version, body = large_answer_requests(leader, instance)[api]
    with connect_to(broker, TIMEOUT) as client:
        answer = client.call(key, version, body)  # what each hoarder is sent
        if api == "JoinGroup":
            assert answer["error_code"] == ErrorCode.NONE and len(answer["members"]) < MEMBERS
        else:
            assert len(answer["groups" if api == "DescribeGroups" else "results"]) == 1  # named 2,000 times
        before = rss(broker)
        hoarders = [connect_to(broker, TIMEOUT) for _ in range(HOARDERS)]
        try:
            for hoarder in hoarders:
                hoarder.send_request(key, version, body)
            wait_for(lambda: all(h.pending_bytes() for h in hoarders), timeout=TIMEOUT, what="every hoarder answered")
            assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
            growth = max(rss(broker) for _ in range(10)) - before
            assert growth < ANSWER_GROWTH_LIMIT, f"the broker grew by {growth / MIB:.0f} MiB"
        finally:
            for hoarder in hoarders:
                hoarder.close()


SMALL_KERNEL_BUFFER = {"socket.send.buffer.bytes": str(64 * 1024)}  # else the kernel takes megabytes of an answer


def reset_peak_rss(broker) -> None:
    """Start the kernel's record of the broker's peak resident set afresh (Linux's clear_refs 5)."""
    with open(f"/proc/{broker.pid()}/clear_refs", "w") as refs:
        refs.write("5")


def peak_rss(broker) -> int:
    """The broker's peak resident set since the last ``reset_peak_rss``."""
    with open(f"/proc/{broker.pid()}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


ONE_DECODED_LIMIT = 100 * MIB  # one of these requests and its answer peak at ~65-76 MiB; two at ~130


def slow_reader(broker) -> WireClient:
    """A client whose socket receive buffer is tiny: the kernel holds little of what it does not read."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(TIMEOUT)
    sock.connect(("127.0.0.1", broker.port))
    return WireClient(sock, TIMEOUT)


def many_unknown_topics(count: int) -> tuple[int, int, dict]:
    return ApiKey.METADATA, 1, {"topics": [{"name": f"u{n:07d}"} for n in range(count)]}


def many_unknown_partitions(count: int) -> tuple[int, int, dict]:
    return (
        ApiKey.LIST_OFFSETS,
        1,
        {
            "replica_id": -1,
            "topics": [{"name": "one", "partitions": [{"partition_index": p, "timestamp": -1} for p in range(count)]}],
        },
    )


@pytest.mark.timeout(180)
@pytest.mark.parametrize("request_of", [many_unknown_topics, many_unknown_partitions], ids=["Metadata", "ListOffsets"])
def test_answers_nobody_reads_share_queued_max_request_bytes(start_broker, request_of):
    broker = start_broker(
        {"queued.max.request.bytes": str(3 * MIB), "auto.create.topics.enable": "false", **SMALL_KERNEL_BUFFER}
    )
    key, version, body = request_of(130_000)  # frames of 1.3-1.6 MB, answers of 2.2-2.9 MB: two frames fit
    frame = encode_request(key, version, body, correlation_id=1)
    with connect_to(broker, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("one", 1))["topics"][0]["error_code"] == 0
        before = rss(broker)
        reset_peak_rss(broker)
        hoarders = [slow_reader(broker) for _ in range(6)]
        try:
            for hoarder in hoarders:
                hoarder.send_raw(frame)

            def answered():
                return [h for h in hoarders if h.pending_bytes()]

            first = wait_for(answered, timeout=TIMEOUT, what="a hoarder answered")
            assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE  # small requests go on
            assert len(answered()) <= 2, "answers held unsent must count in queued.max.request.bytes"
            for hoarder in first:  # their answers' memory comes back: the others are read and answered
                hoarder.close()
            rest = [h for h in hoarders if h not in first]
            wait_for(lambda: any(h.pending_bytes() for h in rest), timeout=TIMEOUT, what="another hoarder answered")
            growth = peak_rss(broker) - before
            assert growth < ONE_DECODED_LIMIT, f"the broker's peak grew by {growth / MIB:.0f} MiB"
        finally:
            for hoarder in hoarders:
                hoarder.close()


@pytest.mark.timeout(120)
def test_a_client_that_takes_nothing_of_its_answer_is_closed_after_connections_max_idle_ms(start_broker):
    broker = start_broker(
        {"connections.max.idle.ms": "2000", "auto.create.topics.enable": "false", **SMALL_KERNEL_BUFFER}
    )
    key, version, body = many_unknown_topics(130_000)
    with slow_reader(broker) as hoarder:
        hoarder.send_request(key, version, body)
        wait_for(
            lambda: "took nothing more of its response" in open(broker.stderr_path, encoding="utf-8").read(),
            timeout=TIMEOUT,
            what="the hoarder closed",
        )
    with connect_to(broker, TIMEOUT) as client:
        assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
