"""Showing a load's checkpoint: the history of runs (``--history``) and what the next run would do
(``--dry-run``), without reading any record or writing anything."""

from spark_kafka_source.checkpoint import CheckpointError, CheckpointStore

from . import consistency
from .output import Output
from .report import counted
from .runner import NOTHING_SUPERSEDED, LoadSettings, plan_only

DAMAGED = "damaged (see the problems below)"


def _status(run) -> str:
    if run.superseded is not None:
        by = run.superseded.get("by_run")
        return f"superseded by run {by}" if by is not None else "superseded"
    return "committed" if run.committed else "pending"


def format_text(checkpoint: str, output: str, format: str = "parquet") -> str:
    """The runs, one line each, as far as they can be read: a damaged run is marked, and the
    problems (damaged files, disagreements with the output) are listed after the runs, with how
    to repair them."""
    store = CheckpointStore(checkpoint)
    entries = store.survey()
    try:
        problems = consistency.problems(store, Output(output, format))
    except CheckpointError as exc:  # retention's own file is damaged
        problems = [consistency.Problem(0, str(exc), "restore the file")]
    if not entries and not problems:
        return f"no runs in {store.uri}"
    lines = [f"{'run':>5}  {'planned':24}  {'partitions':>10}  {'offsets':>10}  {'records':>10}  status"]
    for entry in entries:
        run = entry.run
        if run is None and not entry.damage:
            continue  # being planned (or killed before its plan was written)
        if run is None:
            lines.append(f"{entry.number:>5}  {'?':24}  {'?':>10}  {'?':>10}  {'?':>10}  {DAMAGED}")
            continue
        offsets = sum(p.end - p.start for p in run.plan)
        records = "?" if entry.damage else run.commit.get("records", "") if run.commit else ""
        status = DAMAGED if entry.damage else _status(run)
        lines.append(
            f"{run.number:>5}  {run.created:24}  {len(run.plan):>10}  {offsets:>10}  {records!s:>10}  {status}"
        )
    text = f"runs in {store.uri}:\n" + "\n".join(lines)
    if problems:
        text += f"\n{counted(len(problems), 'problem')} (a load stops until they are repaired):\n" + "\n".join(
            f"  {p.line()}" for p in problems
        )
    return text


def format_dry_run(settings: LoadSettings) -> str:
    plan = plan_only(settings)
    lines = []
    if plan.supersede:
        many = len(plan.supersede) > 1
        lines.append(
            f"would supersede run{'s' if many else ''} {', '.join(map(str, sorted(plan.supersede)))} "
            f"({'their' if many else 'its'} output moved under _superseded/)"
        )
    elif settings.rewind is not None and not plan.again:
        lines.append(f"the rewind would supersede nothing: {NOTHING_SUPERSEDED}")
    verb = "would execute again the plan of pending run" if plan.again else "would run"
    lines.append(f"{verb} {plan.run}, reading {counted(sum(p.end - p.start for p in plan.partitions), 'offset')}:")
    lines += [
        f"  {p.topic}-{p.partition}  [{p.start}, {p.end})  {counted(p.end - p.start, 'offset')}  leader {p.leader}"
        for p in plan.partitions
    ]
    return "\n".join(lines)
