"""The ``Registry`` contract, run against both registries: a broker's own one-node cluster
(``StandaloneRegistry``) and a cluster in ZooKeeper (``ZooKeeperRegistry``, on the real ZooKeeper
server of the cluster tests, in a chroot of its own). Every registry of one cluster answers one
cluster id, every time; a broker id is free again once the registry that registered it closed.
What only ZooKeeper does (ids refused while registered, sessions, elections) is in
``test_zookeeper_registry.py``."""

import pytest

from broker.cluster.metadata_cache import BrokerEndpoint
from broker.cluster.registry import Registry, StandaloneRegistry, ZooKeeperRegistry

SESSION_TIMEOUT_MS, CONNECTION_TIMEOUT_MS = 6000, 30000


class Registries:
    """Registries of one cluster, started when opened; those still open are closed at the end."""

    def __init__(self, make):
        self._make = make
        self._open: list[Registry] = []

    def open(self) -> Registry:
        registry = self._make()
        registry.start()
        self._open.append(registry)
        return registry

    def close(self, registry: Registry) -> None:
        self._open.remove(registry)
        registry.close()

    def close_all(self) -> None:
        while self._open:
            self.close(self._open[-1])


@pytest.fixture(params=["standalone", "zookeeper"])
def registries(request):
    if request.param == "standalone":
        opened = Registries(StandaloneRegistry)
    else:
        zookeeper = request.getfixturevalue("zookeeper")
        opened = Registries(lambda: ZooKeeperRegistry(zookeeper, SESSION_TIMEOUT_MS, CONNECTION_TIMEOUT_MS))
    yield opened
    opened.close_all()


def test_every_registry_of_a_cluster_answers_one_cluster_id_every_time(registries):
    first, second = registries.open(), registries.open()
    answers = [first.cluster_id(), first.cluster_id(), second.cluster_id()]
    assert answers == [answers[0]] * 3


def test_a_broker_id_is_free_again_once_the_registry_that_registered_it_closed(registries):
    endpoint = BrokerEndpoint(1, "127.0.0.1", 9092)
    first = registries.open()
    first.register(endpoint)
    registries.close(first)
    registries.open().register(endpoint)  # RegistryError if the id were still registered
