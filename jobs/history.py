"""Showing a load's checkpoint: the history of runs (``--history``) and what the next run would do
(``--dry-run``), without reading any record or writing anything."""

from spark_kafka_source.checkpoint import CheckpointStore

from .runner import LoadSettings, plan_only


def _status(run) -> str:
    if run.superseded is not None:
        return f"superseded by run {run.superseded.get('by_run')}"
    return "committed" if run.committed else "pending"


def format_text(checkpoint: str) -> str:
    store = CheckpointStore(checkpoint)
    runs = store.runs()
    if not runs:
        return f"no runs in {store.uri}"
    lines = [f"{'run':>5}  {'planned':24}  {'partitions':>10}  {'offsets':>10}  {'records':>10}  status"]
    for run in runs:
        offsets = sum(p.end - p.start for p in run.plan)
        records = run.commit.get("records", "") if run.commit else ""
        lines.append(f"{run.number:>5}  {run.created:24}  {len(run.plan):>10}  {offsets:>10}  {records!s:>10}  "
                     f"{_status(run)}")
    return f"runs in {store.uri}:\n" + "\n".join(lines)


def format_dry_run(settings: LoadSettings) -> str:
    plan = plan_only(settings)
    lines = []
    if plan.supersede:
        many = len(plan.supersede) > 1
        lines.append(f"would supersede run{'s' if many else ''} {', '.join(map(str, sorted(plan.supersede)))} "
                     f"({'their' if many else 'its'} output moved under _superseded/)")
    verb = "would execute again the plan of pending run" if plan.again else "would run"
    lines.append(f"{verb} {plan.run}, reading {sum(p.end - p.start for p in plan.partitions)} offsets:")
    lines += [f"  {p.topic}-{p.partition}  [{p.start}, {p.end})  {p.end - p.start} offsets  leader {p.leader}"
              for p in plan.partitions]
    return "\n".join(lines)
