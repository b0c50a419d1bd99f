"""The report of a load run: per partition and in total, what was read, how far behind the
broker the load is now, and the offsets found already deleted at planning (``lost``, only with
``--fail-on-data-loss false``). Built from the run's plan and its tasks' checkpoints; printed as a table
and written as JSON next to the run's checkpoint (``runs/<N>/report.json``)."""

from spark_kafka_source.checkpoint import Run, TaskCheckpoint


def build(
    run: Run, tasks: list[TaskCheckpoint], latest: dict, seconds: float, output: str, superseded: list[int], again: bool
) -> dict:
    """``latest``: (topic, partition) -> the broker's latest offset after the run."""
    lost = {(x["topic"], x["partition"]): x["until"] - x["from"] for x in run.details.get("lost") or []}
    partitions = []
    for p in run.plan:
        mine = [t for t in tasks if (t.topic, t.partition) == p.key and p.start <= t.start < p.end]
        stamps = [s for t in mine for s in (t.first_timestamp, t.last_timestamp) if s is not None]
        newest = latest.get(p.key, p.end)
        partitions.append(
            {
                "topic": p.topic,
                "partition": p.partition,
                "leader": p.leader,
                "from": p.start,
                "until": p.end,
                "records": sum(t.records for t in mine),
                "bytes": sum(t.bytes for t in mine),
                "seconds": round(sum(t.seconds for t in mine), 3),
                "first_timestamp": min(stamps, default=None),
                "last_timestamp": max(stamps, default=None),
                "latest": newest,
                "lag": max(newest - p.end, 0),
                "lost": lost.get(p.key, 0),
            }
        )
    return {
        "run": run.number,
        "output": output,
        "executed_again": again,
        "isolation_level": run.details.get("source", {}).get("kafka.isolation.level", "read_uncommitted"),
        "superseded": superseded,
        "seconds": round(seconds, 3),
        "partitions": partitions,
        "total": {
            "partitions": len(partitions),
            "records": sum(p["records"] for p in partitions),
            "bytes": sum(p["bytes"] for p in partitions),
            "lag": sum(p["lag"] for p in partitions),
            "offsets": sum(p["until"] - p["from"] for p in partitions),
            "lost": sum(p["lost"] for p in partitions),
        },
    }


def counted(number: int, noun: str) -> str:
    """``1 record``, ``2 records``, ``0 records``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


COLUMNS = [
    ("topic", "<"),
    ("partition", ">"),
    ("from", ">"),
    ("until", ">"),
    ("records", ">"),
    ("bytes", ">"),
    ("seconds", ">"),
    ("latest", ">"),
    ("lag", ">"),
    ("lost", ">"),
]


def format_text(report: dict) -> str:
    rows = [[str(p[name]) for name, _ in COLUMNS] for p in report["partitions"]]
    total = report["total"]
    rows.append(
        [
            "total",
            str(total["partitions"]),
            "",
            "",
            str(total["records"]),
            str(total["bytes"]),
            str(report["seconds"]),
            "",
            str(total["lag"]),
            str(total["lost"]),
        ]
    )
    widths = [max(len(name), *(len(r[i]) for r in rows)) for i, (name, _) in enumerate(COLUMNS)]
    lines = ["  ".join(f"{name:{align}{w}}" for (name, align), w in zip(COLUMNS, widths, strict=True))]
    lines += [
        "  ".join(f"{cell:{align}{w}}" for cell, (_, align), w in zip(row, COLUMNS, widths, strict=True))
        for row in rows
    ]
    head = f"run {report['run']}" + (" (executed again)" if report["executed_again"] else "")
    if report["superseded"]:
        head += f", superseding run{'s' if len(report['superseded']) > 1 else ''} " + ", ".join(
            map(str, sorted(report["superseded"]))
        )
    return (
        f"{head}: {counted(total['records'], 'record')}, {counted(total['bytes'], 'byte')} in "
        f"{report['seconds']} s -> {report['output']}\n" + "\n".join(lines)
    )
