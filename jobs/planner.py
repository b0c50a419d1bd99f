"""What the next run of a load reads: the plan of a pending run again, the next increment, or a
rewind.

* A pending run (planned, never committed) is executed again with its own plan, whatever changed.
* Otherwise each partition starts where the committed runs ended (partitions never loaded start
  at ``--starting-offsets``, earliest by default) and ends at the latest offset now.
* A rewind supersedes the runs after the chosen point and starts there. A point in the middle of
  a run (a time or an offset inside its range) supersedes that whole run, so every partition of it
  is loaded again from the run's start: nothing is duplicated and nothing is lost. A rewind never
  skips forward: a partition whose point lies past what is loaded continues where it is.

Data loss (a start no longer on the broker) follows ``--fail-on-data-loss``, as in the data source.
"""

import collections
import json
from typing import NamedTuple

from broker.client import EARLIEST, LATEST, KafkaClient
from spark_kafka_source import options as source_options
from spark_kafka_source.checkpoint import CheckpointStore, PartitionPlan, Run
from spark_kafka_source.planning import resolve_ranges, topic_partitions

from .load import UsageError
from .report import counted

SHOWN_TOPICS = 10
READ_SCOPE = (
    "assign",
    "subscribe",
    "subscribepattern",
    "startingoffsets",
    "endingoffsets",
    "startingtimestamp",
    "endingtimestamp",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
)


class Rewind(NamedTuple):
    kind: str  # "time" (ms), "run" or "offsets"
    value: int | dict[tuple[str, int], int]  # int for time and run; {(topic, partition): offset} for offsets

    def describe(self) -> dict:
        value = {f"{t}-{p}": o for (t, p), o in self.value.items()} if isinstance(self.value, dict) else self.value
        return {"kind": self.kind, "value": value}


class LoadPlan(NamedTuple):
    run: int
    partitions: list[PartitionPlan]
    again: bool  # executing a pending run's plan again
    supersede: list[int]  # runs a rewind supersedes, newest first
    lost: list = []  # with failOnDataLoss=false: {topic, partition, from, until} of offsets already deleted


def source_client(source: dict) -> KafkaClient:
    """A client for the brokers and client settings of kafkalog source options."""
    parsed = source_options.parse(source)
    return parsed.client.client(parsed.bootstrap_servers)


def plan_next(
    store: CheckpointStore,
    client: KafkaClient,
    source: dict,
    starting: str = "earliest",
    rewind: Rewind | None = None,
    allow_empty: bool = False,
) -> LoadPlan:
    """``source``: data source options naming the brokers, the topics (subscribe or subscribePattern),
    failOnDataLoss and client settings. A pattern matching no topic is a UsageError unless
    ``allow_empty``."""
    history = store.runs()
    runs = [r for r in history if r.superseded is None]
    pending = runs[-1] if runs and runs[-1].pending else None
    if pending and (rewind is None or pending.details.get("rewind") == rewind.describe()):
        return LoadPlan(pending.number, pending.plan, True, [])  # (a killed rewind, retried, goes on)
    committed = [r for r in runs if r.committed]
    parsed = source_options.parse(source)
    partitions = topic_partitions(client, parsed)
    if not partitions and parsed.subscribe_pattern is not None and not allow_empty:
        _no_topic_matches(client, parsed.subscribe_pattern, parsed.bootstrap_servers)
    superseded: list[Run] = []
    targets: dict = {}
    if rewind is not None:
        targets = _targets(client, rewind, partitions)
        _check_within_history(history, committed, targets)
        first = _first_superseded(committed, rewind, targets)
        superseded = [r for r in committed if first is not None and r.number >= first] + ([pending] if pending else [])
        committed = [r for r in committed if r not in superseded]
    starts = dict(targets)
    for run in reversed(superseded):  # a partition of superseded runs starts at its start there, or earlier
        starts.update({p.key: min(p.start, starts.get(p.key, p.start)) for p in run.plan})
    starts.update(store.committed_ends(committed))
    ranges = _ranges(client, source, partitions, starts, starting)
    lost = [
        {"topic": r.topic, "partition": r.partition, "from": starts[(r.topic, r.partition)], "until": r.start}
        for r in ranges
        if starts.get((r.topic, r.partition), r.start) < r.start
    ]
    plan = [PartitionPlan(r.topic, r.partition, r.start, r.end, *_leader(client, r.topic, r.partition)) for r in ranges]
    return LoadPlan(
        store.next_run_number(history), plan, False, sorted((r.number for r in superseded), reverse=True), lost
    )


def _no_topic_matches(client: KafkaClient, pattern: str, bootstrap: str) -> None:
    topics = sorted(client.topics())
    shown = ", ".join(topics[:SHOWN_TOPICS]) + (", ..." if len(topics) > SHOWN_TOPICS else "")
    raise UsageError(
        f"--topic-pattern {pattern!r} matches no topic on {bootstrap} (a pattern matches whole names; "
        f"{counted(len(topics), 'topic')} there{': ' + shown if topics else ''}); pass --allow-empty if "
        f"a run may find none"
    )


def _targets(client: KafkaClient, rewind: Rewind, partitions: list) -> dict:
    """(topic, partition) -> the offset a time or offsets rewind points at."""
    if isinstance(rewind.value, dict):  # kind "offsets"
        counts = collections.Counter(t for t, _ in partitions)
        unknown = [
            f"{t} is not a topic being loaded"
            if t not in counts
            else f"partition {t}-{p} does not exist ({t} has partitions 0 to {counts[t] - 1})"
            for t, p in sorted(set(rewind.value) - set(partitions))
        ]
        if unknown:
            raise UsageError(f"--rewind-to-offsets: {'; '.join(unknown)}")
        return dict(rewind.value)
    if rewind.kind == "time":
        found = client.list_offsets({tp: rewind.value for tp in partitions})
        latest = client.list_offsets({tp: LATEST for tp in partitions})
        return {tp: offset if offset >= 0 else latest[tp][0] for tp, (offset, _) in found.items()}
    return {}


def _check_within_history(runs: list[Run], committed: list[Run], targets: dict) -> None:
    """Once retention removed the oldest runs, their output stays but their ranges are forgotten:
    a rewind to before the oldest kept run would load their offsets a second time."""
    if not runs or runs[0].number == 1:
        return  # the whole history is there
    oldest: dict[tuple[str, int], int] = {}
    for run in committed:
        for p in run.plan:
            oldest.setdefault(p.key, p.start)
    early = sorted(tp for tp, target in targets.items() if tp in oldest and target < oldest[tp])
    if early:
        names = ", ".join(f"{t}-{p} (asked {targets[(t, p)]}, kept from {oldest[(t, p)]})" for t, p in early[:5])
        raise UsageError(
            f"the rewind reaches before the oldest run kept in the checkpoint's history (run "
            f"{runs[0].number}; older runs were removed by --keep-runs, their output stays): {names}; "
            f"rewind to run {runs[0].number} or later"
        )


def _first_superseded(committed: list[Run], rewind: Rewind, targets: dict) -> int | None:
    """The oldest committed run a rewind supersedes (with all the runs after it), or None."""
    if rewind.kind == "run" and isinstance(rewind.value, int):
        numbers = [r.number for r in committed]
        if rewind.value not in numbers:
            known = ", ".join(map(str, numbers)) or "none"
            raise UsageError(
                f"--rewind-to-run {rewind.value}: no such committed run in the history (committed "
                f"runs not superseded: {known})"
            )
        return rewind.value
    for run in committed:
        for p in run.plan:
            if p.key in targets and p.end > p.start and p.end > targets[p.key]:
                return run.number
    return None


def _ranges(client: KafkaClient, source: dict, partitions: list, starts: dict, starting: str) -> list:
    """[start, latest) for every partition, with the data source's data loss rules; a partition whose
    offsets started over (its topic was re-created) is read from its earliest offset."""
    if not partitions:
        return []
    new = [tp for tp in partitions if tp not in starts]
    if new:
        where = client.list_offsets({tp: EARLIEST if starting == "earliest" else LATEST for tp in new})
        starts = {**starts, **{tp: offset for tp, (offset, _) in where.items()}}
    ranges = _resolved(client, source, {tp: starts[tp] for tp in partitions})
    missing = set(partitions) - {(r.topic, r.partition) for r in ranges}
    if missing:  # failOnDataLoss=false and the log now ends before the start: it started over
        ranges = _resolved(client, source, {tp: EARLIEST if tp in missing else starts[tp] for tp in partitions})
    return ranges


def _resolved(client: KafkaClient, source: dict, starts: dict) -> list:
    return resolve_ranges(client, source_options.parse(exact_read_options(source, starts)))


def exact_read_options(source: dict, starts: dict, ends: dict | None = None) -> dict:
    """kafkalog options reading exactly the partitions of ``starts`` from those offsets to ``ends``
    (to the latest offsets when None), keeping the other options of ``source`` (brokers, client
    settings, failOnDataLoss)."""
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for (topic, partition), start in starts.items():
        assign.setdefault(topic, []).append(partition)
        starting.setdefault(topic, {})[str(partition)] = start
        if ends is not None:
            ending.setdefault(topic, {})[str(partition)] = ends[(topic, partition)]
    kept = {k: v for k, v in source.items() if k.lower() not in READ_SCOPE}
    return dict(
        kept,
        assign=json.dumps(assign),
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending) if ends is not None else "latest",
    )


def _leader(client: KafkaClient, topic: str, partition: int) -> tuple:
    leader = client.leader_of(topic, partition)
    return leader.node_id, f"{leader.host}:{leader.port}"
