"""Kafka's authorization model: ACLs (who may do what on which resources) and the authorizer that
answers "may this principal, from this host, do this operation on this resource?" (sans-I/O; the
ACLs come from ``acl_store``).

An ACL (Kafka's AclBinding) names a resource pattern (a topic, group, cluster or transactional id;
a literal name, ``*`` for every name, or a prefix), a principal (``User:alice`` or ``User:*``), a
host (``*`` or an IP address), an operation and ALLOW or DENY. As in Kafka's AclAuthorizer: super
users may do everything; a resource no ACL names is open to everyone only with
``allow.everyone.if.no.acl.found``; a matching DENY wins over any ALLOW; ALL stands for every
operation; an ALLOW of Read, Write, Delete or Alter also allows Describe, and one of AlterConfigs
also allows DescribeConfigs.
"""

import dataclasses
import enum
import ipaddress
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from broker.common.settings import ConfigError, boolean_setting

log = logging.getLogger(__name__)

CLUSTER_NAME = "kafka-cluster"  # the one cluster resource's name, as in Kafka
WILDCARD = "*"  # a literal resource name, principal name or host that matches every one
USER_PREFIX = "User:"


class AclError(ValueError):
    """An ACL or filter that is not valid; the message says why."""


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6  # Kafka's; no API here acts on these two
    USER = 7


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13  # Kafka's delegation-token operations; no API here needs them
    DESCRIBE_TOKENS = 14


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = Operation
SUPPORTED_OPERATIONS = {  # what each resource type knows, as Kafka's ResourceType/AclEntry say
    ResourceType.TOPIC: frozenset(
        {Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
    ),
    ResourceType.GROUP: frozenset({Op.READ, Op.DESCRIBE, Op.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            Op.CREATE,
            Op.ALTER,
            Op.DESCRIBE,
            Op.CLUSTER_ACTION,
            Op.DESCRIBE_CONFIGS,
            Op.ALTER_CONFIGS,
            Op.IDEMPOTENT_WRITE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({Op.DESCRIBE, Op.WRITE}),
}
_IMPLIED_BY = {  # an ALLOW of any of these operations also allows the key
    Op.DESCRIBE: frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}),
}


def operations_bits(operations: Iterable[Operation]) -> int:
    """Kafka's authorized-operations bit field: bit n set for the operation of code n."""
    return sum(1 << op for op in set(operations))


def parse_principal(text: str) -> str:
    """``User:name`` (the only principal type Kafka's authorizer knows), checked."""
    kind, sep, name = text.partition(":")
    if not sep or not name or kind != USER_PREFIX[:-1]:
        raise AclError(f"principal {text!r} is not User:<name> (for example User:alice, or User:* for everyone)")
    return text


def parse_host(text: str) -> str:
    """``*`` or an IP address (normalised, so ``::1`` and ``0:0::1`` are one host)."""
    if text == WILDCARD:
        return text
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise AclError(f"host {text!r} is not * or an IP address (for example 10.0.0.5)") from None


@dataclasses.dataclass(frozen=True)
class Acl:
    """One ACL (Kafka's AclBinding): a resource pattern and an access control entry."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def checked(
        cls,
        resource_type: int,
        name: str,
        pattern_type: int,
        principal: str,
        host: str,
        operation: int,
        permission: int,
    ) -> "Acl":
        """An ACL from the values a client sent or the store holds (AclError if one is not valid)."""
        resource_type = _member(ResourceType, resource_type, "resource type")
        if resource_type not in SUPPORTED_OPERATIONS:
            raise AclError(f"resource type {resource_type.name} is not TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID")
        pattern_type = _member(PatternType, pattern_type, "pattern type")
        if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclError(f"pattern type {pattern_type.name} is not LITERAL or PREFIXED")
        if not name:
            raise AclError("the resource name is empty")
        if resource_type == ResourceType.CLUSTER and (name != CLUSTER_NAME or pattern_type != PatternType.LITERAL):
            raise AclError(f"the cluster resource is the literal name {CLUSTER_NAME!r}, not {name!r}")
        operation = _member(Operation, operation, "operation")
        if operation != Op.ALL and operation not in SUPPORTED_OPERATIONS[resource_type]:
            known = ", ".join(sorted(op.name for op in SUPPORTED_OPERATIONS[resource_type]))
            raise AclError(f"operation {operation.name} does not apply to a {resource_type.name} (use ALL or {known})")
        permission = _member(Permission, permission, "permission type")
        if permission not in (Permission.ALLOW, Permission.DENY):
            raise AclError(f"permission type {permission.name} is not ALLOW or DENY")
        return cls(
            resource_type, name, pattern_type, parse_principal(principal), parse_host(host), operation, permission
        )

    def covers(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this ACL's resource pattern matches the resource."""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)

    def applies_to(self, principal: str, host: str) -> bool:
        return self.principal in (principal, USER_PREFIX + WILDCARD) and self.host in (host, WILDCARD)


@dataclasses.dataclass(frozen=True)
class AclFilter:
    """Which ACLs DescribeAcls and DeleteAcls mean (Kafka's AclBindingFilter): None or ANY match
    anything; pattern type MATCH means every ACL that would apply to the named resource."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    @classmethod
    def checked(
        cls,
        resource_type: int,
        name: str | None,
        pattern_type: int,
        principal: str | None,
        host: str | None,
        operation: int,
        permission: int,
    ) -> "AclFilter":
        values = (
            _member(ResourceType, resource_type, "resource type"),
            name,
            _member(PatternType, pattern_type, "pattern type"),
            principal,
            host,
            _member(Operation, operation, "operation"),
            _member(Permission, permission, "permission type"),
        )
        if any(value == 0 for value in values if isinstance(value, enum.IntEnum)):
            raise AclError("a filter with an UNKNOWN resource type, pattern type, operation or permission")
        return cls(*values)

    def matches(self, acl: Acl) -> bool:
        return (
            self.resource_type in (ResourceType.ANY, acl.resource_type)
            and self._matches_name(acl)
            and self.principal in (None, acl.principal)
            and self.host in (None, acl.host)
            and self.operation in (Op.ANY, acl.operation)
            and self.permission in (Permission.ANY, acl.permission)
        )

    def _matches_name(self, acl: Acl) -> bool:
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.name == acl.name
        return acl.covers(acl.resource_type, self.name)  # MATCH


_Enum = TypeVar("_Enum", bound=enum.IntEnum)


def _member(kind: type[_Enum], value: int, what: str) -> _Enum:
    try:
        return kind(value)
    except ValueError:
        raise AclError(f"{what} {value} is unknown") from None


@dataclasses.dataclass(frozen=True)
class AuthorizerSettings:
    """``authorizer.class.name`` (any name turns the authorizer on), ``super.users`` and
    ``allow.everyone.if.no.acl.found``, by Kafka's names."""

    enabled: bool = False
    super_users: frozenset = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    KEYS = ("authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found")

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> "AuthorizerSettings":
        super_users = frozenset(user.strip() for user in properties.get("super.users", "").split(";") if user.strip())
        for user in super_users:
            try:
                parse_principal(user)
            except AclError as exc:
                raise ConfigError(f"super.users: {exc} (users are separated by ';')") from None
        allow_everyone = boolean_setting(
            "allow.everyone.if.no.acl.found", properties.get("allow.everyone.if.no.acl.found", "false")
        )
        return cls(bool(properties.get("authorizer.class.name", "").strip()), super_users, allow_everyone)


class _Index:
    """One set of ACLs by the resources they cover: literal names (``*`` among them) looked up, the
    prefixes of a resource type scanned, so a decision does not read every ACL."""

    def __init__(self, acls: tuple):
        self.acls = acls
        self._literal: dict[tuple, list] = {}
        self._prefixed: dict[ResourceType, list] = {}
        for acl in acls:
            if acl.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(acl.resource_type, []).append(acl)
            else:
                self._literal.setdefault((acl.resource_type, acl.name), []).append(acl)

    def covering(self, resource_type: ResourceType, name: str) -> list:
        return (
            self._literal.get((resource_type, name), [])
            + self._literal.get((resource_type, WILDCARD), [])
            + [acl for acl in self._prefixed.get(resource_type, ()) if name.startswith(acl.name)]
        )


class Authorizer:
    """Decides requests against the ACLs of ``acls()`` (called at each decision, so a change is
    seen at once; the index is rebuilt when it returns another tuple). With the authorizer off
    everything is allowed, as in Kafka without one."""

    def __init__(self, settings: AuthorizerSettings, acls: Callable[[], tuple[Acl, ...]]):
        self.settings = settings
        self._acls = acls
        self._index = _Index(())

    def _current(self) -> _Index:
        acls = self._acls()
        index = self._index
        if index.acls is not acls:
            index = self._index = _Index(acls)  # a reference swap: safe with the I/O threads deciding too
        return index

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def authorize(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
        log_denied: bool = True,
    ) -> bool:
        allowed = self._decide(principal, host, operation, resource_type, name)
        if not allowed and log_denied:
            log.info(
                "principal %s from %s denied %s on %s %r", principal, host, operation.name, resource_type.name, name
            )
        return allowed

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> set:
        """The operations of the resource type the principal may do on the resource."""
        return {
            op for op in SUPPORTED_OPERATIONS[resource_type] if self._decide(principal, host, op, resource_type, name)
        }

    def authorize_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type (Kafka's
        authorizeByResourceType): an ALLOW it has that no DENY of its covers entirely."""
        if not self.settings.enabled or principal in self.settings.super_users:
            return True
        acls = [acl for acl in self._acls() if acl.resource_type == resource_type]
        if not acls:
            return self.settings.allow_everyone_if_no_acl_found
        mine = [acl for acl in acls if acl.applies_to(principal, host) and acl.operation in (operation, Op.ALL)]
        denied = [acl for acl in mine if acl.permission == Permission.DENY]
        return any(
            acl.permission == Permission.ALLOW and not any(_denies_all(deny, acl) for deny in denied) for acl in mine
        )

    def _decide(self, principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        if not self.settings.enabled or principal in self.settings.super_users:
            return True
        acls = self._current().covering(resource_type, name)
        if not acls:
            return self.settings.allow_everyone_if_no_acl_found
        mine = [acl for acl in acls if acl.applies_to(principal, host)]
        if any(acl.permission == Permission.DENY and acl.operation in (operation, Op.ALL) for acl in mine):
            return False
        allowing = _IMPLIED_BY.get(operation, frozenset({operation})) | {Op.ALL}
        return any(acl.permission == Permission.ALLOW and acl.operation in allowing for acl in mine)


def _denies_all(deny: Acl, allow: Acl) -> bool:
    """Whether the DENY covers every resource the ALLOW's pattern names."""
    if deny.pattern_type == PatternType.LITERAL:
        return deny.name == WILDCARD or (allow.pattern_type == PatternType.LITERAL and allow.name == deny.name)
    return allow.name.startswith(deny.name) and allow.name != WILDCARD
