"""``kafkalog cluster describe`` against 3 real brokers on a real ZooKeeper: the cluster id, the
controller, each live broker with the partitions it leads, and, once a broker is killed, its
partitions listed offline until it is back; ``kafkalog topics describe`` and ``consume`` with a
broker down (the module's cluster is its own: a killed broker is restarted before the module ends)."""

import json
import signal
import subprocess
import sys
import threading

import pytest

from broker.client import GroupClient, KafkaClient, NewTopic
from broker.coordinator.group_partition import partition_for
from broker.coordinator.offset_manager import OFFSETS_TOPIC
from tests.cli.support import kafkalog, one_line_error, produce_records
from tests.waiting import wait_for

from .test_cluster_groups import OFFSETS_PARTITIONS


@pytest.fixture(scope="module")
def placed(cluster, cluster_kazoo) -> list[int]:
    """A topic of 6 partitions; each partition's broker, read back from ZooKeeper."""
    with KafkaClient(cluster.bootstrap) as client:
        assert client.create_topics([NewTopic("described", 6)]) == {"described": None}
    assignment = json.loads(cluster_kazoo.get("/brokers/topics/described")[0])["partitions"]
    return [assignment[str(p)][0] for p in range(6)]


def describe(cluster, *args, through: int = 1) -> str:
    done = kafkalog("cluster", "describe", "--bootstrap-server", cluster.brokers[through].bootstrap, *args)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def described(cluster, *args, through: int = 1) -> dict:
    return json.loads(describe(cluster, "--format", "json", *args, through=through))


def test_any_broker_describes_the_cluster_its_controller_and_what_each_broker_leads(cluster, cluster_kazoo, placed):
    cluster_id = json.loads(cluster_kazoo.get("/cluster/id")[0])["id"]
    controller = json.loads(cluster_kazoo.get("/controller")[0])["brokerid"]
    for through in cluster.brokers:
        found = described(cluster, "--topic", "described", through=through)
        assert (found["clusterId"], found["controller"], found["offlinePartitions"]) == (cluster_id, controller, [])
        assert [(b["id"], b["host"], b["port"]) for b in found["brokers"]] == [
            (i, "127.0.0.1", broker.port) for i, broker in cluster.brokers.items()
        ]
        for broker in found["brokers"]:
            mine = [p for p, holder in enumerate(placed) if holder == broker["id"]]
            assert broker["partitions"] == [{"topic": "described", "partition": p} for p in mine]
            assert broker["leaderCount"] == len(mine)
    whole = described(cluster)  # every topic: __consumer_offsets (6 partitions here) too
    assert sum(b["leaderCount"] for b in whole["brokers"]) >= 6
    lines = describe(cluster, "--topic", "described").splitlines()
    assert lines[:2] == [f"cluster id: {cluster_id}", f"controller: {controller}"]
    leads = [p for p, holder in enumerate(placed) if holder == 1]
    assert lines[2] == (
        f"broker 1: 127.0.0.1:{cluster.brokers[1].port}, leads {len(leads)} partition(s)"
        + (": " + ", ".join(f"described-{p}" for p in leads) if leads else "")
    )
    assert lines[5:] == ["under-replicated partitions: 0", "offline partitions: 0"]


def test_the_partitions_of_a_killed_broker_are_listed_offline_until_it_returns(cluster, placed, tmp_path):
    victim = 3
    gone = [p for p, holder in enumerate(placed) if holder == victim]
    assert gone, "round-robin over 3 brokers gives each of them 2 of the 6 partitions"
    cluster.brokers[victim].kill()
    try:
        found = wait_for(
            lambda: (
                (d := described(cluster, "--topic", "described")) and len(d["offlinePartitions"]) == len(gone) and d
            ),
            timeout=60,
            interval=0.5,
            what="the killed broker's partitions to lose their leader",
        )
        assert [b["id"] for b in found["brokers"]] == [1, 2]
        assert found["offlinePartitions"] == [
            {"topic": "described", "partition": p, "replicas": [victim], "replicasLive": False} for p in gone
        ]
        settings = tmp_path / "client.properties"  # the security settings of the other commands, here plaintext
        settings.write_text("security.protocol=PLAINTEXT\n")
        lines = describe(cluster, "--topic", "described", "--command-config", settings, through=2).splitlines()
        assert lines[-len(gone) - 1 :] == [f"offline partitions: {len(gone)}"] + [
            f"  described-{p} (on broker {victim}, not live)" for p in gone
        ]
    finally:
        cluster.brokers[victim].start()  # the module's other tests see the whole cluster
    found = wait_for(
        lambda: (d := described(cluster, "--topic", "described")) and not d["offlinePartitions"] and d,
        timeout=60,
        interval=0.5,
        what="the broker's partitions to be led again",
    )
    assert [p["partition"] for p in found["brokers"][victim - 1]["partitions"]] == gone


def _group_coordinated_elsewhere(cluster, broker_id: int, offsets: dict) -> str:
    """A consumer group, with ``offsets`` committed, whose coordinator is not broker ``broker_id``."""
    with KafkaClient(cluster.bootstrap) as client:
        for attempt in range(30):
            group = f"cli-dead-broker-{attempt}"
            GroupClient(client).commit(group, offsets)  # the first commit creates __consumer_offsets
            leaders = client.metadata([OFFSETS_TOPIC]).leaders
            if leaders[(OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS))] != broker_id:
                return group
    raise AssertionError(f"every group tried is coordinated by broker {broker_id}")


def test_topics_describe_and_consume_go_on_without_a_dead_broker(cluster, placed):
    """Found as: with one broker down, `topics describe` and `consume` (every partition) failed whole
    with "described-2, described-5 have no leader". As Kafka's tools: describe shows those partitions
    with leader none; consume reads the others and names the skipped ones in one line (exit 1);
    `consume --follow` keeps reading the others and reads the dead broker's again once it is back;
    `groups describe` shows their log end offset and lag as unknown."""
    victim, topic = 2, "described"
    gone = [p for p, holder in enumerate(placed) if holder == victim]
    produce_records(cluster.bootstrap, topic, [(p, None, b"first %d" % p, 1000) for p in range(6)])
    through = cluster.brokers[1].bootstrap
    group = _group_coordinated_elsewhere(cluster, victim, {(topic, p): 1 for p in range(6)})
    follow = subprocess.Popen(
        [sys.executable, "-m", "broker.cli", "consume", topic, "--follow", "--bootstrap-server", through],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killer = threading.Timer(240, follow.kill)  # bounds every read of its pipes below
    killer.daemon = True
    killer.start()
    try:
        assert sorted(follow.stdout.readline().split("\t")[-1] for _ in range(6)) == [f"first {p}\n" for p in range(6)]
        cluster.brokers[victim].kill()
        try:
            wait_for(
                lambda: len(described(cluster, "--topic", topic)["offlinePartitions"]) == len(gone),
                timeout=60,
                interval=0.5,
                what="the killed broker's partitions to lose their leader",
            )
            done = kafkalog("topics", "describe", topic, "--format", "json", "--bootstrap-server", through)
            assert (done.returncode, done.stderr) == (0, "")
            shown = {p["partition"]: p for p in json.loads(done.stdout)["partitions"]}
            for p in gone:
                assert shown[p] == {
                    "partition": p,
                    "leader": None,
                    "replicas": [placed[p]],
                    "isr": [placed[p]],
                    "earliestOffset": None,
                    "latestOffset": None,
                    "sizeBytes": None,
                }
            assert all(
                shown[p]["leader"] == placed[p] and shown[p]["latestOffset"] == 1 for p in range(6) if p not in gone
            )
            done = kafkalog(
                "topics",
                "--describe",
                "--topic",
                topic,
                "--unavailable-partitions",
                "--format",
                "json",
                "--bootstrap-server",
                through,
            )
            assert [p["partition"] for p in json.loads(done.stdout)["partitions"]] == gone, done.stderr
            plain = kafkalog("topics", "describe", topic, "--bootstrap-server", through).stdout.splitlines()
            assert [line.split()[:6] for line in plain if line.startswith(tuple(map(str, gone)))] == [
                [str(p), "none", str(victim), str(victim), "-", "-"] for p in gone
            ]

            done = kafkalog("consume", topic, "--bootstrap-server", through)
            assert sorted(line.split("\t")[-1] for line in done.stdout.splitlines()) == [
                f"first {p}" for p in range(6) if p not in gone
            ]
            names = ", ".join(f"{topic}-{p}" for p in gone)
            assert one_line_error(done, 1, "kafkalog consume: ") == (
                f"kafkalog consume: {names} have no leader (LEADER_NOT_AVAILABLE: broker {victim} is down): reading "
                f"the other partitions; not read (exit status 1)"
            )

            done = kafkalog("groups", "describe", group, "--format", "json", "--bootstrap-server", through)
            assert (done.returncode, done.stderr) == (0, "")
            assert [
                (r["partition"], r["currentOffset"], r["logEndOffset"], r["lag"])
                for r in json.loads(done.stdout)["partitions"]
            ] == [(p, 1, None, None) if p in gone else (p, 1, 1, 0) for p in range(6)]

            alive = next(p for p in range(6) if p not in gone)
            produce_records(through, topic, [(alive, None, b"during", 2000)])
            assert follow.stdout.readline().endswith("\tduring\n")  # the others are still read
        finally:
            cluster.brokers[victim].start()
        wait_for(
            lambda: not described(cluster, "--topic", topic)["offlinePartitions"],
            timeout=60,
            interval=0.5,
            what="the broker's partitions to be led again",
        )
        produce_records(cluster.bootstrap, topic, [(gone[0], None, b"after", 3000)])
        assert follow.stdout.readline() == f"{gone[0]}\t1\t1970-01-01T00:00:03.000Z\tnull\tafter\n"
        follow.send_signal(signal.SIGINT)
        _, err = follow.communicate(timeout=30)
    finally:
        follow.kill()
    assert follow.returncode == 0
    assert f"kafkalog consume: {topic}-{gone[0]} cannot be read now (" in err
    assert f"kafkalog consume: {topic}-{gone[0]} is read again\n" in err
