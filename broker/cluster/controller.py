"""The controller's work (Kafka's ``KafkaController``, ZooKeeper era), done by the broker the
election made controller: it keeps every partition's state node true to the live brokers and
carries out topic deletions.

It watches ``/brokers/ids``, ``/brokers/topics`` (and each topic's replica assignment) and
``/admin/delete_topics``; any change wakes one thread that compares what ZooKeeper says with what it
should say and writes the differences, each topic in one transaction that first checks
``/controller_epoch`` is still the version this controller set (so a controller that lost its
office without knowing it yet writes nothing), and each state node's version (the leaders change
the ISR of the partitions they lead with conditional updates too: a race makes the controller read
again):

- a partition without a state node gets one (``initial_leader_and_isr``): its first live replica
  as leader, leader epoch 0, its live replicas in sync;
- a partition whose leader's broker is gone gets a new leader from its live in-sync replicas, at
  the next leader epoch, or leader -1 (clients see LEADER_NOT_AVAILABLE) until one of its in-sync
  replicas is back (or, with ``unclean.leader.election.enable`` on the topic or in the dynamic
  cluster default, any live replica at once); a dead follower leaves the ISR
  (``next_leader_and_isr``). Brokers learn their
  new roles by watching the state nodes (``zookeeper_metadata``);
- a topic marked for deletion is deleted (state nodes, assignment, settings, then the mark) once
  every broker holding its partitions is live, as Kafka's controller waits for them: each broker
  deletes its logs when it sees the topic gone.

A new controller reads everything again and goes on from there: the state is all in ZooKeeper.
"""

import logging
from collections.abc import Sequence, Set

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NoNodeError

from .metadata_cache import NO_LEADER
from .rerun_thread import RerunThread
from .zookeeper_data import (
    BROKER_CONFIGS_PATH,
    BROKER_IDS_PATH,
    CONTROLLER_EPOCH_PATH,
    DEFAULT_BROKER_CONFIG,
    DELETE_TOPICS_PATH,
    TOPIC_CONFIGS_PATH,
    TOPICS_PATH,
    PartitionStateNode,
    ZooKeeperConnect,
    parse_config,
    parse_partition_state,
    parse_topic_assignment,
    partition_state_json,
    partition_state_path,
    topic_path,
)

log = logging.getLogger(__name__)


def initial_leader_and_isr(replicas: Sequence[int], live: Set[int]) -> tuple[int, list[int]]:
    """A new partition's leader (its first live replica, -1 when none is live) and in-sync replicas
    (its live replicas; all of them when none is live, so that the first to come back may lead)."""
    in_sync = [r for r in replicas if r in live]
    return (in_sync[0], in_sync) if in_sync else (NO_LEADER, list(replicas))


def next_leader_and_isr(
    replicas: Sequence[int], leader: int, isr: Sequence[int], live: Set[int], unclean: bool = False
) -> tuple[int, list[int]] | None:
    """The leader and in-sync replicas a partition should have now that ``live`` are the live
    brokers (None when its state node is right as it is), as Kafka's controller elects: a live
    leader stays and loses its dead in-sync followers; a dead leader is replaced by the first live
    in-sync replica in replica order, the dead ones leaving the ISR; with no live in-sync replica,
    the first live replica leads alone if ``unclean`` (``unclean.leader.election.enable``: records
    only the old ISR had are lost), else the partition has no leader and keeps its ISR, waiting for
    one of them."""
    if leader in live:
        alive = [r for r in isr if r in live]
        return None if alive == list(isr) else (leader, alive)
    candidates = [r for r in replicas if r in isr and r in live]
    if candidates:
        return candidates[0], [r for r in isr if r in live]
    out_of_sync = [r for r in replicas if r in live]
    if unclean and out_of_sync:
        log.warning(
            "unclean leader election: broker %d leads without the records only %s had", out_of_sync[0], list(isr)
        )
        return out_of_sync[0], [out_of_sync[0]]
    return None if leader == NO_LEADER else (NO_LEADER, list(isr))


UNCLEAN_ELECTION = "unclean.leader.election.enable"


class ControllerMoved(Exception):
    """``/controller_epoch`` is no longer this controller's: another broker is controller."""


class Raced(Exception):
    """A node changed under the controller's transaction: it reads everything again."""


class Controller:
    def __init__(self, client: KazooClient, connect: ZooKeeperConnect, broker_id: int):
        self._client = client
        self._connect = connect
        self.broker_id = broker_id
        # (controller epoch, version of /controller_epoch) while this broker is controller
        self._office: tuple[int, int] | None = None
        self._thread = RerunThread("controller", self._act, (KazooException, Raced))
        self._started = False
        self._waiting_deletions: set[str] = set()  # logged once each

    def elected(self, epoch: int, epoch_version: int) -> None:
        """This broker won the election at ``epoch`` (``/controller_epoch`` now at ``epoch_version``)."""
        self._office = (epoch, epoch_version)
        if not self._started:
            self._started = True
            self._thread.start()
        self._thread.wake()

    def resign(self) -> None:
        """Another broker is controller now."""
        if self._office is not None:
            log.info("broker %d is no longer the controller", self.broker_id)
        self._office = None

    def stop(self) -> None:
        self._thread.stop()

    def _act(self) -> None:
        office = self._office
        if office is None:
            return
        try:
            self._reconcile(*office)
        except ControllerMoved:
            self.resign()

    def _path(self, path: str) -> str:
        return self._connect.path(path)

    def _reconcile(self, epoch: int, epoch_version: int) -> None:
        client = self._client
        live = {int(i) for i in client.get_children(self._path(BROKER_IDS_PATH), watch=self._thread.wake)}
        marked = set(client.get_children(self._path(DELETE_TOPICS_PATH), watch=self._thread.wake))
        names = client.get_children(self._path(TOPICS_PATH), watch=self._thread.wake)
        pending = {name: client.get_async(self._path(topic_path(name)), watch=self._thread.wake) for name in names}
        unclean = self._unclean_election_topics(names)
        for name, result in pending.items():
            try:
                replicas = parse_topic_assignment(result.get()[0])
            except NoNodeError:  # deleted meanwhile
                continue
            except ValueError as exc:
                log.error("topic %r cannot be served: %s", name, exc)
                continue
            if name in marked:
                self._delete_topic(name, replicas, live, epoch_version)
            else:
                self._elect_leaders(name, replicas, live, epoch, epoch_version, name in unclean)
        for name in marked - set(names):  # the topic is gone already: only the mark is left
            self._commit([("delete", self._path(f"{DELETE_TOPICS_PATH}/{name}"))], epoch_version)

    def _unclean_election_topics(self, names: list[str]) -> set[str]:
        """The topics whose ``unclean.leader.election.enable`` is true: set on the topic, else in the
        dynamic cluster-wide broker default (a broker's static setting is not read here)."""
        paths = [f"{TOPIC_CONFIGS_PATH}/{name}" for name in names] + [f"{BROKER_CONFIGS_PATH}/{DEFAULT_BROKER_CONFIG}"]
        pending = [self._client.get_async(self._path(path)) for path in paths]
        enabled: list[str | None] = []
        for result in pending:
            try:
                enabled.append(parse_config(result.get()[0]).get(UNCLEAN_ELECTION))
            except (NoNodeError, ValueError):
                enabled.append(None)
        default = enabled.pop()
        return {name for name, value in zip(names, enabled, strict=True) if (value or default or "false") == "true"}

    def _states(self, name: str, partitions: int) -> list[tuple[PartitionStateNode, int] | None]:
        """Each partition's (leader, leader epoch, isr, controller epoch) and its node's version, None
        where it has no state node."""
        pending = [self._client.get_async(self._path(partition_state_path(name, p))) for p in range(partitions)]
        states: list[tuple[PartitionStateNode, int] | None] = []
        for result in pending:
            try:
                data, stat = result.get()
                states.append((parse_partition_state(data), stat.version))
            except NoNodeError:
                states.append(None)
        return states

    def _elect_leaders(
        self, name: str, replicas: list, live: set, epoch: int, epoch_version: int, unclean: bool
    ) -> None:
        operations: list[tuple] = []
        states = self._states(name, len(replicas))
        partitions_path = self._path(f"{topic_path(name)}/partitions")
        if any(state is None for state in states) and not self._client.exists(partitions_path):
            operations.append(("create", partitions_path, b""))
        for partition, (replica_list, found) in enumerate(zip(replicas, states, strict=True)):
            path = self._path(partition_state_path(name, partition))
            if found is None:
                leader, isr = initial_leader_and_isr(replica_list, live)
                operations.append(("create", path.rsplit("/", 1)[0], b""))
                operations.append(("create", path, partition_state_json(leader, 0, isr, epoch)))
                continue
            (old_leader, leader_epoch, old_isr, _), version = found
            elected = next_leader_and_isr(replica_list, old_leader, old_isr, live, unclean)
            if elected is None:
                continue
            leader, isr = elected
            new_epoch = leader_epoch + 1 if leader != old_leader else leader_epoch
            operations.append(("set_data", path, partition_state_json(leader, new_epoch, isr, epoch), version))
            if leader != old_leader:
                log.info(
                    "%s-%d: leader %d at leader epoch %d, isr %s (was led by %d)",
                    name,
                    partition,
                    leader,
                    new_epoch,
                    list(isr),
                    old_leader,
                )
        if operations:
            self._commit(operations, epoch_version)

    def _delete_topic(self, name: str, replicas: list, live: set, epoch_version: int) -> None:
        away = sorted({r for replica_list in replicas for r in replica_list} - live)
        if away:
            if name not in self._waiting_deletions:
                self._waiting_deletions.add(name)
                log.info("topic %r is marked for deletion; waiting for broker(s) %s to return", name, away)
            return
        self._waiting_deletions.discard(name)
        operations = []
        for partition, state in enumerate(self._states(name, len(replicas))):
            if state is not None:
                operations.append(("delete", self._path(partition_state_path(name, partition))))
                operations.append(("delete", self._path(f"{topic_path(name)}/partitions/{partition}")))
        if self._client.exists(self._path(f"{topic_path(name)}/partitions")):
            operations.append(("delete", self._path(f"{topic_path(name)}/partitions")))
        operations.append(("delete", self._path(topic_path(name))))
        if self._client.exists(self._path(f"{TOPIC_CONFIGS_PATH}/{name}")):
            operations.append(("delete", self._path(f"{TOPIC_CONFIGS_PATH}/{name}")))
        operations.append(("delete", self._path(f"{DELETE_TOPICS_PATH}/{name}")))
        self._commit(operations, epoch_version)
        log.info("deleted topic %r", name)

    def _commit(self, operations: list, epoch_version: int) -> None:
        """``operations`` in one transaction, if ``/controller_epoch`` is still this controller's."""
        transaction = self._client.transaction()
        transaction.check(self._path(CONTROLLER_EPOCH_PATH), epoch_version)
        for kind, path, *data in operations:
            getattr(transaction, kind)(path, *data)
        results = transaction.commit()
        if isinstance(results[0], BadVersionError):
            raise ControllerMoved()
        failure = next((r for r in results if isinstance(r, Exception)), None)
        if failure is not None:
            raise Raced(f"a change in ZooKeeper raced with the controller's own: {failure!r}")
