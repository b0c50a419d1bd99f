"""The ``AclStore`` contract, run against both stores: a single broker's ``acls.json``
(``LocalAcls``) and a cluster's ZooKeeper nodes (``ZooKeeperAcls``, on the real ZooKeeper server of
the cluster tests, in a chroot of its own). Each ACL is kept once, removal answers per filter, a
store opened again at the same place sees every change, and kept ACLs that cannot be read stop the
store from opening with an ``AclStoreError`` naming where they are."""

import json
import re

import pytest

from broker.cluster.zookeeper_acls import ZooKeeperAcls
from broker.cluster.zookeeper_data import ZooKeeperConnect
from broker.security.acl_store import AclStore, AclStoreError, LocalAcls
from broker.security.acls import Acl, AclFilter, Operation, PatternType, Permission, ResourceType

KEPT = Acl.checked(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", Operation.READ, Permission.ALLOW
)
GONE = Acl.checked(ResourceType.GROUP, "g", PatternType.PREFIXED, "User:alice", "*", Operation.READ, Permission.DENY)
EVERY_GROUP_ACL = AclFilter.checked(
    ResourceType.GROUP, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY
)
EVERY_DENY = AclFilter.checked(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.DENY)
EVERY_WRITE = AclFilter.checked(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.WRITE, Permission.ANY)


class LocalPlace:
    """A log directory: where ``LocalAcls`` keeps its ACLs."""

    def __init__(self, log_dir):
        self._log_dir = log_dir

    def open(self) -> AclStore:
        return LocalAcls(str(self._log_dir))

    def spoil(self) -> str:
        """Make the kept ACLs unreadable; the pattern of the error that names them."""
        (self._log_dir / "acls.json").write_text(json.dumps({"version": 1, "acls": [{"resource_type": "TOPIC"}]}))
        return "acls.json: unreadable ACLs"

    def close(self) -> None:
        pass


class ZooKeeperPlace:
    """A chroot of the ZooKeeper server: where ``ZooKeeperAcls`` keeps a cluster's ACLs."""

    def __init__(self, zookeeper: str, kazoo):
        self._connect = ZooKeeperConnect(zookeeper)
        self._kazoo = kazoo
        self._opened: list[ZooKeeperAcls] = []

    def open(self) -> AclStore:
        store = ZooKeeperAcls(self._kazoo, self._connect)
        self._opened.append(store)
        return store

    def spoil(self) -> str:
        path = self._connect.path("/kafka-acl/Topic/orders")
        self._kazoo.create(path, b"not json", makepath=True)
        return f"ZooKeeper node {re.escape(path)}: not Kafka's ACL JSON"

    def close(self) -> None:
        for store in self._opened:
            store.stop()


@pytest.fixture(params=["local", "zookeeper"])
def place(request, tmp_path):
    """Where an ``AclStore`` keeps its ACLs, once for each store."""
    if request.param == "local":
        opened = LocalPlace(tmp_path)
    else:
        opened = ZooKeeperPlace(request.getfixturevalue("zookeeper"), request.getfixturevalue("kazoo"))
    yield opened
    opened.close()


def test_a_store_keeps_acls_once_and_a_store_opened_again_sees_every_change(place):
    store = place.open()
    store.add([KEPT, GONE, KEPT])
    assert store.acls() == (KEPT, GONE)
    assert store.matching(EVERY_GROUP_ACL) == [GONE]
    removed = store.remove([EVERY_GROUP_ACL])
    assert removed == [[GONE]]
    assert store.acls() == (KEPT,)
    assert place.open().acls() == (KEPT,)


def test_removal_answers_what_each_filter_matched_and_a_filter_matching_nothing_changes_nothing(place):
    store = place.open()
    store.add([KEPT, GONE])
    assert store.remove([EVERY_WRITE]) == [[]]
    assert store.acls() == (KEPT, GONE)
    assert store.remove([EVERY_GROUP_ACL, EVERY_DENY, EVERY_WRITE]) == [[GONE], [GONE], []]
    assert store.acls() == (KEPT,)
    assert place.open().acls() == (KEPT,)


def test_kept_acls_that_cannot_be_read_stop_a_store_from_opening(place):
    where = place.spoil()
    with pytest.raises(AclStoreError, match=where):
        place.open()
