"""The isolation level of ``kafkalog load`` and ``kafkalog mirror``: read_committed by default.

A load runs against a partition written by committing and aborting transactional producers
interleaved with plain ones, one transaction still open (tests/records/transactional_logs.py's
example), served by the ``FakeBroker`` answering read_committed as Kafka does (its random logs
cover more cases than a real producer writes; tests/jobs/test_transactional_topics.py reads the
real broker): by default it loads exactly the committed records below the last stable
offset, each once with its own offset, and its report says read_committed; a run planned under
read_uncommitted and killed is executed again under read_uncommitted whatever the next command
line says. The mirror's stream options carry its level (``--isolation-level``, else the
``--from-config`` file's ``isolation.level``, else read_committed).
"""

import pytest

from jobs.mirror import parser as mirror_parser
from jobs.mirror import settings_from as mirror_settings
from tests.records.transactional_logs import EXAMPLE_EVENTS, build_log, serving

from .loads import LoadProcess, load_args, ok, output_rows, report_json, run_load

pytestmark = pytest.mark.timeout(300)

TOPIC = "txn"
LOG = build_log(EXAMPLE_EVENTS)


@pytest.fixture(scope="module")
def fake():
    with serving(TOPIC, LOG) as server:
        yield server


def _loaded(output) -> list[tuple[int, bytes]]:
    return sorted((row.offset, row.value) for row in output_rows(output))


def _expected(offsets: list[int]) -> list[tuple[int, bytes]]:
    return [(o, b"v%d" % o) for o in offsets]


def test_a_load_reads_committed_records_below_the_last_stable_offset_by_default(fake, spark, tmp_path):
    output = tmp_path / "out"
    ok(run_load(load_args(fake.bootstrap, TOPIC, output, "--no-group-commit"), tmp_path))
    assert _loaded(output) == _expected(LOG.committed)
    report = report_json(output, 1)
    assert report["isolation_level"] == "read_committed"
    assert [(p["from"], p["until"]) for p in report["partitions"]] == [(0, LOG.open_from)]


def test_a_killed_run_is_executed_again_at_the_level_it_was_planned_with(fake, spark, tmp_path):
    output = tmp_path / "out"
    args = load_args(fake.bootstrap, TOPIC, output, "--no-group-commit")
    planned = LoadProcess([*args, "--isolation-level", "read_uncommitted"], tmp_path, pause_at="planned")
    planned.wait_for_stdout("paused at planned")
    planned.kill()
    ok(run_load([*args, "--isolation-level", "read_committed"], tmp_path))
    assert _loaded(output) == _expected(LOG.all_data)
    report = report_json(output, 1)
    assert (report["executed_again"], report["isolation_level"]) == (True, "read_uncommitted")


def test_an_unknown_isolation_level_is_a_usage_error(fake, spark, tmp_path):
    result = run_load(load_args(fake.bootstrap, TOPIC, tmp_path / "out", "--isolation-level", "dirty"), tmp_path)
    assert result.code == 2
    assert "argument --isolation-level: invalid choice: 'dirty'" in result.stderr


@pytest.mark.parametrize(
    ("extra", "config", "level"),
    [
        ([], None, "read_committed"),
        (["--isolation-level", "read_uncommitted"], None, "read_uncommitted"),
        ([], "isolation.level=read_uncommitted\n", "read_uncommitted"),
        (["--isolation-level", "read_committed"], "isolation.level=read_uncommitted\n", "read_committed"),
    ],
)
def test_a_mirror_reads_committed_unless_told_otherwise(tmp_path, extra, config, level):
    args = ["--from", "a:9092", "--to", "b:9092", "--topics", "t", "--checkpoint", str(tmp_path / "c"), *extra]
    if config is not None:
        (tmp_path / "source.properties").write_text(config)
        args += ["--from-config", str(tmp_path / "source.properties")]
    assert mirror_settings(mirror_parser().parse_args(args)).source()["kafka.isolation.level"] == level
