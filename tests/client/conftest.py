"""Fixtures of the client tests: librdkafka's mock cluster, and ``cluster``, which runs a test
against both this project's broker (the module-scoped ``broker`` of tests/conftest.py) and the mock.
"""

import confluent_kafka
import pytest

from .support import Cluster

MOCK_BROKERS = 3


@pytest.fixture(scope="module")
def mock_cluster():
    """librdkafka's in-process mock cluster (3 brokers), alive as long as its owning producer."""
    owner = confluent_kafka.Producer({"test.mock.num.brokers": MOCK_BROKERS})
    brokers = owner.list_topics(timeout=10).brokers.values()
    assert len(brokers) == MOCK_BROKERS
    yield Cluster("mock", ",".join(f"{b.host}:{b.port}" for b in brokers))
    if hasattr(owner, "close"):
        owner.close()
    del owner


@pytest.fixture(scope="module", params=["kafkalog", "mock"])
def cluster(request) -> Cluster:
    if request.param == "kafkalog":
        process = request.getfixturevalue("broker")
        return Cluster("kafkalog", process.bootstrap, process)
    return request.getfixturevalue("mock_cluster")
