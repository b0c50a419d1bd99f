"""One ``kafkalog mirror``: check both clusters and the target topics, then run the streaming query
and print its progress.

Before Spark starts, the source topics are listed (none: refused) and their target topics made ready
(``mirror_topics``), so an unreachable cluster or a topic that cannot be mirrored fails in one line;
a dry run stops there, having changed nothing. The query reads the source with the ``kafkalog``
stream and writes each micro-batch in ``foreachBatch``: first the target topics of every source
topic read now (a topic created on the source since, matching ``--topic-pattern``, gets its target
topic before any of its records is written), then the rows with the ``kafkalog`` sink, each to its
source partition and with its timestamp.

What a kill leaves: Spark logs a micro-batch's offsets in the checkpoint before writing it and
marks it done after every task's records are acknowledged; a restart writes a micro-batch that was
not marked done again, whole. Each task writes one source partition's range in offset order with
an idempotent producer, so within a run nothing is stored twice; after a kill, a target partition
holds the source's records in order except that a stretch of the killed micro-batch's records may
follow twice (those stored before the kill, then the whole micro-batch again).
"""

import contextlib
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryProgress

from broker.client import AuthenticationError, KafkaError
from spark_kafka_source import options as source_options
from spark_kafka_source.planning import client_for, topic_partitions
from spark_kafka_source.sink_options import parse_sink
from spark_kafka_source.streaming import offsets_of

from .mirror_topics import MirrorError, TargetTopics, same_cluster
from .report import counted

if TYPE_CHECKING:
    from .mirror import MirrorSettings

POLL_SECONDS = 0.5
SHOWN_PARTITIONS = 20  # partitions named in a progress line, the most behind first


def mirror(
    spark: SparkSession | Callable[[], SparkSession], settings: "MirrorSettings", say: Callable[[str], None] = print
) -> dict:
    """Run the mirror of ``settings`` (``mirror.MirrorSettings``) until it stops (``available_now``),
    fails, or is interrupted; returns ``{"batches": N, "records": M}`` copied by this run ({} when
    interrupted: Ctrl-C stops the query). ``spark`` is a SparkSession or a function that makes one
    (called once both clusters answered; never in a dry run, which stops after checking them)."""
    ready: dict = {}  # source topic -> partitions ready on the target, shared by every micro-batch
    partitions = _prepare_targets(settings, ready, say, check_topics=True)
    if not partitions:
        raise MirrorError(
            f"no topic on the source cluster {settings.source_servers} matches --topic-pattern "
            f"{settings.topic_pattern!r}"
        )
    say(
        f"{'would mirror' if settings.dry_run else 'mirroring'} {counted(len(partitions), 'partition')} of "
        f"{counted(len({t for t, _ in partitions}), 'topic')} from {settings.source_servers} to "
        f"{settings.target_servers}"
    )
    if settings.dry_run:
        return {"batches": 0, "records": 0}
    spark = spark() if callable(spark) else spark
    frame = spark.readStream.format("kafkalog").options(**settings.source()).load()
    rows = frame.select(
        "key",
        "value",
        "headers",
        "timestamp",
        "partition",
        F.concat(F.lit(settings.topic_prefix), F.col("topic")).alias("topic"),
    )
    sink = settings.sink()

    def write_batch(batch, batch_id: int) -> None:
        _prepare_targets(settings, ready, say)
        batch.write.format("kafkalog").mode("append").options(**sink).save()

    writer = (
        rows.writeStream.queryName("kafkalog-mirror")
        .option("checkpointLocation", settings.checkpoint)
        .foreachBatch(write_batch)
    )
    writer = (
        writer.trigger(availableNow=True)
        if settings.available_now
        else writer.trigger(processingTime=f"{settings.trigger_seconds} seconds")
    )
    with interruptible() as interrupted:
        query = writer.start()
        return _follow(query, say if settings.progress else None, interrupted, quiet_stop=True)


@contextlib.contextmanager
def interruptible() -> Iterator[threading.Event]:
    """An event set by Ctrl-C (SIGINT) while in the block, in place of PySpark's handler, which cancels
    Spark's jobs and raises KeyboardInterrupt inside a call to the JVM (a stopped query then dumps
    Py4J's and the JVM's stacks); the main loop stops the query itself. Elsewhere than in the main
    thread (where no signal handler can be set) Ctrl-C is left as it is."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def quiet() -> None:
    """Turn off this process's stderr and the JVM's: stopping a query in the middle of a micro-batch,
    Spark's check of whether the failure was the stop can overflow the stack on a long Python error
    (the JVM prints its stack, thousands of lines), and PySpark's accumulator thread prints a
    traceback when the JVM goes first. For a stop the user asked for (Ctrl-C), no use to anyone."""
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    if jvm is not None:
        jvm.java.lang.System.setErr(jvm.java.io.PrintStream(jvm.java.io.OutputStream.nullOutputStream()))
    sys.stderr.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())


def _prepare_targets(settings, ready: dict, say, check_topics: bool = False) -> list:
    """The source partitions read now, each with its target topic ready; a cluster that cannot be
    reached fails with a line naming it, and so (``check_topics``, before anything is created) does
    a topic of ``--topics`` missing on the source."""
    parsed = source_options.parse(settings.source(), source_options.STREAM)
    sink = parse_sink(settings.sink())
    with client_for(parsed) as source, sink.client.client(sink.bootstrap_servers) as target:
        partitions = _answered(
            "source", settings.source_servers, lambda: topic_partitions(source, parsed, missing_topics_fail=False)
        )
        if check_topics and (missing := [t for t in settings.topics or [] if t not in {p[0] for p in partitions}]):
            raise MirrorError(
                f"no topic {', '.join(missing)} on the source cluster {settings.source_servers}: "
                f"--topics names existing topics (--topic-pattern also mirrors topics created later)"
            )
        _answered("target", settings.target_servers, target.topics)
        read_back = None
        if same_cluster(settings.source_servers, settings.target_servers):
            names = {topic for topic, _ in partitions}
            pattern = re.compile(settings.topic_pattern) if settings.topic_pattern is not None else None

            def read_back(name: str) -> bool:
                return name in names or (pattern is not None and pattern.fullmatch(name) is not None)

        TargetTopics(source, target, settings.topic_prefix, read_back, ready, say, settings.dry_run).prepare(partitions)
    return partitions


def _answered(side: str, servers: str, step):
    """``step()``, whose failure to reach or use the cluster (unreachable, credentials refused) names the side."""
    try:
        return step()
    except (KafkaError, OSError, AuthenticationError) as exc:
        raise MirrorError(f"the {side} cluster {servers}: {exc}") from None


def _follow(query, say, interrupted: threading.Event, quiet_stop: bool = False) -> dict:
    """Wait for the query to end, printing a line for each progress report (an idle query's, which
    Spark repeats every 10 s for the same batch, once); the query's failure is raised. Once
    ``interrupted`` is set, the progress until then is printed, the query stopped (``quiet_stop``:
    with this process's stderr and the JVM's off, see ``quiet``) and {} returned."""
    shown, shown_batch, batches, records = "", None, 0, 0
    while True:
        ended = query.awaitTermination(POLL_SECONDS)
        stop = interrupted.is_set()
        for progress in query.recentProgress:
            if progress.timestamp <= shown:
                continue
            shown = progress.timestamp
            if progress.numInputRows:
                batches, records = batches + 1, records + progress.numInputRows
            if say is not None and (progress.numInputRows or progress.batchId != shown_batch):
                say(progress_line(progress))
            shown_batch = progress.batchId
        if stop:
            if quiet_stop:
                quiet()
            query.stop()
            return {}
        if ended:
            return {"batches": batches, "records": records}


def progress_line(progress: StreamingQueryProgress) -> str:
    """``batch 3: 120 records in 0.4 s; lag 12: events-1 12, events-0 0`` (the most behind first)."""
    source = progress.sources[0]
    end, latest = offsets_of(_json(source.endOffset)), offsets_of(_json(source.latestOffset))
    lag = {tp: max(0, offset - end.get(tp, 0)) for tp, offset in latest.items()}
    ordered = sorted(lag.items(), key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{t}-{p} {behind}" for (t, p), behind in ordered[:SHOWN_PARTITIONS])
    more = f" and {len(ordered) - SHOWN_PARTITIONS} more partitions" if len(ordered) > SHOWN_PARTITIONS else ""
    seconds = (progress.batchDuration or 0) / 1000
    return (
        f"batch {progress.batchId}: {counted(progress.numInputRows, 'record')} in {seconds:.1f} s; "
        f"lag {sum(lag.values())}: {named}{more}"
    )


def _json(text) -> dict:
    """An offsets field of the progress: JSON text, or "null" (a batch without offsets), or None."""
    return (json.loads(text) if isinstance(text, str) else text) or {}
