"""Helpers of the load job tests: run ``kafkalog load``, read back what a series of runs wrote, and
compare it with what was produced.

* ``run_load`` runs the job to its end: by default in this process, through ``jobs.load.main`` with
  the test session's SparkSession (a Spark driver takes 30 s or more to start on 2 busy cores), its
  stdout, stderr and warnings captured; with ``process=True`` as ``python -m jobs.load``.
* ``LoadProcess`` starts ``python -m jobs.load`` in the background, in its own process group, so
  that ``kill()`` (SIGKILL to the group) takes the Spark JVM and its Python workers with it,
  exactly as a killed scheduled job dies.
* ``output_rows`` reads the committed output with pyarrow (hive partitioning; ``_staging``,
  ``_superseded`` and ``_checkpoint`` are skipped because their names start with ``_``);
  ``assert_exactly_once`` compares the multiset of (topic, partition, offset) and every record's
  key, value and timestamp with the records produced.
* ``report_json`` / ``printed_report`` give a run's report as written and as printed;
  ``assert_report`` checks its numbers against the produced records.
"""

import collections
import contextlib
import datetime
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from jobs.load import main as load_main
from jobs.report import counted
from jobs.runner import PAUSE_VARIABLE
from tests.processes import kill_tree
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 180
# a run in its own process is a short-lived Spark driver: no UI, and a JVM that compiles less and
# collects simply (starts ~30% faster on 2 busy cores)
SPARK_CONF = (
    "--conf",
    "spark.ui.enabled=false",
    "--conf",
    "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
)
HOUR_MS = 3600 * 1000


class Result(NamedTuple):
    code: int
    stdout: str
    stderr: str

    def errors(self) -> list[str]:
        """The job's own error lines on stderr (Spark and the JVM log their own lines there too)."""
        return [line for line in self.stderr.splitlines() if line.startswith("kafkalog load:")]

    def one_error(self) -> str:
        """The one-line reason of a failed run (and no Python traceback)."""
        errors = self.errors()
        assert len(errors) == 1, f"expected one error line, got {errors}; stderr:\n{self.stderr[-3000:]}"
        assert "Traceback" not in self.stderr, self.stderr[-3000:]
        return errors[0]


def load_args(bootstrap: str, topics: str, output, *extra: str, quiet: bool = True) -> list[str]:
    args = ["--bootstrap-servers", bootstrap, "--topics", topics, "--output", str(output)]
    return args + (["--quiet"] if quiet else []) + list(extra)


def _environment(pause_at: str | None) -> dict:
    env = dict(os.environ)
    env.pop(PAUSE_VARIABLE, None)
    if pause_at:
        env[PAUSE_VARIABLE] = pause_at
    env["PYSPARK_PYTHON"] = sys.executable
    return env


class LoadProcess:
    """``python -m jobs.load ARGS`` in the background, its stdout and stderr in files."""

    started: list = []  # every load started, so a test's teardown kills what is still running

    def __init__(self, args: list[str], directory: Path, pause_at: str | None = None, name: str = "load"):
        directory.mkdir(parents=True, exist_ok=True)
        index = len(list(directory.glob(f"{name}-*.out")))
        self.stdout_path = directory / f"{name}-{index}.out"
        self.stderr_path = directory / f"{name}-{index}.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jobs.load", *args, *SPARK_CONF],
                cwd=ROOT,
                env=_environment(pause_at),
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        LoadProcess.started.append(self)

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_for_stdout(self, text: str, timeout: float = RUN_TIMEOUT) -> None:
        wait_for(
            lambda: text in self.stdout() or self.process.poll() is not None,
            timeout,
            interval=0.05,
            what=f"{text!r} on the load's stdout",
        )
        assert text in self.stdout(), (
            f"the load ended ({self.process.returncode}) without printing {text!r}; "
            f"stdout:\n{self.stdout()}\nstderr:\n{self.stderr()[-3000:]}"
        )

    def wait(self, timeout: float = RUN_TIMEOUT) -> Result:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the load did not end within {timeout}s; stderr:\n{self.stderr()[-3000:]}") from None
        return Result(code, self.stdout(), self.stderr())

    def kill(self) -> None:
        """SIGKILL the load with its Spark JVM and workers (``kill_tree``)."""
        kill_tree(self.process)

    def interrupt(self) -> None:
        """Ctrl-C, as a terminal sends it: SIGINT to the load's whole process group."""
        os.killpg(self.process.pid, signal.SIGINT)


def kill_leftovers() -> None:
    while LoadProcess.started:
        process = LoadProcess.started.pop()
        if process.process.poll() is None:
            process.kill()


def run_load(args: list[str], directory: Path, process: bool = False) -> Result:
    """One run to its end: in this process (bounded by the test's timeout), or (``process``) as
    ``python -m jobs.load`` in ``directory``, bounded by ``RUN_TIMEOUT``."""
    if process:
        return LoadProcess(args, directory).wait()
    return _run_in_this_process(args)


def _run_in_this_process(args: list[str]) -> Result:
    """``jobs.load.main(args)`` with this session's SparkSession (the job's ``getOrCreate`` finds it),
    its stdout and stderr captured, and the warnings it logs written to its stderr as they would be
    by Python's last-resort handler in a process of its own."""
    from pyspark.sql import SparkSession

    assert SparkSession.getActiveSession() is not None, "an in-process load needs the test's `spark` fixture"
    out, err = io.StringIO(), io.StringIO()
    warnings = logging.StreamHandler(err)
    warnings.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(warnings)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = load_main(args)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        root.removeHandler(warnings)
    return Result(code, out.getvalue(), err.getvalue())


def ok(result: Result) -> Result:
    assert result.code == 0, f"exit status {result.code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    assert not result.errors() and "Traceback" not in result.stderr, result.stderr[-4000:]
    return result


# -- time --------------------------------------------------------------------------------------------


def yesterday_ms(hour: int, minute: int = 0, second: int = 0) -> int:
    """Epoch ms of a time of day yesterday (UTC): in the past, well inside the default retention."""
    day = datetime.datetime.now(datetime.timezone.utc).date() - datetime.timedelta(days=1)
    moment = datetime.datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=datetime.timezone.utc)
    return int(moment.timestamp() * 1000)


def iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def utc_date_hour(ms: int) -> tuple[str, int]:
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return moment.date().isoformat(), moment.hour


# -- output ------------------------------------------------------------------------------------------


class Row(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    run: int
    date: str
    hour: int
    file: str


def output_rows(output) -> list[Row]:
    """Every record in the committed output (``run=*`` directories), with the directory it is in."""
    output = Path(output)
    if not output.exists() or not any(p.name.startswith("run=") for p in output.iterdir()):
        return []
    dataset = ds.dataset(str(output), format="parquet", partitioning="hive")
    rows = []
    for fragment in dataset.get_fragments():
        table = fragment.to_table(schema=dataset.schema)
        millis = pc.cast(pc.cast(table.column("timestamp"), pa.timestamp("ms")), pa.int64()).to_pylist()
        columns = {
            name: table.column(name).to_pylist()
            for name in ("topic", "partition", "offset", "key", "value", "run", "date", "hour")
        }
        for i, ms in enumerate(millis):
            rows.append(
                Row(
                    columns["topic"][i],
                    columns["partition"][i],
                    columns["offset"][i],
                    columns["key"][i],
                    columns["value"][i],
                    ms,
                    columns["run"][i],
                    str(columns["date"][i]),
                    columns["hour"][i],
                    fragment.path,
                )
            )
    return rows


def identities(rows) -> collections.Counter:
    return collections.Counter((r.topic, r.partition, r.offset) for r in rows)


def assert_exactly_once(output, expected_recs, rows=None) -> list[Row]:
    """The output holds every expected record exactly once (and nothing else), with its key, value
    and timestamp as produced. ``expected_recs``: ``feed.Rec``s."""
    rows = output_rows(output) if rows is None else rows
    counts = identities(rows)
    expected = {(r.topic, r.partition, r.offset): r for r in expected_recs}
    duplicated = sorted(k for k, n in counts.items() if n > 1)
    missing = sorted(set(expected) - set(counts))
    extra = sorted(set(counts) - set(expected))
    assert not (duplicated or missing or extra), (
        f"{len(rows)} records in the output, {len(expected)} expected: duplicated {len(duplicated)} "
        f"{duplicated[:5]}, missing {len(missing)} {missing[:5]}, unexpected {len(extra)} {extra[:5]}"
    )
    for row in rows:
        rec = expected[(row.topic, row.partition, row.offset)]
        assert (row.key, row.value or b"", row.timestamp) == (rec.key, rec.value or b"", rec.timestamp), (row, rec)
    return rows


def tree(path) -> dict:
    """Every file under ``path`` with its content (to show that something changed nothing)."""
    path = Path(path)
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# -- checkpoint and report ---------------------------------------------------------------------------


def run_dir(output, number: int) -> Path:
    return Path(output) / "_checkpoint" / "runs" / f"{number:08d}"


def report_json(output, number: int) -> dict:
    return json.loads((run_dir(output, number) / "report.json").read_text())


def printed_report(stdout: str) -> dict:
    """The report table printed at the end of a run: its head line, its partition rows and total."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"run \d+.*: \d+ records?, \d+ bytes? in ", line)]
    assert starts, f"no report in stdout:\n{stdout}"
    head, columns, *rows = lines[starts[-1] :]
    assert columns.split() == [
        "topic",
        "partition",
        "from",
        "until",
        "records",
        "bytes",
        "seconds",
        "latest",
        "lag",
        "lost",
    ]
    partitions, total = {}, None
    for line in rows:
        cells = line.split()
        if cells and cells[0] == "total":
            count, records, size, seconds, lag, lost = cells[1:]
            total = {
                "partitions": int(count),
                "records": int(records),
                "bytes": int(size),
                "seconds": float(seconds),
                "lag": int(lag),
                "lost": int(lost),
            }
            break
        topic, partition, start, until, records, size, seconds, latest, lag, lost = cells
        partitions[(topic, int(partition))] = {
            "from": int(start),
            "until": int(until),
            "records": int(records),
            "bytes": int(size),
            "seconds": float(seconds),
            "latest": int(latest),
            "lag": int(lag),
            "lost": int(lost),
        }
    assert total is not None, f"no total row in:\n{stdout}"
    return {"head": head, "partitions": partitions, "total": total}


def assert_report(report: dict, recs, ranges: dict, latest: dict | None = None, printed: dict | None = None) -> None:
    """A run's report.json agrees with the records produced, and with the printed table if given:
    ``ranges`` (topic, partition) -> (from, until) the run loaded, ``latest`` the broker's end after
    it (default: until, no lag). No data was lost, so records = until - from."""
    latest = latest or {tp: until for tp, (_, until) in ranges.items()}
    assert {(p["topic"], p["partition"]): (p["from"], p["until"]) for p in report["partitions"]} == ranges
    for p in report["partitions"]:
        key = (p["topic"], p["partition"])
        mine = [r for r in recs if (r.topic, r.partition) == key and p["from"] <= r.offset < p["until"]]
        assert p["records"] == p["until"] - p["from"] == len(mine), p
        assert p["bytes"] == sum(len(r.key or b"") + len(r.value or b"") for r in mine), p
        assert p["first_timestamp"] == min((r.timestamp for r in mine), default=None), p
        assert p["last_timestamp"] == max((r.timestamp for r in mine), default=None), p
        assert p["latest"] == latest[key] and p["lag"] == latest[key] - p["until"], p
        if printed is None:
            continue
        row = printed["partitions"][key]
        assert {k: row[k] for k in ("from", "until", "records", "bytes", "latest", "lag", "lost")} == {
            k: p[k] for k in ("from", "until", "records", "bytes", "latest", "lag", "lost")
        }
        assert abs(row["seconds"] - p["seconds"]) < 1e-6 and p["seconds"] >= 0
    total = report["total"]
    assert total["partitions"] == len(ranges)
    for field in ("records", "bytes", "lag"):
        assert total[field] == sum(p[field] for p in report["partitions"]), field
    assert total["offsets"] == sum(until - start for start, until in ranges.values())
    if printed is None:
        return
    assert printed["total"] == {
        "partitions": total["partitions"],
        "records": total["records"],
        "bytes": total["bytes"],
        "seconds": report["seconds"],
        "lag": total["lag"],
        "lost": total["lost"],
    }
    head = printed["head"]
    assert (
        head.startswith(f"run {report['run']}")
        and f": {counted(total['records'], 'record')}, "
        f"{counted(total['bytes'], 'byte')} in {report['seconds']} s -> {report['output']}"
        in head
    )
