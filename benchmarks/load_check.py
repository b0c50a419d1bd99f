"""What the load's check of its checkpoint against its output (``jobs.consistency``) costs each run.

In one run, for a checkpoint of N committed runs (4 partitions each, local files) and an output
holding their ``run=N`` directories, each round times:

* the check: every run's files read as far as they can be, and the output's run directories
  listed and compared (``consistency.problems``);
* the reference: reading the history the planner reads anyway (``CheckpointStore.runs``).

    .venv/bin/python -m benchmarks.load_check [--runs 100] [--rounds 5]
"""

import argparse
import statistics
import tempfile
import time

from jobs.consistency import problems
from jobs.output import Output, run_dir
from spark_kafka_source.checkpoint import CheckpointStore, PartitionPlan

PARTITIONS = 4


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    times: dict = {"check": [], "history read": []}
    with tempfile.TemporaryDirectory() as directory:
        output = Output(directory)
        store = CheckpointStore(f"{directory}/_checkpoint")
        for number in range(1, args.runs + 1):
            store.write_plan(
                number,
                [PartitionPlan("t", p, number * 10, number * 10 + 10, 0, "b:9092") for p in range(PARTITIONS)],
                {},
            )
            store.commit(number, {"records": 10 * PARTITIONS})
            output.location.write_bytes(f"{run_dir(number)}/_SUCCESS", b"")
        for _ in range(args.rounds + 1):  # round 0 warms the page cache
            began = time.perf_counter()
            assert problems(store, output) == []
            times["check"].append(time.perf_counter() - began)
            began = time.perf_counter()
            assert len(store.runs()) == args.runs
            times["history read"].append(time.perf_counter() - began)
    medians = {name: statistics.median(values[1:]) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:>12}: {value * 1000:.1f} ms for {args.runs} runs")
    print(f"check / history read: {medians['check'] / medians['history read']:.2f}")
    return medians


if __name__ == "__main__":
    main()
