"""Whether a load's checkpoint and its output tell the same story; checked before every run and
dry run, and shown by ``--history``.

The checkpoint says which offsets are in the output; the output's directories say which runs
wrote it. When they disagree, a run planned from the checkpoint would load offsets twice, skip
them, or reuse the number of a run that left output (and publish that stale output as its own).
So a load stops, naming the first problem and how to repair it, when it finds:

* a damaged run in the checkpoint: a missing or corrupt file (``CheckpointStore.survey``), or,
  for a pending run with output (published or staged, so next only reported and committed), a
  corrupt task file;
* output of a run the checkpoint does not hold: ``run=N`` or ``_superseded/run=N`` without a
  planned ``runs/N`` (unless retention removed run N), or any ``_staging/run=N`` without one: the
  checkpoint lost runs, e.g. it was restored from an older backup;
* a committed run whose published output ``run=N`` is gone: its offsets are in no output. A
  rewind that supersedes the run (``--rewind-to-run N``) loads them again, so it may go on.

``jobs.repair`` fixes what the output's rows prove.
"""

from typing import NamedTuple

from spark_kafka_source.checkpoint import CheckpointError, CheckpointStore

from .output import Output, run_dir


class InconsistentCheckpoint(CheckpointError):
    """The checkpoint contradicts the output, or is damaged; the message says how to repair it."""


class Problem(NamedTuple):
    run: int
    text: str  # what is inconsistent
    remedy: str  # how to repair it
    rewind_repairs: bool = False  # a rewind superseding the run resolves it

    def line(self) -> str:
        return f"{self.text}; {self.remedy}"


def problems(store: CheckpointStore, output: Output) -> list[Problem]:
    """Every disagreement between the checkpoint and the output, by run number."""
    entries = {e.number: e for e in store.survey()}
    traces = output.traces()
    removed_below = store.removed_below()
    command = load_command(store, output)
    repair = f"repair: {command} --repair (rebuilds runs from the output's rows)"
    found = []
    for number in sorted(set(entries) | set(traces)):
        entry, places = entries.get(number), traces.get(number, [])
        where = ", ".join(f"{output.uri}/{p}" for p in places)
        if entry is not None and entry.damage:
            remedy = (
                f"{repair}, or restore the file"
                if places
                else f"restore the file from a backup (run {number} has no output to rebuild it from)"
            )
            output_named = f" (its output: {where})" if places else ""
            found.append(
                Problem(number, f"run {number} is damaged: {' and '.join(entry.damage)}{output_named}", remedy)
            )
        elif (
            entry is not None
            and entry.run is not None
            and entry.run.pending
            and places
            and (unreadable := _unreadable_task(store, number))
        ):
            found.append(
                Problem(
                    number,
                    f"run {number} is damaged: {unreadable} (its output: {where}; its report "
                    f"is built from its tasks' files)",
                    f"{repair}, or restore the file",
                )
            )
        elif entry is not None and entry.run is None and places:
            found.append(
                Problem(
                    number,
                    f"run {number} was never planned ({store.uri}/{store.run_name(number)} has "
                    f"no plan.json), yet its output {where} exists",
                    repair,
                )
            )
        elif entry is None and places and (number >= removed_below or any(p.startswith("_staging/") for p in places)):
            found.append(
                Problem(
                    number,
                    f"output {where} exists but the checkpoint has no run {number} "
                    f"({store.uri}/{store.run_name(number)} is missing)",
                    repair,
                )
            )
        elif (
            entry is not None
            and entry.run is not None
            and entry.run.committed
            and entry.run.superseded is None
            and run_dir(number) not in places
        ):
            found.append(
                Problem(
                    number,
                    f"run {number} is committed but its output {output.uri}/{run_dir(number)} is missing",
                    f"restore it, or load its offsets again: {command} --topics ... --rewind-to-run {number}",
                    True,
                )
            )
    return found


def load_command(store: CheckpointStore, output: Output) -> str:
    """``kafkalog load`` naming this output and checkpoint (``--checkpoint`` unless it is the default)."""
    checkpoint = "" if store.uri == f"{output.uri}/_checkpoint" else f" --checkpoint {store.uri}"
    return f"kafkalog load --output {output.uri}{checkpoint}"


def _unreadable_task(store: CheckpointStore, number: int) -> str | None:
    """Why a task file of a run is unreadable, or None."""
    try:
        store.tasks(number)
    except CheckpointError as exc:
        return str(exc)
    return None


def refuse(found: list[Problem], superseded: list[int] | None = None) -> None:
    """Stop (InconsistentCheckpoint, one line) on the first problem. Before a run is planned
    (``superseded`` None), problems a rewind resolves wait; after, only those of the runs the
    plan supersedes are resolved."""
    left = [p for p in found if not p.rewind_repairs or (superseded is not None and p.run not in superseded)]
    if left:
        more = f" ({len(left) - 1} more: --history lists them)" if len(left) > 1 else ""
        raise InconsistentCheckpoint(left[0].line() + more)
