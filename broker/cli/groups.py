"""``kafkalog groups list|describe|delete|delete-offsets|reset-offsets``: consumer groups, in the shape of Kafka's
``kafka-consumer-groups.sh``. ``describe`` shows each partition's committed offset, log end offset,
lag (negative for a committed offset above the end: a consumer resets it), and the member that
owns it; ``reset-offsets`` moves a group's committed offsets (to the earliest, the latest, a time,
an offset, or by a shift), a dry run unless ``--execute``, and only while the group has no active
members. Works against any Kafka cluster with a group coordinator.
"""

import argparse
import json
import sys
from collections.abc import Callable
from typing import TypeVar

from broker.arguments import Subcommands, timestamp_ms
from broker.client import EARLIEST, LATEST, GroupClient, GroupsUnsupportedError, KafkaClient, KafkaError
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode, error_name

from .common import (
    FAILED,
    OK,
    CommandError,
    add_format_argument,
    add_name_argument,
    add_verb,
    check_partition,
    partitions_of,
)
from .topics import text_table

PROG = "kafkalog groups"
NO_OFFSET = "-"
_MEMBERS_ACTIVE = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.REBALANCE_IN_PROGRESS}


def _list(client, args) -> int:
    for group, protocol_type in GroupClient(client).list_groups().items():
        print(json.dumps({"group": group, "protocolType": protocol_type}) if args.format == "json" else group)
    return OK


def _explained(error: KafkaError, group: str, topic: str | None = None) -> str:
    """What a group error means and what to do, in words, with Kafka's code name at the end."""
    name = error_name(error.code)
    if error.code == ErrorCode.NON_EMPTY_GROUP:
        return f"consumer group {group!r} has active members: stop its consumers, then try again ({name})"
    if error.code == ErrorCode.GROUP_ID_NOT_FOUND:
        return f"consumer group {group!r} does not exist (`kafkalog groups list` shows the groups) ({name})"
    if error.code == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC:
        return (
            f"consumer group {group!r} has active members subscribed to topic {topic}: its offsets of the topic "
            f"can be deleted only when no member reads it (stop its consumers first) ({name})"
        )
    return str(error)


def _members_or_none(groups: GroupClient, group: str, consequence: str | None):
    """The group's description, or None from a broker that cannot describe groups (said on stderr,
    with its ``consequence``, unless that is None)."""
    try:
        return groups.describe(group)
    except GroupsUnsupportedError as exc:
        if exc.api != ApiKey.DESCRIBE_GROUPS:
            raise
        if consequence:
            print(f"{PROG}: note: {exc}: {consequence}", file=sys.stderr)
        return None


def _describe(client, args) -> int:
    groups = GroupClient(client)
    names = list(groups.list_groups()) if args.all_groups else args.groups
    failed = False
    for number, group in enumerate(names):
        print("" if number == 0 or args.format == "json" else "\n", end="")
        try:
            _describe_group(client, groups, group, args.format, args.view)
        except CommandError as exc:
            print(f"{PROG} describe: {exc}", file=sys.stderr)
            failed = True
    if args.all_groups and not names:
        print(f"{PROG} describe: the cluster has no consumer groups", file=sys.stderr)
    return FAILED if failed else OK


def _describe_group(client, groups: GroupClient, group: str, form: str, view: str) -> None:
    description = _members_or_none(groups, group, "members are not shown" if view == "offsets" else None)
    committed = groups.committed(group)
    owners = {}
    for member in description.members if description else ():
        for topic, partitions in member.assignment.items():
            owners.update({(topic, p): member for p in partitions})
    if description is not None and description.state == "Dead" and not committed:
        raise CommandError(f"consumer group {group!r} does not exist")
    if view != "offsets":
        _describe_members(group, description, form, view)
        return
    partitions = sorted(set(committed) | set(owners))
    ends = _log_ends(client, partitions)
    rows = []
    for tp in partitions:
        offset = committed[tp].offset if tp in committed else None
        end = ends.get(tp)
        owner = owners.get(tp)
        rows.append(
            {
                "group": group,
                "topic": tp[0],
                "partition": tp[1],
                "currentOffset": offset,
                "logEndOffset": end,
                "lag": None if offset is None or end is None else end - offset,  # < 0 above the end
                "consumerId": owner.member_id if owner else None,
                "host": owner.host if owner else None,
                "clientId": owner.client_id if owner else None,
            }
        )
    state = description.state if description else None
    if not rows:
        print(
            f"{PROG} describe: consumer group {group!r} has no committed offsets and no assigned partitions",
            file=sys.stderr,
        )
    if form == "json":
        print(json.dumps({"group": group, "state": state, "partitions": rows}))
        return
    if state is not None:
        print(f"Consumer group {group!r} is {state}, with {len(description.members)} active members.")
    header = [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    print(
        text_table(
            [header]
            + [
                [
                    _shown(row[k])
                    for k in (
                        "group",
                        "topic",
                        "partition",
                        "currentOffset",
                        "logEndOffset",
                        "lag",
                        "consumerId",
                        "host",
                        "clientId",
                    )
                ]
                for row in rows
            ]
        )
    )


def _describe_members(group: str, description, form: str, view: str) -> None:
    """``--members`` (each member and how many partitions it has) or ``--state`` (the group's state,
    assignor and member count), as kafka-consumer-groups shows them."""
    if description is None:
        raise CommandError(f"--{view} needs a broker that can describe groups (DescribeGroups)")
    if view == "state":
        header, keys = (
            ["GROUP", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
            ["group", "assignmentStrategy", "state", "members"],
        )
        rows = [
            {
                "group": group,
                "assignmentStrategy": description.protocol or None,
                "state": description.state,
                "members": len(description.members),
            }
        ]
        shown = rows[0]
    else:
        header, keys = (
            ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
            ["group", "consumerId", "host", "clientId", "partitions"],
        )
        rows = [
            {
                "group": group,
                "consumerId": m.member_id,
                "host": m.host,
                "clientId": m.client_id,
                "partitions": sum(len(p) for p in m.assignment.values()),
            }
            for m in description.members
        ]
        shown = {"group": group, "state": description.state, "members": rows}
    if form == "json":
        print(json.dumps(shown))
    else:
        print(text_table([header] + [[_shown(row[k]) for k in keys] for row in rows]))


def _log_ends(client, partitions: list) -> dict:
    """``{(topic, partition): log end offset}`` of the partitions that have a leader; one whose
    broker is down (or whose topic is gone) is left out, shown as '-' as kafka-consumer-groups does."""
    if not partitions:
        return {}
    leaders = client.metadata(sorted({topic for topic, _ in partitions})).leaders
    led = [tp for tp in partitions if leaders.get(tp, -1) >= 0]
    return {tp: offset for tp, (offset, _) in client.list_offsets({tp: LATEST for tp in led}).items()}


def _shown(value) -> str:
    return NO_OFFSET if value is None else str(value)


def _delete(client, args) -> int:
    groups = GroupClient(client)
    names = list(groups.list_groups()) if args.all_groups else args.groups
    if not names:
        raise CommandError("the cluster has no consumer groups")
    return _report(
        "delete",
        groups.delete_groups(names),
        lambda group: f"deleted consumer group {group}",
        lambda group, error: _explained(error, group),
    )


def _delete_offsets(client, args) -> int:
    try:
        deleted = GroupClient(client).delete_offsets(args.group, _named_partitions(client, args))
    except KafkaError as exc:
        raise CommandError(_explained(exc, args.group)) from None
    return _report(
        "delete-offsets",
        dict(sorted(deleted.items())),
        lambda tp: f"deleted the offset of consumer group {args.group} for {tp[0]}-{tp[1]}",
        lambda tp, error: _explained(error, args.group, tp[0]),
    )


Item = TypeVar("Item")


def _report(
    verb: str,
    results: dict[Item, KafkaError | None],
    done: Callable[[Item], str],
    failure: Callable[[Item, KafkaError], str],
) -> int:
    """One line per item (``done(item)`` on stdout, or ``failure(item, error)`` on stderr, each
    different failure once); 1 if any failed."""
    failures: dict[str, None] = {}
    for item, error in results.items():
        if error is None:
            print(done(item))
        else:
            failures.setdefault(failure(item, error))
    for message in failures:
        print(f"{PROG} {verb}: {message}", file=sys.stderr)
    return FAILED if failures else OK


def topic_partitions(text: str) -> tuple[str, list[int] | None]:
    """``TOPIC`` (all its partitions: None) or ``TOPIC:P,P,...`` -> ``(topic, partitions)``."""
    topic, sep, listed = text.rpartition(":") if ":" in text else (text, "", "")
    numbers = [p.strip() for p in listed.split(",")] if sep else []
    if not topic or (sep and not all(n.isascii() and n.isdigit() for n in numbers)):
        raise argparse.ArgumentTypeError(f"{text!r} is not TOPIC or TOPIC:PARTITION,... (for example orders:0,2)")
    return topic, sorted({int(n) for n in numbers}) if sep else None


def _reset(client, args) -> int:
    groups = GroupClient(client)
    description = _members_or_none(groups, args.group, None)
    if description is not None and description.members:
        raise CommandError(_active(args.group, len(description.members)))
    committed = groups.committed(args.group)
    targets = _targets(client, args, committed)
    wanted = new_offsets(client, args, targets, committed)
    print(
        text_table(
            [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]]
            + [[args.group, t, str(p), str(o)] for (t, p), o in sorted(wanted.items())]
        )
    )
    if not args.execute:
        unchecked = "" if description else "; the broker cannot describe groups, so active members are checked then"
        print(
            f"{PROG} reset-offsets: dry run, nothing committed (add --execute to commit these offsets{unchecked})",
            file=sys.stderr,
        )
        return OK
    try:
        groups.commit(args.group, wanted)
    except KafkaError as exc:
        if exc.code in _MEMBERS_ACTIVE:  # the coordinator's own check, for brokers that cannot describe groups
            raise CommandError(_active(args.group, None)) from None
        raise
    return OK


def _active(group: str, count: int | None) -> str:
    members = "active members" if count is None else f"{count} active member{'s' if count != 1 else ''}"
    return (
        f"consumer group {group!r} has {members}: offsets can be reset only while the group is inactive "
        f"(stop its consumers first)"
    )


def _targets(client, args, committed: dict) -> list:
    """The (topic, partition) pairs to reset."""
    if args.all_topics:
        if not committed:
            raise CommandError(f"consumer group {args.group!r} has no committed offsets: name topics with --topic")
        return sorted(committed)
    return sorted(set(_named_partitions(client, args)))


def _named_partitions(client, args) -> list:
    """The (topic, partition) pairs that ``--topic T[:P,...]`` options name, each checked to exist."""
    named = []
    for topic, wanted in args.topic:
        existing = partitions_of(client, topic, args.bootstrap_server)
        for partition in wanted if wanted is not None else existing:
            check_partition(topic, partition, existing)
            named.append((topic, partition))
    return named


def new_offsets(client: KafkaClient, args: argparse.Namespace, targets: list, committed: dict) -> dict:
    """``{(topic, partition): offset}`` that reset-offsets' target option gives each of ``targets``,
    within each partition's earliest and latest offsets."""
    earliest = {tp: o for tp, (o, _) in client.list_offsets({tp: EARLIEST for tp in targets}).items()}
    latest = {tp: o for tp, (o, _) in client.list_offsets({tp: LATEST for tp in targets}).items()}
    if args.to_earliest:
        return earliest
    if args.to_latest:
        return latest
    if args.to_datetime is not None:
        found = client.list_offsets({tp: args.to_datetime for tp in targets})
        return {tp: latest[tp] if found[tp][0] < 0 else found[tp][0] for tp in targets}
    if args.to_offset is not None:
        return _within(dict.fromkeys(targets, args.to_offset), earliest, latest)
    missing = [f"{t}-{p}" for t, p in targets if (t, p) not in committed]
    if missing:
        raise CommandError(
            f"--shift-by needs a committed offset; consumer group {args.group!r} has none for " + ", ".join(missing)
        )
    return _within({tp: committed[tp].offset + args.shift_by for tp in targets}, earliest, latest)


def _within(wanted: dict, earliest: dict, latest: dict) -> dict:
    """Each wanted offset moved into its partition's [earliest, latest], with a note on stderr for
    each one moved (as kafka-consumer-groups.sh warns)."""
    kept = {}
    for (topic, partition), offset in wanted.items():
        kept[(topic, partition)] = min(max(offset, earliest[(topic, partition)]), latest[(topic, partition)])
        if kept[(topic, partition)] != offset:
            bound = "lower than the earliest" if offset < earliest[(topic, partition)] else "higher than the latest"
            print(
                f"{PROG} reset-offsets: note: offset {offset} is {bound} offset of {topic}-{partition}; "
                f"it is set to {kept[(topic, partition)]}",
                file=sys.stderr,
            )
    return kept


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (for example -100)") from None


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "groups",
        help="list, describe, delete consumer groups; reset their offsets",
        description="Consumer groups, as kafka-consumer-groups.sh shows them.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = add_verb(
        verbs,
        PROG,
        "list",
        "list the consumer groups",
        "List every consumer group of the cluster.",
        [
            "kafkalog groups list --bootstrap-server 127.0.0.1:9092",
            "kafkalog groups --list",
            "kafkalog groups list --format json",
        ],
        _list,
    )
    add_format_argument(listing, 'one JSON object per group: {"group", "protocolType"}')

    describe = add_verb(
        verbs,
        PROG,
        "describe",
        "show a group's offsets, lag and members",
        "Show each partition the group committed an offset for or is assigned: its committed offset,\n"
        "the log end offset, the lag (their difference) and the member that owns it ('-': none; a\n"
        "partition whose broker is down has no log end offset and no lag).",
        [
            "kafkalog groups describe loaders",
            "kafkalog groups describe loaders --format json",
            "kafkalog groups --describe --group loaders",
            "kafkalog groups describe --all-groups",
            "kafkalog groups describe loaders --members",
            "kafkalog groups describe loaders --state",
        ],
        _describe,
    )
    add_name_argument(describe, "group", many=True).add_argument(
        "--all-groups", action="store_true", help="every consumer group of the cluster"
    )
    describe.add_argument(
        "--format",
        choices=["plain", "text", "json"],
        default="plain",
        help="a table (default; text is the same) or one JSON object per group",
    )
    view = describe.add_mutually_exclusive_group()
    view.add_argument(
        "--offsets",
        dest="view",
        action="store_const",
        const="offsets",
        default="offsets",
        help="each partition's offsets, lag and owner (the default)",
    )
    view.add_argument(
        "--members",
        dest="view",
        action="store_const",
        const="members",
        help="each member: id, host, client id, number of partitions assigned",
    )
    view.add_argument(
        "--state",
        dest="view",
        action="store_const",
        const="state",
        help="the group's assignment strategy, state and number of members",
    )

    delete = add_verb(
        verbs,
        PROG,
        "delete",
        "delete consumer groups and their offsets",
        "Delete inactive consumer groups and their committed offsets (a group with active\n"
        "members is refused: stop its consumers first).",
        ["kafkalog groups delete loaders", "kafkalog groups --delete --group loaders"],
        _delete,
    )
    add_name_argument(delete, "group", many=True).add_argument(
        "--all-groups", action="store_true", help="every consumer group of the cluster"
    )

    delete_offsets = add_verb(
        verbs,
        PROG,
        "delete-offsets",
        "delete a group's committed offsets of some partitions",
        "Delete the group's committed offsets of the named partitions (OffsetDelete); refused for\n"
        "topics the group's active members are subscribed to.",
        [
            "kafkalog groups delete-offsets loaders --topic orders",
            "kafkalog groups delete-offsets loaders --topic orders:0,2",
        ],
        _delete_offsets,
    )
    add_name_argument(delete_offsets, "group")
    delete_offsets.add_argument(
        "--topic",
        type=topic_partitions,
        action="append",
        required=True,
        metavar="TOPIC[:P,...]",
        help="a topic, or some of its partitions (repeatable)",
    )

    reset = add_verb(
        verbs,
        PROG,
        "reset-offsets",
        "move a group's committed offsets (dry run unless --execute)",
        "Compute new committed offsets for the group's partitions and show them; with --execute,\n"
        "commit them. Refused while the group has active members. Offsets are kept within each\n"
        "partition's earliest and latest offsets; --to-datetime picks the first record at or after\n"
        "the time (the latest offset when there is none).",
        [
            "kafkalog groups reset-offsets loaders --topic orders --to-earliest",
            "kafkalog groups reset-offsets loaders --topic orders:0,2 --shift-by -100 --execute",
            "kafkalog groups reset-offsets loaders --all-topics --to-datetime 2024-05-01T12:00:00Z --execute",
        ],
        _reset,
    )
    add_name_argument(reset, "group")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        type=topic_partitions,
        action="append",
        metavar="TOPIC[:P,...]",
        help="a topic, or some of its partitions (repeatable)",
    )
    scope.add_argument("--all-topics", action="store_true", help="every topic the group has committed offsets for")
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="to each partition's earliest offset")
    to.add_argument("--to-latest", action="store_true", help="to each partition's latest offset (skip everything)")
    to.add_argument(
        "--to-datetime",
        type=timestamp_ms,
        metavar="TIME",
        help="to the first record at or after TIME (ISO-8601, UTC unless it says, or epoch ms)",
    )
    to.add_argument("--to-offset", type=_integer, metavar="OFFSET", help="to OFFSET")
    to.add_argument("--shift-by", type=_integer, metavar="N", help="by N from the committed offset (negative: back)")
    run_mode = reset.add_mutually_exclusive_group()
    run_mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    run_mode.add_argument("--dry-run", action="store_true", help="only show them (the default)")
