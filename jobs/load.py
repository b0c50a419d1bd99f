"""``kafkalog load`` (also ``python -m jobs.load``): a scheduled, incremental, exactly-once load of
Kafka-protocol topics into Parquet (or ORC, JSON) with its checkpoint on a Hadoop-compatible
filesystem, and offset-rewind reruns.

Exit status: 0 the run committed (or the dry run, history, repair or check was done), 1 the run
failed (its reason on one line; the next run resumes it) or the check found the filesystem lacking,
2 usage error, 3 another run holds the lock, 130 interrupted (Ctrl-C: one line saying what the next
run does).
"""

import argparse
import json
import logging
import os
import re
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from broker.arguments import (
    Parser,
    Subcommands,
    add_bootstrap_argument,
    add_command_config_argument,
    add_isolation_level_argument,
    command_config,
    group_id,
    key_value,
    positive_int,
    timestamp_ms,
    topic_pattern,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .runner import LoadSettings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
WORKER_PYTHON = "spark.pyspark.python"
SUBMITTED = "PYSPARK_GATEWAY_PORT"  # set by spark-submit for the Python it runs: PySpark's JVM is already there

EPILOG = """\
examples:
  kafkalog load --topics page-views --output hdfs://nn/warehouse/page_views
  kafkalog load --topic-pattern 'events-.*' --output /data/events --checkpoint /data/events-checkpoint
  kafkalog load --topics page-views --output /data/pv --dry-run
  kafkalog load --topics page-views --output /data/pv --rewind-to-time 2026-11-20T13:00:00Z
  kafkalog load --topics page-views --output /data/pv --rewind-to-run 12
  kafkalog load --topics page-views --output /data/pv --rewind-to-offsets '{"page-views":{"0":1500}}'
  kafkalog load --output /data/pv --history
  kafkalog load --output /data/pv --repair
  kafkalog load --output hdfs://nn/warehouse/page_views --check-output
  kafkalog load --topics page-views --output /data/pv --group-id page-views-loader

Each run reads every partition from where the committed runs ended to the latest offset now
(read_committed by default: up to the last stable offset, without aborted transactions' records),
writes <output>/run=<N>/topic=<t>/date=<yyyy-mm-dd>/hour=<hh>/, and commits in the checkpoint
(default <output>/_checkpoint), through Spark's Hadoop FileSystem unless they are local paths or
file:// (then pyarrow, and Spark starts only to read records). A run that was killed is executed
again with the same plan.
Each committed run's end offsets are then committed to a consumer group (--group-id, default
kafkalog-load:<output URI>), where `kafkalog groups describe` shows the load's lag.

exit status: 0 committed (or checked), 1 the run failed (reason on stderr) or --check-output found the
             filesystem lacking, 2 usage error,
             3 another run holds the checkpoint's lock, 130 interrupted (Ctrl-C)"""


class UsageError(ValueError):
    """Arguments that cannot be used: malformed, or asking what the checkpoint cannot do (exit status 2)."""


def add_parser(commands: Subcommands) -> None:
    """Add ``load`` to the ``kafkalog`` subcommands."""
    parser = commands.add_parser(
        "load",
        help="load topics into Parquet with checkpoints; rewind and rerun",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _arguments(parser)
    parser.set_defaults(func=run_command)


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(parser, dest="bootstrap_servers")
    add_command_config_argument(parser)
    topics = parser.add_mutually_exclusive_group()
    topics.add_argument("--topics", "--topic", metavar="A,B", help="topics to load")
    topics.add_argument(
        "--topic-pattern", metavar="REGEX", type=topic_pattern, help="load every topic matching (the whole name)"
    )
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="a --topic-pattern that matches no topic commits an empty run instead of failing",
    )
    parser.add_argument("--output", required=True, metavar="URI", help="where the records go (path, file://, hdfs://)")
    parser.add_argument("--checkpoint", metavar="URI", help="the checkpoint (default <output>/_checkpoint)")
    parser.add_argument("--format", default="parquet", choices=("parquet", "orc", "json"), help="default parquet")
    parser.add_argument(
        "--max-records-per-partition",
        type=positive_int,
        metavar="N",
        help="split a partition's range into tasks of at most N records",
    )
    parser.add_argument("--min-partitions", type=positive_int, metavar="N", help="read with at least N tasks")
    parser.add_argument(
        "--fail-on-data-loss",
        default="true",
        choices=("true", "false"),
        help="fail when offsets to load were deleted (true, the default) or load what is left",
    )
    parser.add_argument(
        "--starting-offsets",
        default="earliest",
        choices=("earliest", "latest"),
        help="where partitions never loaded start (default earliest)",
    )
    add_isolation_level_argument(parser, "read_committed")
    rewind = parser.add_mutually_exclusive_group()
    rewind.add_argument(
        "--rewind-to-time",
        metavar="TIME",
        type=timestamp_ms,
        help="load again from this time (ISO 8601, e.g. 2026-11-20T13:00:00Z, or epoch ms)",
    )
    rewind.add_argument("--rewind-to-run", metavar="N", type=positive_int, help="load again from the start of run N")
    rewind.add_argument(
        "--rewind-to-offsets",
        metavar="JSON",
        type=_offsets,
        help='load again from these offsets, e.g. \'{"events":{"0":1500}}\'',
    )
    stop = parser.add_mutually_exclusive_group()  # each does one thing and stops
    stop.add_argument("--dry-run", action="store_true", help="show what the run would supersede and read, and stop")
    stop.add_argument("--history", action="store_true", help="show the runs in the checkpoint, and stop")
    stop.add_argument(
        "--repair",
        action="store_true",
        help="make a damaged checkpoint agree with the output again, from what the output's rows prove, and stop",
    )
    stop.add_argument(
        "--check-output",
        action="store_true",
        help="try every filesystem operation the load needs on --output (and --checkpoint), report "
        "what the filesystem offers, and stop (exit status 1 if the load cannot run there)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--group-id",
        type=group_id,
        metavar="GROUP",
        help="the consumer group each committed run's end offsets are committed to, so the load's lag "
        "shows in `kafkalog groups describe` and Kafka lag monitors (default "
        "kafkalog-load:<output URI>); the checkpoint stays the source of truth",
    )
    group.add_argument("--no-group-commit", action="store_true", help="commit no offsets to a consumer group")
    parser.add_argument(
        "--keep-runs",
        type=positive_int,
        default=100,
        metavar="N",
        help="runs kept in the checkpoint's history (default 100)",
    )
    parser.add_argument(
        "--option",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="another kafkalog source option, e.g. kafka.max.partition.fetch.bytes=1048576",
    )
    parser.add_argument(
        "--master",
        default=os.environ.get("SPARK_MASTER", "local[*]"),
        help="Spark master when no Spark session exists and not run by spark-submit (default local[*])",
    )
    parser.add_argument(
        "--conf", type=key_value, action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument(
        "--verbose", action="store_true", help="Spark's and Py4J's logs, and on failure the whole traceback"
    )


def _offsets(text: str) -> dict:
    """'{"events":{"0":1500}}' -> {("events", 0): 1500}."""
    problem = f"{text!r} is not offset JSON like " + """'{"events":{"0":1500}}'"""
    try:
        parsed = json.loads(text)
        offsets = {(topic, int(p)): o for topic, ps in parsed.items() for p, o in ps.items()}
    except (ValueError, AttributeError, TypeError):
        raise argparse.ArgumentTypeError(problem) from None
    if not offsets or not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets.values()):
        raise argparse.ArgumentTypeError(problem + " (offsets are integers >= 0)")
    return offsets


def checkpoint_of(args: argparse.Namespace) -> str:
    return args.checkpoint or args.output.rstrip("/") + "/_checkpoint"


def settings_from(args: argparse.Namespace) -> "LoadSettings":
    from .planner import Rewind
    from .runner import LoadSettings

    rewind = None
    if args.rewind_to_time is not None:
        rewind = Rewind("time", args.rewind_to_time)
    elif args.rewind_to_run is not None:
        rewind = Rewind("run", args.rewind_to_run)
    elif args.rewind_to_offsets is not None:
        rewind = Rewind("offsets", args.rewind_to_offsets)
    source_options = {
        **{f"kafka.{k}": v for k, v in command_config(args.command_config).items()},
        **dict(args.option),
    }
    return LoadSettings(
        bootstrap_servers=args.bootstrap_servers,
        output=args.output,
        checkpoint=checkpoint_of(args),
        topics=[t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None,
        topic_pattern=args.topic_pattern,
        format=args.format,
        max_records_per_partition=args.max_records_per_partition,
        min_partitions=args.min_partitions,
        fail_on_data_loss=args.fail_on_data_loss == "true",
        starting_offsets=args.starting_offsets,
        rewind=rewind,
        keep_runs=args.keep_runs,
        allow_empty=args.allow_empty,
        isolation_level=args.isolation_level or source_options.get("kafka.isolation.level", "read_committed"),
        source_options=source_options,
        progress=not args.quiet,
        group_commit=not args.no_group_commit,
        group_id=args.group_id,
    )


def run_command(args: argparse.Namespace) -> int:
    """Run ``kafkalog load`` with parsed arguments; print the report or a one-line error."""
    from broker.common.settings import ConfigError
    from spark_kafka_source.checkpoint import CheckpointStore, LockHeldError, is_local
    from spark_kafka_source.options import OptionError

    from . import history
    from .output import Output
    from .repair import repair

    try:
        settings = settings_from(args)
        if settings.rewind is not None and (args.history or args.repair or args.check_output):
            flag, does = (
                ("--history", "shows the runs")
                if args.history
                else ("--repair", "repairs the checkpoint")
                if args.repair
                else ("--check-output", "checks the filesystem")
            )
            raise UsageError(
                f"{flag} cannot be combined with a rewind: it {does} and stops (--dry-run shows what "
                f"the rewind would do)"
            )
        if not (is_local(settings.checkpoint) and is_local(settings.output)):
            _start_spark(args)  # Hadoop's FileSystem in Spark's driver reaches them (checkpoint.location)
        if args.check_output:
            return _check_output(settings)
        if args.history:
            print(history.format_text(settings.checkpoint, settings.output, settings.format))
            return EXIT_OK
        if args.repair:
            repair(
                CheckpointStore(settings.checkpoint),
                Output(settings.output, settings.format),
                say=lambda line: print(line, flush=True),
            )
            return EXIT_OK
        if not settings.topics and not settings.topic_pattern:
            raise UsageError("name the topics to load: --topics A,B or --topic-pattern REGEX")
        if args.dry_run:
            print(history.format_dry_run(settings))
            return EXIT_OK
        return _load(args, settings)
    except (UsageError, OptionError, ConfigError) as exc:  # ConfigError: an unreadable --command-config
        _error(exc)
        return EXIT_USAGE
    except LockHeldError as exc:
        _error(exc)
        return EXIT_LOCKED
    except KeyboardInterrupt:  # Ctrl-C; the lock is released, and Spark's JVM (deaf to SIGINT) ends with this process
        print(f"kafkalog load: {interrupted(checkpoint_of(args))}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the reason on one line (a damaged checkpoint names its file); the next run resumes
        if args.verbose:
            traceback.print_exc()
        _error(exc)
        return EXIT_FAILED


def _start_spark(args: argparse.Namespace) -> "SparkSession":
    from spark_kafka_source.java import require_java

    require_java()
    return spark_session(args.master, args.conf, args.verbose)


def _check_output(settings: "LoadSettings") -> int:
    """``--check-output``: the output's URI, and the checkpoint's when it is not under the output."""
    from .check_output import check, format_text

    uris = [settings.output]
    if not settings.checkpoint.startswith(settings.output.rstrip("/") + "/"):
        uris.append(settings.checkpoint)
    lacking = False
    for uri in uris:
        location, outcomes = check(uri)
        print(format_text(location, outcomes), flush=True)
        lacking = lacking or not all(o.ok for o in outcomes)
    return EXIT_FAILED if lacking else EXIT_OK


def _load(args, settings) -> int:
    from spark_kafka_source.java import require_java

    from . import report
    from .runner import load

    require_java()
    result = load(
        lambda: spark_session(args.master, args.conf, args.verbose), settings, say=lambda line: print(line, flush=True)
    )
    print(report.format_text(result), flush=True)
    return EXIT_OK


def spark_session(
    master: str, conf: list[tuple[str, str]], verbose: bool = False, app_name: str = "kafkalog-load"
) -> "SparkSession":
    """The active Spark session, or a new one (UTC session time zone) on ``master`` (unless run by
    ``spark-submit``, whose master it keeps) with the ``(key, value)`` settings of ``conf``.

    Spark's Python workers run ``spark.pyspark.python`` from ``conf``, else ``PYSPARK_PYTHON``, else
    this Python (not ``python3`` from PATH, which may lack the package: a venv's Python run without
    activating the venv); Spark's JVM reads ``PYSPARK_PYTHON`` when it starts (the conf alone does
    not reach the worker that finds data sources), so both are set.

    Unless ``verbose``, Spark's and Py4J's logs are off: a failed run says why in one line of its
    own, and Spark's ERROR lines (a failed task logs its whole stack, several times) would bury it.
    The log settings go first in ``spark.driver.extraJavaOptions``, so options given with ``--conf``
    add to them instead of replacing them."""
    from pyspark.sql import SparkSession

    import spark_kafka_source

    if not verbose:
        logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
        logging.getLogger().addFilter(not_py4j)  # py4j logs a Ctrl-C during a call to the root logger
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
    )
    settings = spark_settings(conf, verbose)
    if SUBMITTED in os.environ:  # its --master stands, and its spark.pyspark.python came as PYSPARK_PYTHON
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    else:
        builder = builder.master(master)
        settings[WORKER_PYTHON] = os.environ["PYSPARK_PYTHON"] = (
            settings.get(WORKER_PYTHON) or os.environ.get("PYSPARK_PYTHON") or sys.executable
        )
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not verbose:
        spark.sparkContext.setLogLevel("OFF")
    spark_kafka_source.register(spark)
    return spark


def not_py4j(record: logging.LogRecord) -> bool:
    """A log filter dropping what py4j's own code logs (with tracebacks) through the root logger."""
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def spark_settings(conf: list[tuple[str, str]], verbose: bool) -> dict:
    """The ``--conf`` settings, with the job's quiet log settings first in the driver's Java options
    unless ``verbose``."""
    settings = dict(conf)
    if not verbose:
        quiet = f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties')}"
        settings[DRIVER_JAVA_OPTIONS] = f"{quiet} {settings.get(DRIVER_JAVA_OPTIONS, '')}".strip()
    return settings


def interrupted(checkpoint: str) -> str:
    """What an interrupted load left, from its checkpoint: a run planned and not committed, which the
    next load executes again, or none."""
    from spark_kafka_source.checkpoint import CheckpointStore

    try:
        runs = CheckpointStore(checkpoint).runs()
    except Exception:  # an unreadable checkpoint: the next run says why
        runs = []
    if runs and runs[-1].pending:
        return f"interrupted: run {runs[-1].number} was not committed; the next load executes its plan again"
    return "interrupted: no run is pending; the next load goes on from the last committed run"


def _error(exc: Exception) -> None:
    print(f"kafkalog load: {reason(exc)}", file=sys.stderr, flush=True)


def reason(exc: Exception) -> str:
    """One line: a Spark error carries a Python task's traceback or a JVM stack; keep the cause, its
    exception named without its module (``KafkaError: ...``, not ``broker.client.errors.KafkaError: ...``).
    Data loss advises the commands' ``--fail-on-data-loss false``, not the source option."""
    from spark_kafka_source.planning import DATA_LOSS_ADVICE

    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    found = lines[0] if lines else type(exc).__name__
    for line in reversed(lines):
        cause = re.match(r"^(?:[A-Za-z_]\w*\.)*(\w*Error: .*)", line)
        if cause:
            found = cause.group(1)
            break
    return found.replace(
        DATA_LOSS_ADVICE, "Run it with --fail-on-data-loss false to go on with what is left instead of failing."
    )[:1000]


def parser() -> Parser:
    """The arguments of ``python -m jobs.load``."""
    parser = Parser(
        prog="kafkalog load",
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
