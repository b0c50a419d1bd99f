"""The leader's writes of its partitions' in-sync replicas to their state nodes in ZooKeeper, as a
Kafka 2.x leader does them: a conditional update on the node's version, made only while the node
still names this broker as leader at the leader epoch it leads at. When the controller changed the
node meanwhile (a new leader, a dead follower removed), the write is given up: the broker reads the
node again through its metadata watch, and the next check decides anew."""

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from .zookeeper_data import ZooKeeperConnect, parse_partition_state, partition_state_json, partition_state_path

log = logging.getLogger(__name__)


class ZooKeeperIsr:
    def __init__(self, client: KazooClient, connect: ZooKeeperConnect):
        self._client = client
        self._connect = connect

    def write(self, topic: str, partition: int, leader: int, leader_epoch: int, isr: list[int]) -> bool:
        """Write ``isr`` as the partition's in-sync replicas; False when the node has moved on (another
        leader or leader epoch, or a change raced with this one). KazooException when ZooKeeper fails."""
        path = self._connect.path(partition_state_path(topic, partition))
        try:
            data, stat = self._client.get(path)
        except NoNodeError:  # the topic is being deleted
            return False
        current_leader, current_epoch, _, controller_epoch = parse_partition_state(data)
        if (current_leader, current_epoch) != (leader, leader_epoch):
            return False
        try:
            self._client.set(
                path, partition_state_json(leader, leader_epoch, isr, controller_epoch), version=stat.version
            )
        except (BadVersionError, NoNodeError):
            log.info("%s-%d: the state node changed under an ISR update; reading it again", topic, partition)
            return False
        return True
