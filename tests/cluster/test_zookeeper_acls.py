"""The ZooKeeper ACL store of two "brokers" (two kazoo sessions) on a real ZooKeeper server: ACLs
added through both at once to one resource all land in its node (compare-and-set, no change
lost) and both see all of them; notifications past their expiry are removed; a resource name
that would nest nodes is refused before anything is written."""

import threading

import pytest
from kazoo.client import KazooClient

from broker.cluster.zookeeper_acls import ZooKeeperAcls
from broker.cluster.zookeeper_data import ZooKeeperConnect
from broker.security.acl_store import AclStoreError
from broker.security.acls import Acl, Operation, PatternType, Permission, ResourceType
from tests.waiting import wait_for

USERS = 10


def topic_acl(principal: str) -> Acl:
    return Acl.checked(
        ResourceType.TOPIC, "orders", PatternType.LITERAL, principal, "*", Operation.READ, Permission.ALLOW
    )


def test_concurrent_changes_through_two_brokers_all_land_and_old_notifications_go(zookeeper, kazoo):
    connect = ZooKeeperConnect(zookeeper)
    other = KazooClient(hosts=connect.hosts)
    other.start(timeout=30)
    first = ZooKeeperAcls(kazoo, connect, notification_expiry_ms=0)
    second = ZooKeeperAcls(other, connect)
    try:
        wanted = [topic_acl(f"User:u{i}") for i in range(USERS)]
        adders = [
            threading.Thread(target=(first if i % 2 else second).add, args=([acl],)) for i, acl in enumerate(wanted)
        ]
        for adder in adders:
            adder.start()
        for adder in adders:
            adder.join(30)
        for store in (first, second):
            wait_for(lambda store=store: set(store.acls()) == set(wanted), 30, what="every ACL seen by both")
        data, _ = kazoo.get(connect.path("/kafka-acl/Topic/orders"))
        assert data.count(b'"principal"') == USERS

        first.add([topic_acl("User:last")])  # removes every notification made before it
        assert len(kazoo.get_children(connect.path("/kafka-acl-changes"))) <= 1

        nested = Acl.checked(
            ResourceType.GROUP, "loaders/eu", PatternType.LITERAL, "User:etl", "*", Operation.READ, Permission.ALLOW
        )
        with pytest.raises(AclStoreError, match="'/'"):
            first.add([nested])
        assert not kazoo.exists(connect.path("/kafka-acl/Group"))
    finally:
        first.stop()
        second.stop()
        other.stop()
        other.close()
