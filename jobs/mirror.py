"""``kafkalog mirror`` (also ``python -m jobs.mirror``): copy topics from one Kafka-protocol cluster to
another, as Kafka's MirrorMaker does, with a Spark streaming query on the ``kafkalog`` source and sink.

The mirror is a consumer of the source cluster and a producer to the target: each micro-batch reads
the next offsets of the source topics (``subscribe`` or ``subscribePattern``, from earliest on a new
checkpoint) and writes every record to the same partition of the target topic (named with the
optional ``--topic-prefix``) with its key, value, headers and timestamp. Before a micro-batch is
written, every source topic it may hold has its target topic (``mirror_topics``: created with the
source's partition count and settings when missing, grown to it when smaller). Spark's checkpoint
(``--checkpoint``) says where the mirror is; each micro-batch's end offsets are also committed to a
consumer group of the SOURCE cluster, so Kafka's lag tools see the mirror. Delivery is at least
once, as the sink's.

Exit status: 0 the query ended (``--available-now``: everything present at its start is copied),
1 it failed (its reason on one line; running it again resumes from the checkpoint), 2 usage error,
130 stopped with Ctrl-C (one line; the same command resumes).
"""

import argparse
import dataclasses
import os
import sys
import traceback

from broker.arguments import (
    Parser,
    Subcommands,
    add_isolation_level_argument,
    group_id,
    key_value,
    positive_float,
    positive_int,
    topic_pattern,
)

from .load import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError, reason, spark_session
from .report import counted

EPILOG = """\
examples:
  kafkalog mirror --from dc1:9092 --to dc2:9092 --topics page-views,orders --checkpoint /data/mirror-dc1
  kafkalog mirror --from dc1:9092 --to dc2:9092 --topic-pattern 'events-.*' --checkpoint /data/mirror-events \\
                  --topic-prefix dc1. --max-offsets-per-trigger 100000
  kafkalog mirror --from dc1:9092 --to dc2:9092 --topics page-views --checkpoint /data/m --available-now

Missing target topics are created with the source's partition count and topic settings, target
topics with fewer partitions than their source are grown to its count (also when partitions are
added to the source while the mirror runs); records keep their partition, key, value, headers and
timestamp. Only committed records are copied (--isolation-level read_committed, the default: the
records of aborted transactions are left out, and an open transaction holds the mirror at its first
offset until it ends); --isolation-level read_uncommitted copies every record. Each micro-batch
prints one line with the records copied and the lag of each partition (the most behind first).
Killed, the same command resumes from the checkpoint: nothing is lost, and the records of the
micro-batch that was being written when it was killed may be copied twice (at least once, as the
kafkalog sink).

exit status: 0 done, 1 failed (reason on stderr), 2 usage error, 130 stopped with Ctrl-C"""


STOPPED = "stopped; the same command resumes from the checkpoint"


@dataclasses.dataclass
class MirrorSettings:
    source_servers: str
    target_servers: str
    checkpoint: str
    topics: list[str] | None = None
    topic_pattern: str | None = None
    topic_prefix: str = ""
    group_id: str | None = None  # None: no group commit
    available_now: bool = False
    trigger_seconds: float = 1.0
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    isolation_level: str = "read_committed"  # how the source topics are read
    source_config: dict = dataclasses.field(default_factory=dict, repr=False)  # Kafka client settings (secrets)
    target_config: dict = dataclasses.field(default_factory=dict, repr=False)
    progress: bool = True
    dry_run: bool = False  # check both clusters and the target topics, change nothing, start no Spark

    def source(self) -> dict:
        """Options of the ``kafkalog`` stream reading the source topics."""
        options = {f"kafka.{k}": v for k, v in self.source_config.items()}
        options.update(
            {
                "kafka.bootstrap.servers": self.source_servers,
                "startingOffsets": "earliest",
                "includeHeaders": "true",
                "failOnDataLoss": str(self.fail_on_data_loss).lower(),
                "kafka.isolation.level": self.isolation_level,
            }
        )
        if self.topic_pattern is not None:
            options["subscribePattern"] = self.topic_pattern
        elif self.topics is not None:
            options["subscribe"] = ",".join(self.topics)
        else:
            raise ValueError("a mirror needs topics or a topic pattern")
        if self.max_offsets_per_trigger:
            options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        if self.group_id is not None:
            options["commitOffsetsToGroup"] = self.group_id
        return options

    def sink(self) -> dict:
        """Options of the ``kafkalog`` sink writing to the target, keeping each record's timestamp."""
        options = {f"kafka.{k}": v for k, v in self.target_config.items()}
        options.update({"kafka.bootstrap.servers": self.target_servers, "includeTimestamp": "true"})
        return options


def default_group_id(checkpoint: str) -> str:
    """The source-cluster group of a mirror that names none: one per checkpoint."""
    return "kafkalog-mirror:" + (checkpoint if "://" in checkpoint else os.path.abspath(checkpoint))


def add_parser(commands: Subcommands) -> None:
    """Add ``mirror`` to the ``kafkalog`` subcommands."""
    parser = commands.add_parser(
        "mirror",
        help="copy topics from one cluster to another (a Spark streaming query)",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _arguments(parser)
    parser.set_defaults(func=run_command)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from", dest="source", required=True, metavar="HOST:PORT[,...]", help="the source cluster's bootstrap servers"
    )
    parser.add_argument(
        "--to", dest="target", required=True, metavar="HOST:PORT[,...]", help="the target cluster's bootstrap servers"
    )
    topics = parser.add_mutually_exclusive_group(required=True)
    topics.add_argument("--topics", "--topic", metavar="A,B", help="the topics to mirror")
    topics.add_argument(
        "--topic-pattern",
        metavar="REGEX",
        type=topic_pattern,
        help="mirror every topic matching (the whole name), also those created later",
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        metavar="URI",
        help="the Spark checkpoint (path, file://, hdfs://): where the mirror resumes",
    )
    parser.add_argument(
        "--topic-prefix",
        default="",
        metavar="PREFIX",
        help="target topic = PREFIX + source topic (default: the same name)",
    )
    trigger = parser.add_mutually_exclusive_group()
    trigger.add_argument(
        "--available-now", action="store_true", help="copy what the source holds now, then stop (for tests and cron)"
    )
    trigger.add_argument(
        "--trigger-interval",
        type=positive_float,
        default=1.0,
        metavar="SECONDS",
        help="start a micro-batch at most this often (default 1)",
    )
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=positive_int,
        metavar="N",
        help="at most N records per micro-batch, split over the partitions by backlog",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--group-id",
        type=group_id,
        metavar="GROUP",
        help="the source cluster's consumer group each micro-batch's end offsets are committed to "
        "(default kafkalog-mirror:<checkpoint>), for Kafka's lag tools",
    )
    group.add_argument("--no-group-commit", action="store_true", help="commit no offsets to a consumer group")
    parser.add_argument(
        "--from-config",
        metavar="FILE",
        help="Kafka client settings for the source (security.protocol, sasl.*, ssl.*, ...)",
    )
    parser.add_argument(
        "--to-config",
        metavar="FILE",
        help="Kafka producer settings for the target (security.protocol, sasl.*, ssl.*, compression.type, ...)",
    )
    parser.add_argument(
        "--fail-on-data-loss",
        default="true",
        choices=("true", "false"),
        help="fail when offsets still to copy were deleted on the source (true, the default) or copy what is left",
    )
    add_isolation_level_argument(parser, "read_committed")
    parser.add_argument(
        "--master",
        default=os.environ.get("SPARK_MASTER", "local[*]"),
        help="Spark master when no Spark session exists (default local[*])",
    )
    parser.add_argument(
        "--conf", type=key_value, action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check both clusters (and the credentials of each) and the target topics, say which "
        "would be created or grown, then stop: nothing is changed or copied, Spark is not started",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument(
        "--verbose", action="store_true", help="Spark's and Py4J's logs, and on failure the whole traceback"
    )


def settings_from(args: argparse.Namespace) -> MirrorSettings:
    topics = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics is not None else None
    if topics is not None and not topics:
        raise UsageError("--topics names no topic; for example --topics page-views,orders")
    source_config = _config(args.from_config, "--from-config")
    return MirrorSettings(
        source_servers=args.source,
        target_servers=args.target,
        checkpoint=args.checkpoint,
        topics=topics,
        topic_pattern=args.topic_pattern,
        topic_prefix=args.topic_prefix,
        group_id=None if args.no_group_commit else args.group_id or default_group_id(args.checkpoint),
        available_now=args.available_now,
        trigger_seconds=args.trigger_interval,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        fail_on_data_loss=args.fail_on_data_loss == "true",
        isolation_level=args.isolation_level or source_config.get("isolation.level", "read_committed"),
        source_config=source_config,
        target_config=_config(args.to_config, "--to-config"),
        progress=not args.quiet,
        dry_run=args.dry_run,
    )


def _config(path: str | None, option: str) -> dict:
    from broker.properties import read_properties

    return read_properties(path, option) if path else {}


def run_command(args: argparse.Namespace) -> int:
    """Run ``kafkalog mirror`` with parsed arguments; one line on stderr when it fails."""
    from broker.common.settings import ConfigError
    from spark_kafka_source.java import require_java
    from spark_kafka_source.options import OptionError

    from .mirror_run import mirror

    try:
        settings = settings_from(args)
        if not settings.dry_run:
            require_java()
        copied = mirror(
            lambda: spark_session(args.master, args.conf, args.verbose, "kafkalog-mirror"),
            settings,
            say=lambda line: print(line, flush=True),
        )
        batches = copied.get("batches", 0)
        if settings.dry_run:
            print("dry run: nothing was created, grown or copied", flush=True)
            return EXIT_OK
        if not copied:
            print(STOPPED, flush=True)
            return EXIT_INTERRUPTED
        print(
            f"done: {counted(copied['records'], 'record')} copied in {batches} "
            f"micro-batch{'' if batches == 1 else 'es'}",
            flush=True,
        )
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C before the query started (while Spark starts)
        print(STOPPED, flush=True)
        return EXIT_INTERRUPTED
    except (UsageError, OptionError, ConfigError) as exc:  # ConfigError: an unreadable --from/--to-config
        _error(exc)
        return EXIT_USAGE
    except Exception as exc:  # the reason on one line; the next run resumes from the checkpoint
        if args.verbose:
            traceback.print_exc()
        _error(exc)
        return EXIT_FAILED


def _error(exc: Exception) -> None:
    """The reason on one line (a MirrorError raised in a micro-batch reaches here inside Spark's error)."""
    from .mirror_topics import MirrorError

    line = reason(exc).removeprefix(f"{MirrorError.__name__}: ")
    print(f"kafkalog mirror: {line}", file=sys.stderr, flush=True)


def parser() -> Parser:
    """The arguments of ``python -m jobs.mirror``."""
    parser = Parser(
        prog="kafkalog mirror",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
