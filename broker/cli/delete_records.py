"""``kafkalog delete-records TOPIC --before PARTITION:OFFSET``: delete a partition's records below
an offset (DeleteRecords), as ``kafka-delete-records`` does. The log start offset moves there at
once; readers that wanted those records see them as lost, exactly as after retention.
"""

import argparse

from broker.arguments import USAGE, Subcommands
from broker.client import LATEST, KafkaError
from broker.protocol.errors import ErrorCode

from .common import OK, CommandError, add_command, add_topic_argument, check_partition, partitions_of, run

PROG = "kafkalog delete-records"
TO_THE_END = -1


def partition_offset(text: str) -> tuple[int, int]:
    """``P:OFFSET`` (OFFSET ``end`` or -1: everything stored now) -> ``(P, OFFSET)``."""
    partition, sep, offset = text.partition(":")
    offset = str(TO_THE_END) if offset.strip() == "end" else offset.strip()
    valid_offset = offset.isascii() and (offset.isdigit() or offset == str(TO_THE_END))
    if not sep or not partition.isascii() or not partition.isdigit() or not valid_offset:
        raise argparse.ArgumentTypeError(f"{text!r} is not PARTITION:OFFSET (for example 0:1500, or 0:end)")
    return int(partition), int(offset)


def _delete(client, args) -> int:
    partitions = partitions_of(client, args.topic, args.bootstrap_server)
    wanted = dict(args.before)
    if len(wanted) != len(args.before):
        raise CommandError("a partition is named twice in --before", USAGE)
    for partition in wanted:
        check_partition(args.topic, partition, partitions)
    try:
        low_watermarks = client.delete_records({(args.topic, p): offset for p, offset in wanted.items()})
    except KafkaError as exc:
        if exc.code != ErrorCode.OFFSET_OUT_OF_RANGE:
            raise
        raise CommandError(_past_the_end(client, args.topic, wanted) or str(exc)) from None
    for (topic, partition), start in sorted(low_watermarks.items()):
        print(f"{topic}-{partition}: records before offset {start} deleted (log start offset {start})")
    return OK


def _past_the_end(client, topic: str, wanted: dict) -> str | None:
    """Which --before offsets are past their partition's end, with the end (Kafka answers only
    OFFSET_OUT_OF_RANGE); None when none is now."""
    latest = client.list_offsets({(topic, p): LATEST for p in wanted})
    past = [
        f"{p}:{offset} (the latest offset of {topic}-{p} is {latest[(topic, p)][0]})"
        for p, offset in sorted(wanted.items())
        if offset > latest[(topic, p)][0]
    ]
    if not past:
        return None
    return (
        f"--before {', '.join(past)} is past the end: records can be deleted up to the latest offset "
        f"(PARTITION:end deletes every record stored now) (OFFSET_OUT_OF_RANGE)"
    )


def add_parser(commands: Subcommands) -> None:
    parser = add_command(
        commands,
        "delete-records",
        "delete a partition's records below an offset",
        "Delete the records of partitions below the given offsets: the log start offset moves there\n"
        "and whole segments below it are removed from disk. An offset past the end is refused\n"
        "(OFFSET_OUT_OF_RANGE); 'end' deletes everything stored now. Readers (consumers, the Spark\n"
        "source, the load job) treat the deleted records as lost, as after retention.",
        [
            "kafkalog delete-records page-views --before 0:1500",
            "kafkalog delete-records page-views --before 0:end --before 1:end",
        ],
    )
    add_topic_argument(parser)
    parser.add_argument(
        "--before",
        type=partition_offset,
        action="append",
        required=True,
        metavar="PARTITION:OFFSET",
        help="delete the partition's records below OFFSET (repeatable)",
    )
    parser.set_defaults(func=lambda args: run(PROG, args, _delete))
