"""The ACLs of a cluster, kept in ZooKeeper as Kafka keeps them: an ``AclStore``
(``broker.security.acl_store``) as the single broker's ``LocalAcls`` is (the handlers and the
authorizer cannot tell them apart).

Each resource pattern is one node holding its ACLs as Kafka's JSON: ``/kafka-acl/<ResourceType>/<name>``
for literal patterns, ``/kafka-acl-extended/prefixed/<ResourceType>/<prefix>`` for prefixed ones.
A change rewrites each node it touches with compare-and-set on the node's version (read again and
retried when another broker changed it meanwhile; a node left without ACLs is deleted), then
announces itself as Kafka does with a sequential node under ``/kafka-acl-changes`` (literal) or
``/kafka-acl-extended-changes`` (prefixed), removing the notifications older than 15 minutes. A
resource name holding ``/`` is refused (its node would be below another one).

Every broker watches both: a new notification wakes a thread that reads all the ACL nodes again
and replaces the tuple the authorizer indexes. The broker making a change reads them again before
it answers, so its own change is seen at once.
"""

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.protocol.states import WatchedEvent

from broker.security.acl_store import AclStoreError
from broker.security.acls import Acl, AclFilter, PatternType, ResourceType

from .rerun_thread import RerunThread
from .zookeeper_data import (
    ACL_CHANGE_PREFIX,
    ACL_CHANGES_PATH,
    ACL_PATH,
    EXTENDED_ACL_CHANGES_PATH,
    PREFIXED_ACL_PATH,
    ZooKeeperConnect,
    acl_change_json,
    acl_resource_path,
    acls_json,
    kafka_name,
    parse_acls,
)

NOTIFICATION_EXPIRY_MS = 15 * 60 * 1000  # as Kafka's
_ROOTS = ((ACL_PATH, PatternType.LITERAL), (PREFIXED_ACL_PATH, PatternType.PREFIXED))


class ZooKeeperAcls:
    def __init__(
        self, client: KazooClient, connect: ZooKeeperConnect, notification_expiry_ms: int = NOTIFICATION_EXPIRY_MS
    ):
        self._client = client
        self._connect = connect
        self._notification_expiry_ms = notification_expiry_ms
        self._change_lock = threading.Lock()  # one change at a time on this broker (others: compare-and-set)
        self._read_lock = threading.Lock()  # reads publish in the order they were made
        self._acls: tuple[Acl, ...] = ()
        self._thread = RerunThread("zookeeper-acls", self.refresh, (KazooException, AclStoreError))
        with _zookeeper("read the ACLs"):
            for path in (ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH):
                self._client.ensure_path(self._path(path))
        self.refresh()  # before the listeners: no request is served without the ACLs
        self._thread.start()

    def acls(self) -> tuple[Acl, ...]:
        """Every ACL, as last read (a tuple replaced whole by each read: safe to read from any thread)."""
        return self._acls

    def matching(self, acl_filter: AclFilter) -> list[Acl]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def changed(self, event: WatchedEvent | None = None) -> None:
        """A notification came (or the session is new and its watches are gone): read the ACLs again."""
        self._thread.wake()

    def stop(self) -> None:
        self._thread.stop()

    def add(self, acls: list[Acl]) -> None:
        """Store the ACLs (one already stored is kept once)."""
        nested = next((acl.name for acl in acls if "/" in acl.name), None)
        if nested is not None:  # it would name a node below another resource's
            raise AclStoreError(f"resource name {nested!r} holds '/', which cannot be part of a ZooKeeper node's name")
        with self._change_lock, _zookeeper("store ACLs"):
            for pattern, new in _by_pattern(acls).items():
                self._update(pattern, functools.partial(_adding, new))
            self.refresh()

    def remove(self, filters: list[AclFilter]) -> list[list[Acl]]:
        """Remove the ACLs each filter matches; per filter, the ACLs it removed."""
        with self._change_lock, _zookeeper("remove ACLs"):
            self.refresh()
            removed = [self.matching(acl_filter) for acl_filter in filters]
            gone = {acl for acls in removed for acl in acls}
            for pattern in _by_pattern(gone):
                self._update(pattern, lambda stored: [acl for acl in stored if acl not in gone])
            self.refresh()
            return removed

    def refresh(self) -> None:
        """Read every ACL node again (watching the change notifications anew) and publish them."""
        with self._read_lock, _zookeeper("read the ACLs"):
            for path in (ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH):
                self._client.get_children(self._path(path), watch=self.changed)
            nodes = [
                (kind, name, pattern_type, f"{root}/{kind}/{name}")
                for root, pattern_type in _ROOTS
                for kind in self._children(root)
                for name in self._children(f"{root}/{kind}")
            ]
            reads = [self._client.get_async(self._path(path)) for *_, path in nodes]
            acls = []
            for (kind, name, pattern_type, path), read in zip(nodes, reads, strict=True):
                try:
                    data, _ = read.get()
                except NoNodeError:  # removed since it was listed
                    continue
                try:
                    acls.extend(parse_acls(kind, name, pattern_type, data))
                except ValueError as exc:
                    raise AclStoreError(f"ZooKeeper node {self._path(path)}: {exc}") from None
            self._acls = tuple(acls)

    # -- helpers ----------------------------------------------------------------------------

    def _path(self, path: str) -> str:
        return self._connect.path(path)

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self._client.get_children(self._path(path)))
        except NoNodeError:
            return []

    def _update(self, pattern: Acl, change: Callable[[list[Acl]], list[Acl]]) -> None:
        """Rewrite the node of ``pattern``'s resource with ``change(its ACLs)``, compare-and-set, and
        announce it; another broker's change in between makes it read the node again."""
        path = self._path(acl_resource_path(pattern))
        while True:
            try:
                data, stat = self._client.get(path)
                stored, version = parse_acls(*_node_key(pattern), data), stat.version
            except NoNodeError:
                stored, version = [], None
            except ValueError as exc:
                raise AclStoreError(f"ZooKeeper node {path}: {exc}") from None
            acls = change(stored)
            if acls == stored:
                return
            try:
                if version is None:
                    self._client.create(path, acls_json(acls), makepath=True)
                elif acls:
                    self._client.set(path, acls_json(acls), version=version)
                else:
                    self._client.delete(path, version=version)
                break
            except (BadVersionError, NodeExistsError, NoNodeError, NotEmptyError):  # changed meanwhile
                continue
        changes = self._path(
            EXTENDED_ACL_CHANGES_PATH if pattern.pattern_type == PatternType.PREFIXED else ACL_CHANGES_PATH
        )
        self._client.create(f"{changes}/{ACL_CHANGE_PREFIX}", acl_change_json(pattern), sequence=True)
        self._remove_expired_notifications(changes)

    def _remove_expired_notifications(self, changes: str) -> None:
        """Notifications older than the expiry go, as Kafka's do (every broker read them long ago)."""
        expired_before = time.time() * 1000 - self._notification_expiry_ms
        for child in self._client.get_children(changes):
            stat = self._client.exists(f"{changes}/{child}")
            if stat is not None and stat.ctime < expired_before:
                with contextlib.suppress(NoNodeError):  # another broker removed it first
                    self._client.delete(f"{changes}/{child}")


def _adding(new: list[Acl], stored: list[Acl]) -> list[Acl]:
    """``stored`` and after it each ACL of ``new`` it does not hold yet, once."""
    return stored + [acl for acl in dict.fromkeys(new) if acl not in stored]


def _by_pattern(acls: Iterable[Acl]) -> dict[Acl, list[Acl]]:
    """The ACLs by resource pattern (each pattern as its first ACL)."""
    patterns: dict[tuple[ResourceType, str, PatternType], list[Acl]] = {}
    for acl in acls:
        patterns.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(acl)
    return {group[0]: group for group in patterns.values()}


def _node_key(pattern: Acl) -> tuple[str, str, PatternType]:
    return kafka_name(pattern.resource_type), pattern.name, pattern.pattern_type


@contextlib.contextmanager
def _zookeeper(what: str) -> Iterator[None]:
    """ZooKeeper failing under a read or change (connection lost, no permission) as an AclStoreError."""
    try:
        yield
    except KazooException as exc:
        raise AclStoreError(f"cannot {what} in ZooKeeper: {exc!r}") from None
