"""Consumer groups with unmodified clients against the real broker: ``subscribe()`` with one and three
members of confluent-kafka, kafka-python and aiokafka (each member its own process:
``group_member``), members joining, leaving and being killed (the session timeout expires them),
each partition owned by exactly one member of a generation, every record committed exactly once
across rebalances with synchronous commits, librdkafka's cooperative-sticky, static membership,
a group of mixed clients, commits with metadata as the project's group client reads them, and
members of each client alive through a restart that replays a large ``__consumer_offsets``."""

import os
import signal
import subprocess
import sys
import threading

import pytest

from broker.client import GroupClient, KafkaClient
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode

from ..conftest import FAST_GROUPS
from ..server.test_group_coordinator import commit, find_coordinator
from ..server.wire import connect_to, create_topics_body
from ..waiting import wait_for
from .common import PARTITIONS, WAIT_SECONDS, topic_name

CLIENTS = ["confluent", "kafka-python", "aiokafka"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
METADATA = "committed-by-test"  # what group_member commits with each offset
ALL_PARTITIONS = list(range(PARTITIONS))
GROUP_WAIT_SECONDS = 45  # an upper bound only: member processes start slowly on a loaded machine


class Member:
    """A ``group_member`` process and what it has said so far."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, *options: str):
        self.client = client
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.interop.group_member", client, bootstrap, group, topic, *options],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.errors), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, into: list) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    @property
    def assignment(self) -> list[int] | None:
        said = [line for line in self.lines if line.startswith("assigned ")]
        return eval(said[-1].removeprefix("assigned ")) if said else None  # a list of ints, written by repr

    @property
    def assignments(self) -> int:
        return sum(line.startswith("assigned ") for line in self.lines)

    @property
    def records(self) -> list[tuple[int, int]]:
        return [tuple(map(int, line.split()[1:])) for line in self.lines if line.startswith("record ")]

    def stop(self) -> None:
        """SIGTERM: the member closes its consumer (and leaves the group)."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(WAIT_SECONDS)
        for reader in self._readers:
            reader.join(WAIT_SECONDS)
        assert self.lines[-1] == "closed", self.describe()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(WAIT_SECONDS)

    def describe(self) -> str:
        return f"{self.client} member said {self.lines[-5:]}, stderr {self.errors[-5:]}"


@pytest.fixture
def members(broker):
    started = []

    def start(client: str, group: str, topic: str, *options: str) -> Member:
        member = Member(client, broker.bootstrap, group, topic, *options)
        started.append(member)
        return member

    yield start
    for member in started:
        if member.process.poll() is None:
            member.kill()


def wait_until(condition, what: str, seconds: float = GROUP_WAIT_SECONDS, members: list[Member] = ()):
    """``wait_for``, failing with what each of ``members`` was doing."""
    try:
        return wait_for(condition, timeout=seconds, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; " + "; ".join(member.describe() for member in members)) from None


def produce(broker, topic: str, count: int, start: int = 0) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(start, start + count):
        producer.send(topic, value=b"v%d" % i, partition=i % PARTITIONS)
    producer.flush(WAIT_SECONDS)
    producer.close()


def group_client(broker):
    return KafkaClient(broker.bootstrap, timeout=10)


def stable_ownership(broker, group: str, live: list[Member]) -> bool:
    """The group is Stable, each partition belongs to exactly one member, and each live member
    holds what the coordinator says it was assigned."""
    with group_client(broker) as client:
        description = GroupClient(client).describe(group)
    if description.state != "Stable" or len(description.members) != len(live):
        return False
    owned = sorted(p for m in description.members for ps in m.assignment.values() for p in ps)
    if owned != ALL_PARTITIONS:
        assert len(owned) == len(set(owned)), f"a partition has two owners: {description}"
        return False
    return sorted(tuple(m.assignment or ()) for m in live) == sorted(
        tuple(sorted(p for ps in m.assignment.values() for p in ps)) for m in description.members
    )


def committed_exactly_once(members: list[Member], count: int) -> bool:
    records = [r for m in members for r in m.records]
    assert len(records) == len(set(records)), "records committed twice: " + "; ".join(
        f"{m.client} said {m.lines}" for m in members
    )
    return len(records) == count


def committed_offsets(broker, group: str, topic: str) -> dict:
    with group_client(broker) as client:
        found = GroupClient(client).committed(group, {topic: ALL_PARTITIONS})
    # confluent-kafka sends the metadata string with its C terminator (metadata_size counts the NUL)
    return {p: (c.offset, c.metadata.removesuffix("\0")) for (_, p), c in found.items()}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("client", CLIENTS)
def test_one_member_consumes_and_commits_with_metadata(broker, members, client, request):
    topic, group = topic_name(request), topic_name(request) + "-group"
    produce(broker, topic, 40)
    member = members(client, group, topic)
    wait_until(lambda: len(member.records) == 40, "40 records", members=[member])
    assert sorted(member.records) == sorted((i % PARTITIONS, i // PARTITIONS) for i in range(40))
    assert committed_offsets(broker, group, topic) == {p: (10, METADATA) for p in ALL_PARTITIONS}
    wait_until(lambda: stable_ownership(broker, group, [member]), "one member owning every partition")
    member.stop()
    with group_client(broker) as client_:
        assert GroupClient(client_).describe(group).state == "Empty"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("client", CLIENTS)
def test_three_members_join_and_leave_and_every_record_is_committed_once(broker, members, client, request):
    topic, group = topic_name(request), topic_name(request) + "-group"
    produce(broker, topic, 120)
    first = members(client, group, topic, "--pause-ms", "20")
    wait_until(lambda: len(first.records) >= 10, "the first member's records", members=[first])
    others = [members(client, group, topic, "--pause-ms", "20") for _ in range(2)]
    group_of_three = [first, *others]
    wait_until(lambda: stable_ownership(broker, group, group_of_three), "three members sharing the partitions")
    assert all(m.assignment for m in group_of_three)
    others[0].stop()
    wait_until(lambda: stable_ownership(broker, group, [first, others[1]]), "two members after one left")
    produce(broker, topic, 40, start=120)
    wait_until(lambda: committed_exactly_once([first, *others], 160), "160 records committed")
    assert committed_offsets(broker, group, topic) == {p: (40, METADATA) for p in ALL_PARTITIONS}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_killed_member_is_expired_and_its_partitions_move(broker, members, client, request):
    topic, group = topic_name(request), topic_name(request) + "-group"
    produce(broker, topic, 8)
    survivor, victim = (members(client, group, topic, "--session-ms", "3000") for _ in range(2))
    both = [survivor, victim]
    wait_until(lambda: stable_ownership(broker, group, both), "two members sharing the partitions", members=both)
    wait_until(lambda: committed_exactly_once(both, 8), "8 records committed", members=both)
    victim.kill()
    wait_until(lambda: stable_ownership(broker, group, [survivor]), "the survivor owning every partition", members=both)
    produce(broker, topic, 8, start=8)
    wait_until(lambda: committed_exactly_once(both, 16), "16 records committed", members=both)


@pytest.mark.timeout(180)
def test_cooperative_sticky_members_keep_their_partitions_and_commit_once(broker, members, request):
    topic, group = topic_name(request), topic_name(request) + "-group"
    produce(broker, topic, 80)
    options = ("--strategy", "cooperative-sticky", "--pause-ms", "20")
    first = members("confluent", group, topic, *options)
    wait_until(lambda: first.assignment == ALL_PARTITIONS, "the first member owning every partition")
    second = members("confluent", group, topic, *options)
    wait_until(lambda: stable_ownership(broker, group, [first, second]), "two cooperative members")
    assert set(second.assignment) < set(ALL_PARTITIONS)
    assert set(first.assignment) | set(second.assignment) == set(ALL_PARTITIONS)
    wait_until(lambda: committed_exactly_once([first, second], 80), "80 records committed")


@pytest.mark.timeout(180)
def test_a_group_of_mixed_clients(broker, members, request):
    topic, group = topic_name(request), topic_name(request) + "-group"
    produce(broker, topic, 60)
    mixed = [members(c, group, topic, "--strategy", "roundrobin", "--pause-ms", "10") for c in CLIENTS]
    wait_until(lambda: stable_ownership(broker, group, mixed), "three clients sharing the partitions")
    wait_until(lambda: committed_exactly_once(mixed, 60), "60 records committed")


def rebalances(broker, group: str) -> int:
    with open(broker.stderr_path, encoding="utf-8", errors="replace") as log:
        return sum(f"group {group!r}: preparing to rebalance" in line for line in log)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(broker, members, client, request):
    """The restarted member is a follower: a restarted leader is sent the members' metadata, and
    kafka-python's leader may then ask for a rebalance itself (Kafka's JoinGroup v9 ``skip_assignment``,
    not in these non-flexible versions, is what avoids that)."""
    topic, group = topic_name(request), topic_name(request) + "-group"
    produce(broker, topic, 8)
    static = ("--session-ms", "20000")  # long enough for a restart
    leader = members(client, group, topic, "--instance-id", "host-a", *static)
    wait_until(lambda: leader.assignment == ALL_PARTITIONS, "the first member, the leader", members=[leader])
    follower = members(client, group, topic, "--instance-id", "host-b", *static)
    wait_until(
        lambda: stable_ownership(broker, group, [leader, follower]), "two static members", members=[leader, follower]
    )
    before, owned, leader_assignments = rebalances(broker, group), follower.assignment, leader.assignments
    follower.kill()
    restarted = members(client, group, topic, "--instance-id", "host-b", *static)
    wait_until(lambda: restarted.assignment == owned, "the restarted member's partitions", members=[restarted])
    wait_until(
        lambda: stable_ownership(broker, group, [leader, restarted]), "the group as before", members=[leader, restarted]
    )
    assert rebalances(broker, group) == before
    assert leader.assignments == leader_assignments


def fill_offsets_topic(broker, topic: str, commits: int) -> None:
    """``commits`` offset commits in ``__consumer_offsets`` (of another group), for a restart to replay."""
    per_request = 200
    with connect_to(broker) as wire:
        created = wire.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(topic, partitions=per_request))
        assert created["topics"][0]["error_code"] == ErrorCode.NONE
        find_coordinator(wire, "filler")
        for i in range(commits // per_request):
            assert set(commit(wire, "filler", {(topic, p): i for p in range(per_request)})) == {ErrorCode.NONE}


@pytest.mark.timeout(300)
def test_members_of_each_client_stay_alive_through_a_restart_with_a_large_offsets_topic(start_broker, request):
    """While the restarted coordinator replays ``__consumer_offsets`` the members' heartbeats are
    answered NONE and their commits COORDINATOR_LOAD_IN_PROGRESS, which each client retries."""
    broker = start_broker({"num.partitions": str(PARTITIONS), "offsets.topic.num.partitions": "1", **FAST_GROUPS})
    topic, group = topic_name(request), topic_name(request) + "-group"
    fill_offsets_topic(broker, topic + "-filler", 100_000)
    produce(broker, topic, 30)
    started = [
        Member(c, broker.bootstrap, group, topic, "--strategy", "roundrobin", "--session-ms", "10000") for c in CLIENTS
    ]
    try:
        wait_until(
            lambda: stable_ownership(broker, group, started), "three clients sharing the partitions", members=started
        )
        wait_until(lambda: committed_exactly_once(started, 30), "30 records committed", members=started)
        assert broker.stop() == 0
        broker.start()
        produce(broker, topic, 30, start=30)
        wait_until(
            lambda: committed_exactly_once(started, 60), "60 records committed after the restart", members=started
        )
        with open(broker.stderr_path, encoding="utf-8", errors="replace") as log:
            assert "loaded the groups of __consumer_offsets-0" in log.read()
        for member in started:
            member.stop()  # alive until now: it closes and says so
    finally:
        for member in started:
            if member.process.poll() is None:
                member.kill()
