"""``kafkalog acls list|add|remove``: a cluster's ACLs, in the shape of Kafka's ``kafka-acls.sh``
(``--allow-principal``, ``--deny-principal``, ``--operation``, ``--topic``/``--group``/``--cluster``,
``--resource-pattern-type``, ``--host``), through a running broker's ACL APIs. ``add`` creates one
ACL per principal and operation; ``remove`` deletes the ACLs the options describe (an option left
out matches any value); ``list`` shows the ACLs of the resources given, or all of them.
"""

import argparse
import json
from collections.abc import Sequence

from broker.arguments import USAGE, Subcommands
from broker.client import AclClient, describe_text
from broker.security.acls import (
    CLUSTER_NAME,
    WILDCARD,
    Acl,
    AclError,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

from .common import OK, CommandError, add_command, add_format_argument, run
from .topics import text_table

PROG = "kafkalog acls"
_OPERATIONS = {op.name.replace("_", "").lower(): op for op in Operation if op > Operation.ANY}
_PATTERNS = ("literal", "prefixed", "match", "any")
_JSON_FIELDS = ("resourceType", "name", "patternType", "principal", "host", "operation", "permission")


def _operation(text: str) -> Operation:
    """Kafka's spelling (Read, DescribeConfigs, IdempotentWrite) or the enum's (DESCRIBE_CONFIGS)."""
    found = _OPERATIONS.get(text.replace("_", "").replace("-", "").lower())
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an operation (one of Read, Write, Create, Delete, Alter, "
            f"Describe, DescribeConfigs, AlterConfigs, IdempotentWrite, ClusterAction, "
            f"All)"
        )
    return found


def _resources(args) -> list[tuple[ResourceType, str]]:
    return (
        [(ResourceType.TOPIC, name) for name in args.topic or ()]
        + [(ResourceType.GROUP, name) for name in args.group or ()]
        + ([(ResourceType.CLUSTER, CLUSTER_NAME)] if args.cluster else [])
    )


def _principals(args) -> list[tuple[str, Permission]]:
    return [(p, Permission.ALLOW) for p in args.allow_principal or ()] + [
        (p, Permission.DENY) for p in args.deny_principal or ()
    ]


def _pattern(args, default: str) -> PatternType:
    return PatternType[(args.resource_pattern_type or default).upper()]


def _add(client, args) -> int:
    resources, principals = _resources(args), _principals(args)
    if not resources:
        raise CommandError("name a resource: --topic T, --group G or --cluster", USAGE)
    if not principals or not args.operation:
        raise CommandError("give --allow-principal or --deny-principal, and --operation", USAGE)
    pattern = _pattern(args, "literal")
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise CommandError("--resource-pattern-type of an ACL to add is literal or prefixed", USAGE)
    try:
        acls = [
            Acl.checked(kind, name, pattern, principal, args.host or WILDCARD, operation, permission)
            for kind, name in resources
            for principal, permission in principals
            for operation in args.operation
        ]
    except AclError as exc:
        raise CommandError(str(exc), USAGE) from None
    AclClient(client).create(acls)
    for acl in acls:
        print(f"added {describe_text(acl)}")
    return OK


def _filters(args, pattern_default: str) -> list[AclFilter]:
    resources: Sequence[tuple[ResourceType, str | None]] = _resources(args) or [(ResourceType.ANY, None)]
    principals: Sequence[tuple[str | None, Permission]] = _principals(args) or [(None, Permission.ANY)]
    operations = args.operation or [Operation.ANY]
    pattern = _pattern(args, pattern_default)
    try:
        return [
            AclFilter.checked(kind, name, pattern, principal, args.host, operation, permission)
            for kind, name in resources
            for principal, permission in principals
            for operation in operations
        ]
    except AclError as exc:
        raise CommandError(str(exc), USAGE) from None


def _remove(client, args) -> int:
    if not _resources(args):
        raise CommandError("name a resource: --topic T, --group G or --cluster", USAGE)
    removed = AclClient(client).delete(_filters(args, "literal"))
    for acl in removed:
        print(f"removed {describe_text(acl)}")
    if not removed:
        print("no ACL matched")
    return OK


def _list(client, args) -> int:
    acls = AclClient(client)
    found = list(dict.fromkeys(acl for acl_filter in _filters(args, "any") for acl in acls.describe(acl_filter)))
    rows = [
        [
            acl.resource_type.name,
            acl.name,
            acl.pattern_type.name,
            acl.principal,
            acl.host,
            acl.operation.name,
            acl.permission.name,
        ]
        for acl in found
    ]
    if args.format == "json":
        for row in rows:
            print(json.dumps(dict(zip(_JSON_FIELDS, row, strict=True))))
    elif rows:
        print(text_table([["resource", "name", "pattern", "principal", "host", "operation", "permission"]] + rows))
    return OK


def _verb(verbs, name: str, summary: str, description: str, examples: list[str], action, pattern_help: str):
    parser = add_command(verbs, name, summary, description, examples)
    parser.set_defaults(func=lambda args: run(f"{PROG} {name}", args, action))
    parser.add_argument("--topic", action="append", metavar="TOPIC", help="a topic (repeatable; * for every topic)")
    parser.add_argument("--group", action="append", metavar="GROUP", help="a consumer group (repeatable; * for all)")
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        type=str.lower,
        choices=_PATTERNS[:2] if name == "add" else _PATTERNS,
        help=pattern_help,
    )
    parser.add_argument(
        "--allow-principal", action="append", metavar="PRINCIPAL", help="User:NAME, or User:* for everyone (repeatable)"
    )
    parser.add_argument("--deny-principal", action="append", metavar="PRINCIPAL", help="the same, for DENY ACLs")
    parser.add_argument(
        "--operation",
        action="append",
        type=_operation,
        metavar="OPERATION",
        help="Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs, "
        "IdempotentWrite, ClusterAction or All (repeatable)",
    )
    parser.add_argument(
        "--host",
        metavar="HOST",
        help="the client's IP address the ACL is for" + (" (default *: any)" if name == "add" else ""),
    )
    return parser


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "acls",
        help="list, add and remove ACLs (the broker's authorizer)",
        description="ACLs, as kafka-acls.sh manages them.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = _verb(
        verbs,
        "list",
        "list ACLs",
        "List the ACLs of the resources given (or every ACL).",
        [
            "kafkalog acls list --bootstrap-server 127.0.0.1:9092",
            "kafkalog acls list --topic orders --resource-pattern-type match",
            "kafkalog acls list --format json | jq 'select(.principal == \"User:etl\")'",
        ],
        _list,
        "which patterns to list: any (the default), match (every ACL that applies to the named resource), "
        "literal or prefixed",
    )
    add_format_argument(listing, "one JSON object per ACL: {" + ", ".join(f'"{f}"' for f in _JSON_FIELDS) + "}")
    _verb(
        verbs,
        "add",
        "add ACLs",
        "Add one ACL per principal, operation and resource given.",
        [
            "kafkalog acls add --allow-principal User:etl --operation Read --operation Describe --topic orders",
            "kafkalog acls add --allow-principal User:etl --operation Read --group loaders- "
            "--resource-pattern-type prefixed",
            "kafkalog acls add --deny-principal User:guest --operation All --topic '*' --host 10.0.0.5",
        ],
        _add,
        "literal (the default) or prefixed (every name that starts with the one given)",
    )
    _verb(
        verbs,
        "remove",
        "remove ACLs",
        "Remove the ACLs of the resource that match the options given\n"
        "(a principal, operation or host left out matches any).",
        [
            "kafkalog acls remove --allow-principal User:etl --operation Read --topic orders",
            "kafkalog acls remove --topic orders",
        ],
        _remove,
        "literal (the default), prefixed, match or any",
    )
