"""One real ZooKeeper server for the cluster tests (a session fixture); each test works in a
chroot of its own, so tests never see each other's brokers or cluster ids."""

import uuid

import pytest
from kazoo.client import KazooClient

from spark_kafka_source.java import java_executable

from .zookeeper import ZooKeeperServer


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
