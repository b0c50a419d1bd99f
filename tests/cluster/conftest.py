"""One real ZooKeeper server for the registry tests (a session fixture; each test works in a chroot
of its own, so tests never see each other's brokers or cluster ids), and a real 3-broker cluster
with its own ZooKeeper for the tests of cluster mode (a module fixture)."""

import uuid

import pytest
from kazoo.client import KazooClient

from broker.common.java import java_executable
from broker.embedded_cluster import EmbeddedCluster
from broker.embedded_zookeeper import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory):
    if java_executable() is None:
        pytest.skip("no Java: the ZooKeeper server of PySpark's jars needs Java 17+")
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    yield server
    server.stop()


@pytest.fixture
def zookeeper(zookeeper_server):
    """``zookeeper.connect`` with a fresh chroot for this test."""
    return f"{zookeeper_server.connect}/test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kazoo(zookeeper_server):
    """A kazoo client of the server (no chroot), to read what brokers wrote."""
    client = KazooClient(hosts=zookeeper_server.connect)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three real broker processes (ids 1-3) on a real ZooKeeper server, shared by a module's tests;
    a short ZooKeeper session, so that a killed broker's partitions lose their leader within seconds.
    Every topic has one replica here, ``__consumer_offsets`` too (a dead broker's groups have no
    coordinator); replication is tested in ``test_replication``."""
    if java_executable() is None:
        pytest.skip("no Java: the ZooKeeper server of PySpark's jars needs Java 17+")
    with EmbeddedCluster(
        tmp_path_factory.mktemp("cluster"),
        brokers=3,
        settings={
            "zookeeper.session.timeout.ms": "2000",
            "offsets.topic.num.partitions": "6",
            "offsets.topic.replication.factor": "1",
        },
    ) as running:
        yield running


@pytest.fixture(scope="module")
def cluster_kazoo(cluster):
    """A kazoo client of the module's cluster's ZooKeeper, to read what its brokers wrote."""
    client = KazooClient(hosts=cluster.zookeeper.connect)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()
