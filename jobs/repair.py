"""``kafkalog load --output URI --repair``: make a damaged checkpoint agree with its output again,
from what the output's own rows prove, and refuse the rest.

Every row carries its topic, partition and offset, so a run's output proves which offsets that
run loaded. For each problem ``consistency`` finds, by run number:

* output ``run=N`` (or ``_superseded/run=N``) of a run the checkpoint lost or holds damaged: the
  damaged directory is renamed ``runs/N.damaged`` (kept for inspection) and run N is written again
  with a plan of ``[first, last + 1)`` per partition in its rows, committed (or superseded). Only
  when every offset of that range is there once, it starts where the earlier runs ended and the
  next run starts where it ends: otherwise neither the range nor what is missing is proven;
* ``_staging/run=N`` of a run the checkpoint lost: output never published (a run publishes before
  it commits), so nothing of it was committed; it is removed and its offsets load again;
* a committed run whose output is gone, a damaged run without output: nothing proves what they
  held; refused, with what to do (restore the files, or rewind).

Runs under the checkpoint's lock; reads the rows with pyarrow, no Spark (output on another filesystem
than local files: with the Spark session the command started, see ``Output.loaded_offsets``).
"""

from collections.abc import Callable

from spark_kafka_source.checkpoint import CheckpointError, CheckpointLock, CheckpointStore, PartitionPlan
from spark_kafka_source.checkpoint.store import now_iso

from .consistency import problems
from .output import Output, run_dir
from .report import counted

UNKNOWN_LEADER = (-1, "")


class RepairRefused(CheckpointError):
    """What the output cannot prove, one line per run."""


def repair(store: CheckpointStore, output: Output, say: Callable[[str], None] = print) -> None:
    """Repair what can be proven, saying what was done (one line per run); then raise RepairRefused
    naming what was not."""
    if not store.location.exists() and not output.location.exists():
        say(f"nothing to repair: there is no checkpoint at {store.uri} and no output at {output.uri}")
        return
    refused = []
    with CheckpointLock(store.location, purpose="repair") as lock:
        found = problems(store, output)
        if not found:
            say(f"nothing to repair: {store.uri} agrees with {output.uri}")
        for problem in found:
            places = output.traces().get(problem.run, [])
            published = [p for p in places if not p.startswith("_staging/")]
            lock.check()
            try:
                if problem.rewind_repairs or not places:
                    raise RepairRefused(f"run {problem.run} cannot be rebuilt: {problem.line()}")
                if len(published) > 1:
                    raise RepairRefused(
                        f"run {problem.run} cannot be rebuilt: its output is in both "
                        f"{' and '.join(published)}; keep one and repair again"
                    )
                if published:
                    say(_rebuild(store, output, problem.run, published[0]))
                else:
                    say(_discard_staged(store, output, problem.run))
            except RepairRefused as exc:
                refused.append(str(exc))
    if refused:
        raise RepairRefused("; ".join(refused))


def _rebuild(store: CheckpointStore, output: Output, number: int, place: str) -> str:
    superseded = place.startswith("_superseded/")
    try:
        offsets = output.loaded_offsets(place)
    except (OSError, ValueError) as exc:  # unreadable files, another format
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RepairRefused(
            f"run {number} cannot be rebuilt: {output.uri}/{place} cannot be read as "
            f"{output.format} (give the load's --format): {first}"
        ) from None
    runs = [e.run for e in store.survey() if e.run is not None and not e.damage and e.run.superseded is None]
    ended = {}  # where the committed runs before this one ended
    for run in (r for r in runs if r.committed and r.number < number):
        ended.update({p.key: (p.end, run.number) for p in run.plan})
    starts = {}  # where the next run after this one (committed, or pending: to be executed) starts
    for run in reversed([r for r in runs if r.number > number]):
        starts.update({p.key: (p.start, run.number) for p in run.plan})
    cannot = f"run {number} cannot be rebuilt from {output.uri}/{place}"
    for (topic, partition), found in sorted(offsets.items()):
        name = f"{topic}-{partition}"
        if not found.contiguous:
            raise RepairRefused(
                f"{cannot}: {name} holds {found.rows} rows of offsets {found.first} to {found.last} "
                f"({found.distinct} distinct), not each offset once"
            )
        if superseded:
            continue
        end, by = ended.get((topic, partition), (found.first, None))
        if end != found.first:
            raise RepairRefused(
                f"{cannot}: its rows of {name} start at offset {found.first}, but run {by} ended at {end}"
            )
        start, by = starts.get((topic, partition), (found.last + 1, None))
        if start != found.last + 1:
            raise RepairRefused(
                f"{cannot}: its rows of {name} end at offset {found.last}, but run {by} starts at {start}"
            )
    for (topic, partition), (start, by) in sorted(starts.items()):
        end, before = ended.get((topic, partition), (start, None))
        if not superseded and (topic, partition) not in offsets and end != start:
            raise RepairRefused(
                f"{cannot}: it holds no rows of {topic}-{partition}, but run {before} ended at {end} "
                f"and run {by} starts at {start}"
            )
    plan = [PartitionPlan(t, p, o.first, o.last + 1, *UNKNOWN_LEADER) for (t, p), o in sorted(offsets.items())]
    aside = store.set_aside_damaged(number)
    store.write_plan(
        number,
        plan,
        {"output": output.uri, "format": output.format, "repaired": {"from": f"{output.uri}/{place}", "at": now_iso()}},
    )
    records = sum(o.rows for o in offsets.values())
    if superseded:
        store.supersede(number, {"by_run": None, "repaired": True})
    else:
        store.commit(number, {"records": records, "repaired": True})
    kept = f"; the damaged files are kept in {aside}" if aside else ""
    return (
        f"run {number}: rebuilt from the rows of {place}{' (superseded)' if superseded else ''}: "
        f"{counted(records, 'record')} in {counted(len(plan), 'partition')}"
        f"{kept}"
    )


def _discard_staged(store: CheckpointStore, output: Output, number: int) -> str:
    aside = store.set_aside_damaged(number)
    output.location.delete(f"_staging/{run_dir(number)}")
    kept = f"; the damaged files are kept in {aside}" if aside else ""
    return f"run {number}: removed _staging/{run_dir(number)} (never published, its offsets load again){kept}"
