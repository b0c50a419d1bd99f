"""Fixtures of the load job tests: one broker for the session, and ``history``: three committed runs
of a topic, built once, that tests copy and carry on from."""

import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from broker.embedded import EmbeddedBroker
from tests.spark.feed import create_topic, messages, produce

from .loads import kill_leftovers, load_args, ok, run_load, yesterday_ms


@pytest.fixture(autouse=True)
def no_load_left_running():
    """Whatever happens in a test, no load it started outlives it."""
    yield
    kill_leftovers()


@pytest.fixture(scope="session")
def jobs_broker(tmp_path_factory):
    """Retention is checked every 200 ms, so topics with ``retention.bytes`` lose data quickly."""
    process = EmbeddedBroker(
        tmp_path_factory.mktemp("jobs-broker") / "log",
        {"num.partitions": "2", "log.retention.check.interval.ms": "200"},
    ).start()
    yield process
    process.kill()


class History(NamedTuple):
    bootstrap: str
    topic: str
    output: Path
    batches: list  # the feed.Recs produced before each run, one list per run
    results: list  # each run's loads.Result
    ends: list  # each run's end offsets: {(topic, partition): offset}; ends[0] is the start (all 0)

    @property
    def recs(self) -> list:
        return [r for batch in self.batches for r in batch]

    def ranges(self, run: int) -> dict:
        return {tp: (self.ends[run - 1][tp], self.ends[run][tp]) for tp in self.ends[run]}

    def copy(self, destination: Path) -> Path:
        """The output (with its checkpoint inside) copied, for a test to carry on from."""
        shutil.copytree(self.output, destination)
        return destination


# batch k: (number of records, first timestamp, ms between records); batch 1 spans hours 3 and 4
HISTORY_BATCHES = [(12, yesterday_ms(3, 59, 50), 2000), (10, yesterday_ms(6), 60_000), (8, yesterday_ms(9), 60_000)]


@pytest.fixture(scope="session")
def history(jobs_broker, spark, tmp_path_factory) -> History:
    topic = "history"
    bootstrap = jobs_broker.bootstrap
    create_topic(bootstrap, topic, 2)
    base = tmp_path_factory.mktemp("history")
    output = base / "output"
    batches, results, ends = [], [], [{(topic, 0): 0, (topic, 1): 0}]
    for number, (count, first, step) in enumerate(HISTORY_BATCHES, 1):
        msgs = [
            m._replace(timestamp=first + i * step)
            for i, m in enumerate(messages(count, partitions=(0, 1), tag=f"run{number}"))
        ]
        batches.append(produce(bootstrap, topic, msgs))
        results.append(ok(run_load(load_args(bootstrap, topic, output), base)))
        end = dict(ends[-1])
        for rec in batches[-1]:
            end[(topic, rec.partition)] = max(end[(topic, rec.partition)], rec.offset + 1)
        ends.append(end)
    return History(bootstrap, topic, output, batches, results, ends)
