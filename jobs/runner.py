"""One run of a scheduled load: lock, plan, read, write, publish, commit, report.

The steps, and what a kill at any moment leaves for the next run:

1. take the checkpoint's lock (a second run fails; a killed run's lock is taken over), and stop if
   the checkpoint is damaged or contradicts the output (``consistency``);
2. move aside the output of runs marked superseded (finishes a rewind that was killed);
3. plan: the pending run again, or the next increment, or a rewind (``planner``); a rewind first
   marks the runs it supersedes, newest first, then moves their output aside;
4. write the plan (killed before: nothing happened; after: the next run executes this plan again);
5. read through the ``kafkalog`` source, each task writing its checkpoint (local checkpoints; on
   other filesystems the report counts the published output instead), and write the records
   to ``_staging/run=N`` in one Spark job (killed: the next run rewrites the staging output);
6. publish: rename ``_staging/run=N`` to ``run=N`` (killed before: the staged output is complete
   and is published; after: the output is published and only the commit is missing);
7. write ``commit.json``, then the report; commit the run's end offsets to the load's consumer group
   (``group_commit``: a copy for lag monitors, a warning when it fails); apply the history's retention.

So the output holds every offset of the committed runs exactly once, whatever was killed when.
"""

import dataclasses
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.client import hidden_secrets
from spark_kafka_source.checkpoint import ArrowLocation, CheckpointLock, CheckpointStore, is_local

from . import consistency
from . import report as run_report
from .group_commit import commit_run_ends, default_group_id
from .output import Output
from .planner import LoadPlan, Rewind, exact_read_options, plan_next, source_client
from .progress import SparkProgress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NOTHING_SUPERSEDED = "no committed run loaded anything past that point, so it loads on from where the last run ended"
PAUSE_VARIABLE = "KAFKALOG_LOAD_PAUSE_AT"  # tests: stop at a step so a real SIGKILL lands exactly there


@dataclasses.dataclass
class LoadSettings:
    bootstrap_servers: str
    output: str
    checkpoint: str
    topics: list[str] | None = None
    topic_pattern: str | None = None
    format: str = "parquet"
    max_records_per_partition: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    starting_offsets: str = "earliest"
    rewind: Rewind | None = None
    keep_runs: int = 100
    allow_empty: bool = False  # a topic pattern may match no topic
    isolation_level: str = "read_committed"  # kafka.isolation.level of every read, recorded in each run's plan
    # more kafkalog options (kafka.*: secrets)
    source_options: dict = dataclasses.field(default_factory=dict, repr=False)
    progress: bool = True
    group_commit: bool = True  # commit each committed run's end offsets to a consumer group (group_commit.py)
    group_id: str | None = None  # that group; None: default_group_id(the output URI)

    def source(self) -> dict:
        """Options of the kafkalog source naming the brokers, topics and data loss policy."""
        options = dict(self.source_options)
        options["kafka.bootstrap.servers"] = self.bootstrap_servers
        options["kafka.isolation.level"] = self.isolation_level
        options["failOnDataLoss"] = str(self.fail_on_data_loss).lower()
        if self.topic_pattern is not None:
            options["subscribePattern"] = self.topic_pattern
        else:
            options["subscribe"] = ",".join(self.topics or [])
        return options


def _pause_at(step: str, say) -> None:
    if os.environ.get(PAUSE_VARIABLE) == step:
        say(f"paused at {step}")
        sys.stdout.flush()
        while True:
            time.sleep(3600)


def plan_only(settings: LoadSettings) -> LoadPlan:
    """What the next run would do (``--dry-run``): nothing is written, no lock is taken. A
    checkpoint that contradicts the output stops it (``consistency``)."""
    store = CheckpointStore(settings.checkpoint)
    found = consistency.problems(store, Output(settings.output, settings.format))
    consistency.refuse(found)
    with source_client(settings.source()) as client:
        plan = plan_next(
            store, client, settings.source(), settings.starting_offsets, settings.rewind, settings.allow_empty
        )
    consistency.refuse(found, plan.supersede)
    return plan


def load(
    spark: "SparkSession | Callable[[], SparkSession]", settings: LoadSettings, say: Callable[[str], None] = print
) -> dict:
    """Run one load; returns its report. ``spark`` is a SparkSession, or a function that makes one,
    called only when the run's output is to be written: a run that finds the lock taken, fails its plan,
    or only publishes and commits output written before it was killed never starts Spark; unless its
    checkpoint or output is not local files: then Spark starts first, as Hadoop's FileSystem in its
    driver reaches them (``checkpoint.location``)."""
    began = time.monotonic()
    if not (is_local(settings.checkpoint) and is_local(settings.output)):
        spark = spark() if callable(spark) else spark
    store = CheckpointStore(settings.checkpoint)
    output = Output(settings.output, settings.format)
    with CheckpointLock(store.location) as lock:
        consistency.refuse(consistency.problems(store, output))
        _set_aside_superseded(store, output)
        plan = plan_only(settings)
        if plan.supersede:
            if settings.rewind is None:
                raise RuntimeError(f"run {plan.run} would supersede runs {plan.supersede} without a rewind")
            for number in plan.supersede:
                lock.check()
                store.supersede(number, {"by_run": plan.run, "rewind": settings.rewind.describe()})
            _set_aside_superseded(store, output)
            say(
                f"rewind: superseded run{'s' if len(plan.supersede) > 1 else ''} "
                f"{', '.join(map(str, sorted(plan.supersede)))} (output moved to {output.uri}/_superseded)"
            )
        elif settings.rewind is not None and not plan.again:
            say(f"rewind: superseded nothing: {NOTHING_SUPERSEDED}")
        lock.check()
        if plan.again:
            run = store.runs()[-1]
            say(f"run {run.number} was planned but not committed: executing its plan again")
        else:
            source = hidden_secrets(settings.source(), "kafka.")  # written down: no password
            run = store.write_plan(
                plan.run,
                plan.partitions,
                {
                    "output": output.uri,
                    "format": output.format,
                    "source": source,
                    "rewind": settings.rewind.describe() if settings.rewind else None,
                    "lost": plan.lost,
                },
            )
        _pause_at("planned", say)
        if not output.is_published(run.number):
            if not output.is_staged(run.number):
                _write(spark, settings, store, output, run)
            _pause_at("written", say)
            lock.check()
            output.publish(run.number)
        _pause_at("published", say)
        lock.check()
        with source_client(settings.source()) as client:
            latest = (
                {tp: o for tp, (o, _) in client.list_offsets({p.key: -1 for p in run.plan}).items()} if run.plan else {}
            )
        result = run_report.build(
            run,
            _tallies(spark, store, output, run),
            latest,
            time.monotonic() - began,
            output.uri,
            plan.supersede,
            plan.again,
        )
        store.commit(run.number, {"records": result["total"]["records"], "bytes": result["total"]["bytes"]})
        store.write_report(run.number, result)
        if settings.group_commit:
            with source_client(settings.source()) as client:
                commit_run_ends(client, settings.group_id or default_group_id(output.uri), run)
        _pause_at("committed", say)
        for number in store.apply_retention(settings.keep_runs):
            output.delete_superseded(number)
    return result


def _tasks_write_checkpoints(store: CheckpointStore) -> bool:
    """Whether Spark's tasks write their own checkpoints: only to local files, through pyarrow
    (a Python worker has no JVM to reach Hadoop's FileSystem through)."""
    return isinstance(store.location, ArrowLocation)


def _tallies(spark, store: CheckpointStore, output: Output, run) -> list:
    """What the run's tasks read: their checkpoints, or, where tasks cannot write them, the
    published output counted by Spark."""
    if _tasks_write_checkpoints(store):
        return store.tasks(run.number)
    return output.read_tallies(spark() if callable(spark) else spark, run.number, run.plan)


def _set_aside_superseded(store: CheckpointStore, output: Output) -> None:
    for run in store.runs():
        if run.superseded is not None:
            output.set_aside(run.number)


def _write(spark, settings: LoadSettings, store: CheckpointStore, output: Output, run) -> None:
    """Write the run's records to its staging output; a run with no offset to read needs no Spark."""
    store.location.delete(f"{store.run_name(run.number)}/tasks")  # from an attempt with another split
    if not any(p.end > p.start for p in run.plan):
        output.stage_empty(run.number)
        return
    spark = spark() if callable(spark) else spark
    tasks_uri = store.tasks_uri(run.number) if _tasks_write_checkpoints(store) else None
    df = spark.read.format("kafkalog").options(**_read_options(settings, run, tasks_uri)).load()
    with SparkProgress(spark, f"run {run.number}", enabled=settings.progress):
        output.write_staging(df, run.number)


def _read_options(settings: LoadSettings, run, tasks_uri: str | None) -> dict:
    """kafkalog options reading exactly the run's plan at the isolation level the plan was made with
    (a plan from before levels were recorded read uncommitted), each task writing its checkpoint to
    ``tasks_uri`` if given."""
    options = exact_read_options(
        settings.source(), {p.key: p.start for p in run.plan}, {p.key: p.end for p in run.plan}
    )
    options["kafka.isolation.level"] = run.details.get("source", {}).get("kafka.isolation.level", "read_uncommitted")
    options["includeHeaders"] = "true"
    if tasks_uri is not None:
        options["taskCheckpointLocation"] = tasks_uri
    if settings.max_records_per_partition:
        options["maxRecordsPerPartition"] = str(settings.max_records_per_partition)
    if settings.min_partitions:
        options["minPartitions"] = str(settings.min_partitions)
    return options
