"""Where a broker's ACLs are kept: the ``AclStore`` contract, and ``LocalAcls``, a single broker's
ACLs kept in the log directory as ``acls.json`` (a broker in a cluster keeps them in ZooKeeper's
``/kafka-acl`` as Kafka does: ``broker.cluster.zookeeper_acls.ZooKeeperAcls``, the other
``AclStore``).

CreateAcls and DeleteAcls change them through ``add`` and ``remove``: ``LocalAcls`` writes the file
atomically (aside, then renamed) before the change is visible, so an acknowledged change survives
a crash, and the authorizer sees it at the next decision. Only the broker writes the file; an
unreadable file stops the broker at start with one line naming it (starting without the ACLs
would open every resource they close).
"""

import json
import os
import threading
from typing import Protocol

from broker.common.files import write_atomically

from .acls import Acl, AclError, AclFilter, Operation, PatternType, Permission, ResourceType

FILE_NAME = "acls.json"
_VERSION = 1


class AclStoreError(Exception):
    """The ACL file cannot be read or written; the message names it."""


class AclStore(Protocol):
    """The ACLs of a broker, wherever they are kept: the handlers and the authorizer cannot tell the
    implementations apart. Reads come from any thread; changes run one at a time on the I/O pool and
    raise ``AclStoreError`` when the ACLs cannot be written (then nothing changed)."""

    def acls(self) -> tuple[Acl, ...]:
        """Every ACL, as of now (a tuple replaced whole by each change: safe to read from any thread)."""
        ...

    def matching(self, acl_filter: AclFilter) -> list[Acl]:
        """The ACLs ``acl_filter`` matches."""
        ...

    def add(self, acls: list[Acl]) -> None:
        """Store the ACLs (one already stored is kept once); seen by ``acls()`` once this returns."""
        ...

    def remove(self, filters: list[AclFilter]) -> list[list[Acl]]:
        """Remove the ACLs each filter matches; per filter, the ACLs it removed."""
        ...

    def stop(self) -> None:
        """Stop following changes made elsewhere (the broker stops)."""
        ...


class LocalAcls:
    """A single broker's ACLs in ``acls.json`` of its log directory."""

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, FILE_NAME)
        self._lock = threading.Lock()  # one change at a time (changes run on the I/O pool)
        self._acls: tuple[Acl, ...] = self._read()

    def stop(self) -> None:
        """Nothing to stop: the file is read once, at start (``ZooKeeperAcls`` follows ZooKeeper)."""

    def acls(self) -> tuple[Acl, ...]:
        """Every ACL, as of now (a tuple replaced whole by each change: safe to read from any thread)."""
        return self._acls

    def matching(self, acl_filter: AclFilter) -> list[Acl]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def add(self, acls: list[Acl]) -> None:
        """Store the ACLs (one already stored is kept once)."""
        with self._lock:
            self._replace(tuple(dict.fromkeys(self._acls + tuple(acls))))

    def remove(self, filters: list[AclFilter]) -> list[list[Acl]]:
        """Remove the ACLs each filter matches; per filter, the ACLs it removed."""
        with self._lock:
            removed = [[acl for acl in self._acls if acl_filter.matches(acl)] for acl_filter in filters]
            gone = {acl for acls in removed for acl in acls}
            if gone:
                self._replace(tuple(acl for acl in self._acls if acl not in gone))
            return removed

    def _replace(self, acls: tuple[Acl, ...]) -> None:
        entries = [
            {
                "resource_type": acl.resource_type.name,
                "name": acl.name,
                "pattern_type": acl.pattern_type.name,
                "principal": acl.principal,
                "host": acl.host,
                "operation": acl.operation.name,
                "permission": acl.permission.name,
            }
            for acl in acls
        ]
        data = json.dumps({"version": _VERSION, "acls": entries}, indent=1)
        try:
            write_atomically(self.path, data.encode())
        except OSError as exc:
            raise AclStoreError(f"{self.path}: {exc.strerror or exc}") from None
        self._acls = acls

    def _read(self) -> tuple[Acl, ...]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("version") != _VERSION or not isinstance(data.get("acls"), list):
                raise ValueError("unknown layout")
            return tuple(
                Acl.checked(
                    ResourceType[e["resource_type"]],
                    e["name"],
                    PatternType[e["pattern_type"]],
                    e["principal"],
                    e["host"],
                    Operation[e["operation"]],
                    Permission[e["permission"]],
                )
                for e in data["acls"]
            )
        except FileNotFoundError:
            return ()
        except OSError as exc:
            raise AclStoreError(f"{self.path}: {exc.strerror or exc}") from None
        except (ValueError, KeyError, TypeError, AttributeError, AclError) as exc:
            raise AclStoreError(f"{self.path}: unreadable ACLs ({exc})") from None
