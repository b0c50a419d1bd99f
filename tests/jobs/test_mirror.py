"""``kafkalog mirror`` between two real broker processes: the test session's broker (``jobs_broker``)
is the source, ``target`` a second broker that creates no topic on first use.

* An AvailableNow mirror of a topic pattern, with a prefix, in several micro-batches: the target
  topics are created with the source's partition counts and topic settings, every record is there
  once in its partition and order with its key, value, headers and timestamp, the progress lines
  give each partition's lag, the source's consumer group has the ends; run again after new records
  and a new topic, it carries on from its checkpoint (still once each).
* A continuous mirror in its own process picks up a topic created on the source while it runs, is
  SIGKILLed (with its Spark JVM) at a random moment of the stream, and the same command resumes it:
  nothing is lost, and each partition's duplicates are at most one stretch of one micro-batch.
* Refusals in one line, before Spark starts: a pattern that matches nothing, an unreachable target,
  the same cluster without a prefix; a dry run that says what it would create or grow and changes
  nothing; each side's client settings (SASL) from --from-config / --to-config.
"""

import contextlib
import io
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from broker.client import GroupClient
from broker.embedded import EmbeddedBroker
from jobs.mirror import main as mirror_main
from jobs.mirror_run import _follow
from tests.processes import kill_tree
from tests.spark.feed import client, create_topic, load, messages, produce, rows
from tests.waiting import wait_for

from .loads import ROOT, SPARK_CONF

pytestmark = pytest.mark.timeout(400)
BATCH = 20  # --max-offsets-per-trigger


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    process = EmbeddedBroker(
        tmp_path_factory.mktemp("mirror-target") / "log", {"auto.create.topics.enable": "false", "num.partitions": "1"}
    ).start()
    yield process
    process.kill()


def run_mirror(*args: str) -> tuple[int, str, str]:
    """``kafkalog mirror ARGS`` in this process (with the test's SparkSession): (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = mirror_main(list(args))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def records(spark, bootstrap: str, topics: list[str]) -> dict:
    """{(topic, partition): [(key, value, timestamp, timestamp type, headers), ...] in offset order}."""
    found: dict = {}
    frame = load(spark, bootstrap, subscribe=",".join(topics), startingOffsets="earliest", includeHeaders="true")
    for rec in rows(frame):
        found.setdefault((rec.topic, rec.partition), []).append(
            (rec.key, rec.value, rec.timestamp, rec.timestamp_type, rec.headers)
        )
    return found


def renamed(found: dict, prefix: str) -> dict:
    return {(prefix + topic, partition): recs for (topic, partition), recs in found.items()}


def test_available_now_mirror_copies_every_record_once_and_carries_on(jobs_broker, target, spark, tmp_path):
    source, prefix = jobs_broker.bootstrap, "dc1."
    create_topic(source, "mir-a", 3, {"retention.ms": "86400000", "cleanup.policy": "delete"})
    create_topic(source, "mir-b", 1)
    produce(source, "mir-a", messages(45, partitions=(0, 1, 2), tag="a"))
    produce(source, "mir-b", messages(12, tag="b"))
    args = [
        "--from",
        source,
        "--to",
        target.bootstrap,
        "--topic-pattern",
        "mir-.*",
        "--topic-prefix",
        prefix,
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--available-now",
        "--max-offsets-per-trigger",
        str(BATCH),
        "--group-id",
        "mirror-test",
    ]

    code, out, err = run_mirror(*args)
    assert code == 0, err[-3000:]
    assert "created topic dc1.mir-a on the target: 3 partitions, cleanup.policy=delete, retention.ms=86400000" in out
    assert "created topic dc1.mir-b on the target: 1 partition\n" in out
    assert out.splitlines()[-1].startswith("done: 57 records copied in "), out
    with client(target.bootstrap) as c:
        assert len(c.partitions_of("dc1.mir-a")) == 3
        settings = {e.name: e.value for e in c.describe_configs("dc1.mir-a") if not e.is_default}
    assert settings["retention.ms"] == "86400000"
    assert records(spark, target.bootstrap, ["dc1.mir-a", "dc1.mir-b"]) == renamed(
        records(spark, source, ["mir-a", "mir-b"]), prefix
    )
    batches = [line for line in out.splitlines() if line.startswith("batch ")]
    assert len(batches) >= 57 // BATCH, out  # the limit makes several micro-batches
    assert batches[-1].endswith("lag 0: mir-a-0 0, mir-a-1 0, mir-a-2 0, mir-b-0 0"), batches[-1]
    first = int(batches[0].split()[2])  # "batch 0: N records in ..."
    assert 0 < first <= BATCH and f"; lag {57 - first}: " in batches[0], batches[0]
    with client(source) as c:
        committed = GroupClient(c).committed("mirror-test", {"mir-a": [0, 1, 2], "mir-b": [0]})
    assert {tp: o.offset for tp, o in committed.items()} == {
        ("mir-a", 0): 15,
        ("mir-a", 1): 15,
        ("mir-a", 2): 15,
        ("mir-b", 0): 12,
    }

    # new records, a partition added and a topic created since: the next run carries on from its
    # checkpoint, growing the target topic as MirrorMaker 2 does
    create_topic(source, "mir-c", 2)
    with client(source) as c:
        c.create_partitions("mir-a", 4)
    produce(source, "mir-a", messages(6, partitions=(0, 2, 3), tag="a2"))
    produce(source, "mir-c", messages(8, partitions=(0, 1), tag="c"))
    code, out, err = run_mirror(*args)
    assert code == 0, err[-3000:]
    assert "created topic dc1.mir-c on the target: 2 partitions" in out and "created topic dc1.mir-a" not in out
    assert "grew topic dc1.mir-a on the target from 3 to 4 partitions, as source topic mir-a" in out
    assert out.splitlines()[-1].startswith("done: 14 records copied in "), out
    assert records(spark, target.bootstrap, ["dc1.mir-a", "dc1.mir-b", "dc1.mir-c"]) == renamed(
        records(spark, source, ["mir-a", "mir-b", "mir-c"]), prefix
    )


def test_refusals_are_one_line_before_spark_starts(jobs_broker, target, tmp_path):
    source = jobs_broker.bootstrap
    create_topic(source, "refused-a", 2)
    create_topic(target.bootstrap, "refused-a", 1)
    common = ["--from", source, "--checkpoint", str(tmp_path / "checkpoint"), "--available-now"]
    fast = tmp_path / "fast.properties"
    fast.write_text("retries=0\n")
    cases = [
        (
            ["--to", target.bootstrap, "--topic-pattern", "nothing-.*"],
            "no topic on the source cluster " + source + " matches --topic-pattern 'nothing-.*'",
        ),
        (
            ["--to", target.bootstrap, "--topics", "refused-a,refused-nosuch,refused-none"],
            f"no topic refused-nosuch, refused-none on the source cluster {source}: --topics names existing topics",
        ),
        (
            ["--to", "127.0.0.1:1", "--to-config", str(fast), "--topics", "refused-a"],
            "the target cluster 127.0.0.1:1: ",
        ),
        (
            ["--to", source, "--topics", "refused-a"],
            "source and target are one cluster and the mirror reads topic 'refused-a'",
        ),
    ]
    for extra, expected in cases:
        code, out, err = run_mirror(*common, *extra)
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and lines[0].startswith("kafkalog mirror: ") and expected in lines[0], (
            extra,
            err,
        )
        assert not (tmp_path / "checkpoint").exists()


def test_a_dry_run_says_what_it_would_create_or_grow_and_changes_nothing(jobs_broker, target, tmp_path):
    source = jobs_broker.bootstrap
    create_topic(source, "dry-a", 3, {"retention.ms": "7200000"})
    create_topic(source, "dry-b", 2)
    create_topic(target.bootstrap, "dry-b", 1)
    code, out, err = run_mirror(
        "--from",
        source,
        "--to",
        target.bootstrap,
        "--topic-pattern",
        "dry-.*",
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--dry-run",
    )
    assert code == 0, err
    assert out.splitlines() == [
        "would create topic dry-a on the target: 3 partitions, retention.ms=7200000",
        "would grow topic dry-b on the target from 1 to 2 partitions, as source topic dry-b",
        f"would mirror 5 partitions of 2 topics from {source} to {target.bootstrap}",
        "dry run: nothing was created, grown or copied",
    ]
    with client(target.bootstrap) as c:
        assert "dry-a" not in c.topics() and len(c.partitions_of("dry-b")) == 1
    assert not (tmp_path / "checkpoint").exists()


def test_each_side_connects_with_its_own_client_settings(jobs_broker, tmp_path):
    """A cluster behind SASL PLAIN as the target, then as the source: --to-config's and --from-config's
    credentials reach it (a wrong password is refused in one line, naming the side), the other side
    needs none (shown by a dry run, which reaches both sides and starts no Spark)."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="{}";'
    secured = EmbeddedBroker(
        tmp_path / "secured",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'user_mirror="mirror-secret";',
        },
    ).start()
    try:
        plain, sasl = jobs_broker.bootstrap, secured.bootstrap_of(1)
        create_topic(plain, "secured-a", 2)
        create_topic(secured.bootstrap_of(0), "secured-a", 1)
        create_topic(secured.bootstrap_of(0), "secured-b", 3)
        create_topic(plain, "secured-b", 2)
        config = tmp_path / "client.properties"
        for side, topic, sides in [
            ("target", "secured-a", ["--from", plain, "--to", sasl, "--to-config", str(config)]),
            ("source", "secured-b", ["--from", sasl, "--to", plain, "--from-config", str(config)]),
        ]:
            config.write_text(
                f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                f"sasl.jaas.config={jaas.format('wrong-secret')}\n"
            )
            code, out, err = run_mirror(*sides, "--topics", topic, "--checkpoint", str(tmp_path / "checkpoint"))
            assert code == 1 and err.startswith(
                f"kafkalog mirror: the {side} cluster {sasl}: {sasl} refused user 'mirror'"
            ), (side, err)
            assert err.count("\n") == 1 and "wrong-secret" not in err, err
            config.write_text(config.read_text().replace("wrong-secret", "mirror-secret"))
            code, out, err = run_mirror(
                *sides, "--topics", topic, "--checkpoint", str(tmp_path / "checkpoint"), "--dry-run"
            )
            assert code == 0 and f"would grow topic {topic} on the target from " in out, (side, out, err)
    finally:
        secured.kill()


class MirrorProcess:
    """``python -m jobs.mirror ARGS`` in its own session, so that ``kill`` takes its Spark JVM along."""

    def __init__(self, args: list[str], directory: Path):
        self.out = directory / "mirror.out"
        with open(self.out, "wb") as out, open(directory / "mirror.err", "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jobs.mirror", *args, *SPARK_CONF],
                cwd=ROOT,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def batches(self) -> list[str]:
        return [line for line in self.out.read_text().splitlines() if line.startswith("batch ")]

    def wait_for_a_batch(self) -> None:
        """Until the mirror reported its first micro-batch (or ended)."""
        wait_for(lambda: self.batches() or self.process.poll() is not None, 180, what="a first micro-batch")

    def kill(self) -> None:
        kill_tree(self.process)

    def interrupt(self) -> None:
        """Ctrl-C, as a terminal sends it: SIGINT to the mirror's whole process group."""
        os.killpg(self.process.pid, signal.SIGINT)


def duplicated_stretch(copied: list, original: list) -> int:
    """How many records ``copied`` holds twice, checking that it is ``original`` in order with at most
    one stretch repeated: ``original[:x] + original[s:]`` with ``s <= x``."""
    if copied == original:
        return 0
    x = next(
        (i for i, (a, b) in enumerate(zip(copied, original, strict=False)) if a != b), min(len(copied), len(original))
    )
    assert x < len(copied), f"{len(original) - len(copied)} records missing from the copy"
    assert copied[x] in original[:x], f"record {x} of the copy is not a repeat: {copied[x]}"
    s = original.index(copied[x])
    assert copied == original[:x] + original[s:], "the copy is not the original with one stretch repeated"
    return x - s


def test_a_killed_mirror_resumes_and_loses_nothing(jobs_broker, target, spark, tmp_path):
    source = jobs_broker.bootstrap
    create_topic(source, "kill-a", 2)
    produce(source, "kill-a", messages(160, partitions=(0, 1), tag="k"))
    args = [
        "--from",
        source,
        "--to",
        target.bootstrap,
        "--topic-pattern",
        "kill-.*",
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--max-offsets-per-trigger",
        str(BATCH),
    ]
    running = MirrorProcess(args + ["--trigger-interval", "0.1"], tmp_path)
    try:
        running.wait_for_a_batch()
        assert running.process.poll() is None, (tmp_path / "mirror.err").read_text()[-3000:]
        create_topic(source, "kill-new", 1)  # created while the mirror runs: it must pick it up
        produce(source, "kill-new", messages(5, tag="n"))
        with client(target.bootstrap) as c:
            wait_for(lambda: "kill-new" in c.topics(), 60, interval=0.2, what="kill-new on the target")
        time.sleep(random.uniform(0, 1))  # then at a random moment of the stream
        running.kill()
    finally:
        running.kill()
    copied_before = records(spark, target.bootstrap, ["kill-a"])
    assert sum(map(len, copied_before.values())) < 160, "killed too late: everything was copied already"

    code, out, err = run_mirror(*args, "--available-now")  # the same command, up to what is there now
    assert code == 0, err[-3000:]
    original = records(spark, source, ["kill-a", "kill-new"])
    copied = records(spark, target.bootstrap, ["kill-a", "kill-new"])
    assert set(copied) == set(original)
    repeated = {tp: duplicated_stretch(copied[tp], original[tp]) for tp in original}
    assert sum(repeated.values()) <= BATCH, repeated  # at most the micro-batch being written when killed
    print(f"records copied twice after the kill: {repeated}")


def test_ctrl_c_stops_the_mirror_with_one_line_and_the_same_command_resumes(jobs_broker, target, spark, tmp_path):
    source = jobs_broker.bootstrap
    create_topic(source, "ctrl-c", 2)
    produce(source, "ctrl-c", messages(400, partitions=(0, 1), tag="c"))
    args = [
        "--from",
        source,
        "--to",
        target.bootstrap,
        "--topics",
        "ctrl-c",
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--max-offsets-per-trigger",
        str(BATCH),
    ]
    running = MirrorProcess(args + ["--trigger-interval", "0.1"], tmp_path)
    try:
        running.wait_for_a_batch()
        running.interrupt()
        code = running.process.wait(60)
    finally:
        running.kill()
    stderr = (tmp_path / "mirror.err").read_text()
    assert code == 130, stderr[-3000:]
    assert "Traceback" not in stderr and len(stderr.splitlines()) <= 2, stderr[-3000:]
    assert running.out.read_text().splitlines()[-1] == "stopped; the same command resumes from the checkpoint"

    code, out, err = run_mirror(*args, "--available-now")
    assert code == 0, err[-3000:]
    original, copied = records(spark, source, ["ctrl-c"]), records(spark, target.bootstrap, ["ctrl-c"])
    assert set(copied) == set(original)
    assert sum(duplicated_stretch(copied[tp], original[tp]) for tp in original) <= BATCH


def test_an_idle_query_is_reported_once_not_at_every_idle_progress(jobs_broker, spark, tmp_path):
    """Spark reports an idle query's progress again and again (every 10 s by default, 100 ms here)
    for the same batch: the mirror printed "batch 1: 0 records ..." each time."""
    source = jobs_broker.bootstrap
    create_topic(source, "idle", 1)
    produce(source, "idle", messages(3, tag="i"))
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100ms")
    try:
        query = (
            spark.readStream.format("kafkalog")
            .option("kafka.bootstrap.servers", source)
            .option("subscribe", "idle")
            .option("startingOffsets", "earliest")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="100 milliseconds")
            .start()
        )
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    interrupted = threading.Event()

    def interrupt_once_idle_three_times() -> None:
        try:
            wait_for(
                lambda: sum(not p.numInputRows for p in query.recentProgress) >= 3 or not query.isActive,
                180,
                interval=0.2,
                what="three idle progress reports",
            )
        finally:
            interrupted.set()

    watcher = threading.Thread(target=interrupt_once_idle_three_times)
    watcher.start()
    lines: list[str] = []
    try:
        assert _follow(query, lines.append, interrupted) == {}
    finally:
        interrupted.set()
        watcher.join()
        query.stop()
    assert sum(not p.numInputRows for p in query.recentProgress) >= 3
    assert lines[0].startswith("batch 0: 3 records in "), lines
    idle = [line.split(":")[0] for line in lines if ": 0 records in " in line]
    assert idle and len(idle) == len(set(idle)), lines
