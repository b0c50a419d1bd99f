"""The authorizer's rules, decided on ACL values alone (``broker.security.acls``): literal, wildcard
and prefixed patterns, deny beats allow, implied Describe/DescribeConfigs, super users,
``allow.everyone.if.no.acl.found`` both ways, hosts, ``User:*``; filters as DescribeAcls and
DeleteAcls use them; invalid ACLs refused with a reason. The stores that keep ACLs are tested in
``tests/cluster/test_acl_stores.py``."""

import pytest

from broker.common.settings import ConfigError
from broker.security.acls import (
    CLUSTER_NAME,
    Acl,
    AclError,
    AclFilter,
    Authorizer,
    AuthorizerSettings,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
ALICE, HOST = "User:alice", "10.0.0.5"


def acl(kind, name, op, permission=ALLOW, pattern=LIT, principal=ALICE, host="*") -> Acl:
    return Acl.checked(kind, name, pattern, principal, host, op, permission)


def authorizer(*acls, super_users=(), allow_everyone=False) -> Authorizer:
    return Authorizer(AuthorizerSettings(True, frozenset(super_users), allow_everyone), lambda: acls)


def allows(auth, op, kind, name, principal=ALICE, host=HOST) -> bool:
    return auth.authorize(principal, host, op, kind, name)


def test_without_an_authorizer_everything_is_allowed():
    auth = Authorizer(AuthorizerSettings(), lambda: (acl(T, "t", Operation.READ, DENY),))
    assert allows(auth, Operation.READ, T, "t")
    assert auth.authorized_operations(ALICE, HOST, T, "t") == {
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    }


def test_literal_wildcard_and_prefixed_patterns():
    auth = authorizer(
        acl(T, "orders", Operation.READ), acl(T, "etl.", Operation.WRITE, pattern=PRE), acl(G, "*", Operation.READ)
    )
    assert allows(auth, Operation.READ, T, "orders")
    assert not allows(auth, Operation.READ, T, "orders2")
    assert allows(auth, Operation.WRITE, T, "etl.clicks")
    assert not allows(auth, Operation.WRITE, T, "etl")
    assert allows(auth, Operation.READ, G, "any-group")
    assert not allows(auth, Operation.WRITE, T, "orders")


def test_deny_beats_allow_and_all_covers_every_operation():
    auth = authorizer(acl(T, "*", Operation.ALL), acl(T, "secret", Operation.READ, DENY))
    assert allows(auth, Operation.WRITE, T, "secret")
    assert not allows(auth, Operation.READ, T, "secret")
    assert allows(auth, Operation.DESCRIBE, T, "secret")  # a deny of Read does not deny Describe, as in Kafka
    auth = authorizer(acl(T, "*", Operation.ALL), acl(T, "sec", Operation.ALL, DENY, pattern=PRE))
    assert not allows(auth, Operation.DESCRIBE, T, "secret")
    assert allows(auth, Operation.DESCRIBE, T, "public")


@pytest.mark.parametrize("granted", [Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER])
def test_describe_is_implied(granted):
    auth = authorizer(acl(T, "t", granted))
    assert allows(auth, Operation.DESCRIBE, T, "t")
    assert not allows(auth, Operation.DESCRIBE_CONFIGS, T, "t")


def test_describe_configs_is_implied_by_alter_configs_only():
    auth = authorizer(acl(C, CLUSTER_NAME, Operation.ALTER_CONFIGS))
    assert allows(auth, Operation.DESCRIBE_CONFIGS, C, CLUSTER_NAME)
    assert not allows(auth, Operation.DESCRIBE, C, CLUSTER_NAME)


def test_super_users_and_allow_everyone_if_no_acl_found():
    auth = authorizer(acl(T, "t", Operation.READ, DENY, principal="User:*"), super_users={"User:admin"})
    assert allows(auth, Operation.READ, T, "t", principal="User:admin")
    assert not allows(auth, Operation.READ, T, "other")  # no ACL on it: closed by default
    open_auth = authorizer(acl(T, "t", Operation.READ, principal="User:bob"), allow_everyone=True)
    assert allows(open_auth, Operation.READ, T, "other")  # no ACL names it
    assert not allows(open_auth, Operation.READ, T, "t")  # ACLs name it, none for alice


def test_principal_wildcard_and_hosts():
    auth = authorizer(acl(T, "t", Operation.READ, principal="User:*", host=HOST))
    assert allows(auth, Operation.READ, T, "t", principal="User:bob")
    assert not allows(auth, Operation.READ, T, "t", host="10.0.0.6")
    ipv6 = authorizer(acl(T, "t", Operation.READ, host="0:0::1"))
    assert allows(ipv6, Operation.READ, T, "t", host="::1")


def test_authorized_operations_and_authorize_any():
    auth = authorizer(acl(T, "t", Operation.WRITE), acl(T, "t", Operation.ALTER_CONFIGS))
    assert auth.authorized_operations(ALICE, HOST, T, "t") == {
        Operation.WRITE,
        Operation.DESCRIBE,
        Operation.ALTER_CONFIGS,
        Operation.DESCRIBE_CONFIGS,
    }
    assert auth.authorize_any(ALICE, HOST, Operation.WRITE, T)
    assert not auth.authorize_any("User:bob", HOST, Operation.WRITE, T)
    denied = authorizer(acl(T, "t", Operation.WRITE), acl(T, "*", Operation.WRITE, DENY))
    assert not denied.authorize_any(ALICE, HOST, Operation.WRITE, T)


@pytest.mark.parametrize(
    "values, reason",
    [
        ((T, "", LIT, ALICE, "*", Operation.READ, ALLOW), "empty"),
        ((T, "t", PatternType.MATCH, ALICE, "*", Operation.READ, ALLOW), "LITERAL or PREFIXED"),
        ((T, "t", LIT, "alice", "*", Operation.READ, ALLOW), "User:<name>"),
        ((T, "t", LIT, ALICE, "example.com", Operation.READ, ALLOW), "IP address"),
        ((G, "g", LIT, ALICE, "*", Operation.WRITE, ALLOW), "does not apply to a GROUP"),
        ((C, "other", LIT, ALICE, "*", Operation.CREATE, ALLOW), "kafka-cluster"),
        ((T, "t", LIT, ALICE, "*", Operation.ANY, ALLOW), "does not apply"),
        ((T, "t", LIT, ALICE, "*", Operation.READ, Permission.ANY), "ALLOW or DENY"),
        ((9, "t", LIT, ALICE, "*", Operation.READ, ALLOW), "unknown"),
    ],
)
def test_invalid_acls_are_refused_with_a_reason(values, reason):
    with pytest.raises(AclError, match=reason):
        Acl.checked(*values)


def test_filters_match_as_kafka_binding_filters():
    literal, prefixed, wildcard = (
        acl(T, "orders", Operation.READ),
        acl(T, "ord", Operation.WRITE, pattern=PRE),
        acl(T, "*", Operation.DESCRIBE),
    )
    every = (literal, prefixed, wildcard, acl(G, "orders", Operation.READ))

    def matched(*values):
        return [a for a in every if AclFilter.checked(*values).matches(a)]

    assert matched(T, "orders", PatternType.MATCH, None, None, Operation.ANY, Permission.ANY) == [
        literal,
        prefixed,
        wildcard,
    ]
    assert matched(T, "orders", PatternType.ANY, None, None, Operation.ANY, Permission.ANY) == [literal]
    assert matched(T, None, PRE, None, None, Operation.ANY, Permission.ANY) == [prefixed]
    assert matched(ResourceType.ANY, "orders", LIT, ALICE, "*", Operation.READ, ALLOW) == [literal, every[3]]
    assert matched(T, None, PatternType.ANY, "User:bob", None, Operation.ANY, Permission.ANY) == []


def test_settings_by_kafka_names():
    settings = AuthorizerSettings.from_properties(
        {
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin; User:ops",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    assert settings == AuthorizerSettings(True, frozenset({"User:admin", "User:ops"}), True)
    assert not AuthorizerSettings.from_properties({}).enabled
    with pytest.raises(ConfigError, match="super.users: principal 'admin'"):
        AuthorizerSettings.from_properties({"super.users": "admin"})
    with pytest.raises(ConfigError, match="allow.everyone.if.no.acl.found"):
        AuthorizerSettings.from_properties({"allow.everyone.if.no.acl.found": "yes"})
