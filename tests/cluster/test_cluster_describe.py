"""``kafkalog cluster describe`` against 3 real brokers on a real ZooKeeper: the cluster id, the
controller, each live broker with the partitions it leads, and, once a broker is killed, its
partitions listed offline until it is back (the module's cluster is its own: the killed broker is
restarted before the module ends)."""

import json

import pytest

from broker.client import KafkaClient
from broker.client.client import NewTopic
from tests.cli.support import kafkalog
from tests.waiting import wait_for


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
        assert [(b["id"], b["host"], b["port"]) for b in found["brokers"]] == \
            [(i, "127.0.0.1", broker.port) for i, broker in cluster.brokers.items()]
        for broker in found["brokers"]:
            mine = [p for p, holder in enumerate(placed) if holder == broker["id"]]
            assert broker["partitions"] == [{"topic": "described", "partition": p} for p in mine]
            assert broker["leaderCount"] == len(mine)
    whole = described(cluster)  # every topic: __consumer_offsets (6 partitions here) too
    assert sum(b["leaderCount"] for b in whole["brokers"]) >= 6
    lines = describe(cluster, "--topic", "described").splitlines()
    assert lines[:2] == [f"cluster id: {cluster_id}", f"controller: {controller}"]
    leads = [p for p, holder in enumerate(placed) if holder == 1]
    assert lines[2] == (f"broker 1: 127.0.0.1:{cluster.brokers[1].port}, leads {len(leads)} partition(s)"
                        + (": " + ", ".join(f"described-{p}" for p in leads) if leads else ""))
    assert lines[5:] == ["offline partitions: 0"]


def test_the_partitions_of_a_killed_broker_are_listed_offline_until_it_returns(cluster, placed, tmp_path):
    victim = 3
    gone = [p for p, holder in enumerate(placed) if holder == victim]
    assert gone, "round-robin over 3 brokers gives each of them 2 of the 6 partitions"
    cluster.brokers[victim].kill()
    try:
        found = wait_for(lambda: (d := described(cluster, "--topic", "described")) and
                         len(d["offlinePartitions"]) == len(gone) and d, timeout=60, interval=0.5,
                         what="the killed broker's partitions to lose their leader")
        assert [b["id"] for b in found["brokers"]] == [1, 2]
        assert found["offlinePartitions"] == [{"topic": "described", "partition": p, "replicas": [victim],
                                               "replicasLive": False} for p in gone]
        settings = tmp_path / "client.properties"  # the security settings of the other commands, here plaintext
        settings.write_text("security.protocol=PLAINTEXT\n")
        lines = describe(cluster, "--topic", "described", "--command-config", settings, through=2).splitlines()
        assert lines[-len(gone) - 1:] == [f"offline partitions: {len(gone)}"] + [
            f"  described-{p} (on broker {victim}, not live)" for p in gone]
    finally:
        cluster.brokers[victim].start()  # the module's other tests see the whole cluster
    found = wait_for(lambda: (d := described(cluster, "--topic", "described")) and
                     not d["offlinePartitions"] and d, timeout=60, interval=0.5,
                     what="the broker's partitions to be led again")
    assert [p["partition"] for p in found["brokers"][victim - 1]["partitions"]] == gone
