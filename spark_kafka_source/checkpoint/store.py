"""The checkpoint of a series of loads: numbered runs, each with its plan, its tasks' checkpoints,
its commit marker, and, after a rewind, a superseded marker.

Layout under the checkpoint URI (every file is JSON with a ``version`` field)::

    lock.json                         held while a run is in flight (see ``lock``)
    runs/00000001/plan.json           every partition's [start, end) and leader, written before reading
    runs/00000001/tasks/<topic>-<partition>-<from>.json
                                      written by each task when it has read its slice completely
    runs/00000001/commit.json         written only after the run's output is committed
    runs/00000001/report.json         the run's report (per partition and in total)
    runs/00000001/superseded.json     written when a rewind supersedes the run
    retention.json                    the run numbers retention removed are all below ``removed_below``

A run is *committed* when it has ``commit.json``, *pending* when it has a plan and no commit, and
*superseded* when a rewind replaced it. Where the next run starts is the fold of the committed,
not superseded runs' end offsets, in run order (a partition keeps the end of the last run that
planned it). Runs are kept up to a retention count, except those that hold a partition's newest
committed end.
"""

import dataclasses
import datetime
from typing import NamedTuple

from .location import CheckpointError, Location, open_location

FORMAT_VERSION = 1
RUN_DIGITS = 8
DELETING = ".deleting"  # a run directory being removed by retention
DAMAGED = ".damaged"  # a damaged run directory set aside by a repair, kept for inspection
RETENTION_FILE = "retention.json"


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class PartitionPlan(NamedTuple):
    """One partition of a run's plan: ``[start, end)`` and the leader when the run was planned."""

    topic: str
    partition: int
    start: int
    end: int
    leader_id: int
    leader: str  # host:port

    @property
    def key(self) -> tuple:
        return self.topic, self.partition


class TaskCheckpoint(NamedTuple):
    """What one task read: its node, partition, offsets ``[start, until)``, counts and times."""

    node: str
    topic: str
    partition: int
    start: int
    until: int
    records: int
    bytes: int
    first_timestamp: int | None  # ms since the epoch, of the first and last record read
    last_timestamp: int | None
    seconds: float


@dataclasses.dataclass
class Run:
    number: int
    plan: list[PartitionPlan]
    created: str
    details: dict  # what the job that planned the run recorded (output, format, rewind ...)
    commit: dict | None = None
    superseded: dict | None = None

    @property
    def committed(self) -> bool:
        return self.commit is not None

    @property
    def pending(self) -> bool:
        return self.commit is None and self.superseded is None

    def ranges(self) -> dict:
        return {p.key: p for p in self.plan}


class RunEntry(NamedTuple):
    """A run directory as found: the run (None when its plan is missing or unreadable) and a
    one-line description of each damaged file."""

    number: int
    run: Run | None
    damage: list[str]


class CheckpointStore:
    def __init__(self, where: "str | Location") -> None:
        """``where``: a path or URI (opened by ``open_location``), or a location already open."""
        self.location = open_location(where) if isinstance(where, str) else where
        self.uri = self.location.uri

    @staticmethod
    def run_name(number: int) -> str:
        return f"runs/{number:0{RUN_DIGITS}d}"

    # -- reading ------------------------------------------------------------------------------

    def numbers(self) -> list[int]:
        """The numbers of the run directories, whatever they hold."""
        return [int(n) for n in self.location.names("runs") if n.isdigit() and len(n) == RUN_DIGITS]

    def runs(self) -> list[Run]:
        """Every run with a plan, oldest first. A damaged run (a missing or corrupt file, see
        ``survey``) is a CheckpointError naming the file."""
        runs = []
        for entry in self.survey():
            if entry.damage:
                raise CheckpointError(entry.damage[0])
            if entry.run is not None:
                runs.append(entry.run)
        return runs

    def survey(self) -> list["RunEntry"]:
        """Every run directory, oldest first, read as far as it can be, with what is damaged.

        The newest directory may hold nothing but a temporary file (the process was killed while
        writing the plan): it is an unplanned run, not damage. Any other directory without
        ``plan.json`` is damaged, and so is one with a file that cannot be read."""
        numbers = self.numbers()
        entries = []
        for index, number in enumerate(numbers):
            name = self.run_name(number)
            files = [f for f in self.location.names(name) if not f.endswith(".tmp")]
            if "plan.json" not in files:
                newest = index == len(numbers) - 1
                damage = (
                    []
                    if newest and not files
                    else [
                        f"{self.uri}/{name} has no plan.json"
                        + ("" if newest else ", yet later runs exist")
                        + (f" (it holds {', '.join(files)})" if files else "")
                    ]
                )
                entries.append(RunEntry(number, None, damage))
                continue
            entries.append(self._read_run(number, files))
        return entries

    def _read_run(self, number: int, entries: list[str]) -> "RunEntry":
        name = self.run_name(number)
        try:
            plan = self._versioned(f"{name}/plan.json")
            if plan["run"] != number:
                raise CheckpointError(f"{self.uri}/{name}/plan.json belongs to run {plan['run']}, not {number}")
            ranges = [
                PartitionPlan(
                    str(p["topic"]),
                    int(p["partition"]),
                    int(p["start"]),
                    int(p["end"]),
                    int(p["leader_id"]),
                    str(p["leader"]),
                )
                for p in plan["partitions"]
            ]
            created, details = str(plan["created"]), dict(plan.get("details") or {})
        except (KeyError, TypeError, ValueError) as exc:
            return RunEntry(number, None, [f"{self.uri}/{name}/plan.json is corrupt (bad or missing field {exc})"])
        except CheckpointError as exc:
            return RunEntry(number, None, [str(exc)])
        run = Run(number, ranges, created, details)
        damage = []
        for marker, field in (("commit.json", "commit"), ("superseded.json", "superseded")):
            if marker in entries:
                try:
                    setattr(run, field, self._versioned(f"{name}/{marker}"))
                except CheckpointError as exc:
                    damage.append(str(exc))
        return RunEntry(number, run, damage)

    def _versioned(self, name: str) -> dict:
        value = self.location.read_json(name)
        if value.get("version") != FORMAT_VERSION:
            raise CheckpointError(
                f"{self.uri}/{name} has format version {value.get('version')!r}; this version of "
                f"kafkalog reads version {FORMAT_VERSION}"
            )
        return value

    def effective_runs(self) -> list[Run]:
        return [r for r in self.runs() if r.superseded is None]

    def pending_run(self) -> Run | None:
        """The newest run if it was planned and never committed (nor superseded)."""
        runs = self.effective_runs()
        return runs[-1] if runs and runs[-1].pending else None

    def committed_ends(self, runs: list[Run] | None = None) -> dict:
        """(topic, partition) -> the offset the committed, not superseded runs loaded up to."""
        ends = {}
        for run in self.effective_runs() if runs is None else runs:
            if run.committed:
                ends.update({p.key: p.end for p in run.plan})
        return ends

    def next_run_number(self, runs: list[Run] | None = None) -> int:
        """The number of the next run: one past the newest planned run (``runs``, read if not
        given), or the newest run directory when it was created but never planned; never the
        number of a run directory set aside (damaged, or being deleted)."""
        numbers = self.numbers()
        planned = [r.number for r in (self.runs() if runs is None else runs)]
        unplanned_last = numbers and (not planned or numbers[-1] > planned[-1])
        candidate = numbers[-1] if unplanned_last else (planned[-1] + 1 if planned else 1)
        set_aside = [
            int(n[:RUN_DIGITS])
            for n in self.location.names("runs")
            if n[:RUN_DIGITS].isdigit() and n[RUN_DIGITS:].startswith((DAMAGED, DELETING))
        ]
        return max([candidate] + [n + 1 for n in set_aside])

    def tasks(self, number: int) -> list[TaskCheckpoint]:
        name = f"{self.run_name(number)}/tasks"
        found = []
        for entry in self.location.names(name):
            if not entry.endswith(".json"):
                continue  # a temporary file of a task's write
            value = self._versioned(f"{name}/{entry}")
            try:
                found.append(TaskCheckpoint(*(value[field] for field in TaskCheckpoint._fields)))
            except KeyError as exc:
                raise CheckpointError(f"{self.uri}/{name}/{entry} is corrupt (missing field {exc})") from None
        return sorted(found, key=lambda t: (t.topic, t.partition, t.start))

    def report(self, number: int) -> dict | None:
        name = f"{self.run_name(number)}/report.json"
        return self.location.read_json(name) if self.location.exists(name) else None

    def removed_below(self) -> int:
        """Every run retention removed has a number below this (0: retention removed nothing), so
        output of a lower-numbered run the checkpoint no longer holds is explained."""
        if not self.location.exists(RETENTION_FILE):
            return 0
        value = self._versioned(RETENTION_FILE).get("removed_below")
        if not isinstance(value, int):
            raise CheckpointError(f"{self.uri}/{RETENTION_FILE} is corrupt (bad or missing field 'removed_below')")
        return value

    # -- writing ------------------------------------------------------------------------------

    def write_plan(self, number: int, plan: list[PartitionPlan], details: dict) -> Run:
        created = now_iso()
        self.location.write_json(
            f"{self.run_name(number)}/plan.json",
            {
                "version": FORMAT_VERSION,
                "run": number,
                "created": created,
                "details": details,
                "partitions": [p._asdict() for p in plan],
            },
        )
        return Run(number, list(plan), created, details)

    def tasks_uri(self, number: int) -> str:
        return f"{self.uri}/{self.run_name(number)}/tasks"

    def commit(self, number: int, details: dict) -> None:
        self.location.write_json(
            f"{self.run_name(number)}/commit.json",
            {"version": FORMAT_VERSION, "run": number, "committed": now_iso(), **details},
        )

    def write_report(self, number: int, report: dict) -> None:
        self.location.write_json(f"{self.run_name(number)}/report.json", {"version": FORMAT_VERSION, **report})

    def supersede(self, number: int, reason: dict) -> None:
        self.location.write_json(
            f"{self.run_name(number)}/superseded.json",
            {"version": FORMAT_VERSION, "run": number, "superseded": now_iso(), **reason},
        )

    def set_aside_damaged(self, number: int) -> str | None:
        """Rename a damaged run's directory out of the layout (kept for inspection); its new name."""
        name = self.run_name(number)
        if not self.location.exists(name):
            return None
        taken = set(self.location.names("runs"))
        aside = next(
            f"{name}{DAMAGED}{suffix}"
            for suffix in ("", *(f"-{i}" for i in range(2, 10_000)))
            if f"{name}{DAMAGED}{suffix}".split("/")[-1] not in taken
        )
        self.location.move(name, aside)
        return f"{self.uri}/{aside}"

    def apply_retention(self, keep: int) -> list[int]:
        """Remove the oldest runs beyond ``keep``; the numbers removed.

        Never removed: a run holding the newest committed end of some partition (so where the next
        run starts never changes). A run is renamed aside before it is deleted, so a kill in the
        middle leaves a directory ``runs()`` ignores (and the next retention finishes it).
        """
        runs = self.runs()
        protected = {}
        for run in runs:
            if run.committed and run.superseded is None:
                protected.update({p.key: run.number for p in run.plan})
        removable = [r.number for r in runs[: max(len(runs) - keep, 0)] if r.number not in set(protected.values())]
        if removable:
            self.location.write_json(
                RETENTION_FILE,
                {"version": FORMAT_VERSION, "removed_below": max(self.removed_below(), max(removable) + 1)},
            )
        for number in removable:
            self.location.move(self.run_name(number), self.run_name(number) + DELETING)
        for name in self.location.names("runs"):
            if name.endswith(DELETING):
                self.location.delete(f"runs/{name}")
        return removable


def write_task_checkpoint(tasks_uri: str, task: TaskCheckpoint) -> None:
    """Called in a Spark task when its slice is read completely (a retry rewrites the same file)."""
    open_location(tasks_uri).write_json(
        f"{task.topic}-{task.partition}-{task.start}.json",
        {"version": FORMAT_VERSION, "written": now_iso(), **task._asdict()},
    )
