"""Offset-rewind reruns of ``kafkalog load``: ``--rewind-to-time`` (ISO or epoch ms, through the
broker's time index), ``--rewind-to-run N`` and ``--rewind-to-offsets JSON`` supersede the runs
from the chosen point on (their output moves to ``_superseded/run=N``, their checkpoints stay,
marked) and load again from the start of the first superseded run, for all its partitions: no
duplicates, no gaps. ``--dry-run`` shows what a rewind would do and changes nothing.

Each test carries on from a copy of the ``history`` fixture: runs 1, 2, 3 of topic ``history``
(2 partitions) loaded offsets [0, 6), [6, 11) and [11, 15) of each partition.
"""

import json

import pytest

from .loads import (
    LoadProcess,
    assert_exactly_once,
    assert_report,
    iso,
    load_args,
    ok,
    output_rows,
    printed_report,
    report_json,
    run_dir,
    run_load,
    tree,
)

pytestmark = pytest.mark.timeout(300)


def history_statuses(output, directory) -> dict:
    shown = run_load(["--output", str(output), "--history"], directory)
    assert shown.code == 0, shown
    return {int(line.split()[0]): " ".join(line.split()[5:]) for line in shown.stdout.splitlines()[2:]}


def test_rewinds_supersede_runs_and_load_again_without_duplicates_or_gaps(history, tmp_path):
    topic = history.topic
    output = history.copy(tmp_path / "output")
    args = load_args(history.bootstrap, topic, output)
    p0, p1 = (topic, 0), (topic, 1)
    recs = list(history.recs)
    # just after the last record of run 2 in partition 0: partition 0's offset at that time is run 3's
    # start (11), partition 1's is inside run 2 (10); so run 2 is superseded, for both partitions
    last_of_run2_in_p0 = max(r.timestamp for r in history.batches[1] if r.partition == 0)
    moment = last_of_run2_in_p0 + 1
    assert {r.offset for r in history.batches[1] if r.timestamp == last_of_run2_in_p0} == {10}

    # --dry-run: the same plan from a run number and from an ISO time; nothing changes
    before = tree(output)
    expected = ["would supersede runs 2, 3 (their output moved under _superseded/)", "would run 4, reading 18 offsets:"]
    for rewind in (["--rewind-to-run", "2"], ["--rewind-to-time", iso(moment)]):
        dry = run_load(args + rewind + ["--dry-run"], tmp_path)
        assert dry.code == 0, dry
        lines = dry.stdout.splitlines()
        assert lines[:2] == expected, dry.stdout
        assert [line.split()[:4] for line in lines[2:]] == [
            [f"{topic}-0", "[6,", "15)", "9"],
            [f"{topic}-1", "[6,", "15)", "9"],
        ], dry.stdout
    assert tree(output) == before

    # --rewind-to-time (epoch ms): runs 2 and 3 superseded, run 4 loads [6, 15) of both partitions
    result = ok(run_load(args + ["--rewind-to-time", str(moment)], tmp_path))
    assert f"rewind: superseded runs 2, 3 (output moved to {output.as_uri()}/_superseded)" in result.stdout
    printed = printed_report(result.stdout)
    assert printed["head"].startswith("run 4, superseding runs 2, 3: ")
    report = report_json(output, 4)
    assert sorted(report["superseded"]) == [2, 3] and report["executed_again"] is False
    assert_report(report, recs, {p0: (6, 15), p1: (6, 15)}, printed=printed)
    assert sorted(p.name for p in (output / "_superseded").iterdir()) == ["run=2", "run=3"]
    assert sorted(p.name for p in output.glob("run=*")) == ["run=1", "run=4"]
    assert_exactly_once(output / "_superseded", [r for r in recs if r.offset >= 6])  # moved whole
    rows = assert_exactly_once(output, recs)
    assert {r.run for r in rows if r.offset < 6} == {1} and {r.run for r in rows if r.offset >= 6} == {4}
    for number in (2, 3):
        names = sorted(p.name for p in run_dir(output, number).glob("*.json"))
        assert names == ["commit.json", "plan.json", "report.json", "superseded.json"], names
        marker = json.loads((run_dir(output, number) / "superseded.json").read_text())
        assert marker["by_run"] == 4 and marker["rewind"] == {"kind": "time", "value": moment}
    assert history_statuses(output, tmp_path) == {
        1: "committed",
        2: "superseded by run 4",
        3: "superseded by run 4",
        4: "committed",
    }

    # --rewind-to-offsets inside run 4 (partition 1 only): run 4 is superseded, and run 5 loads from
    # run 4's start in both partitions
    result = ok(run_load(args + ["--rewind-to-offsets", json.dumps({topic: {"1": 12}})], tmp_path))
    assert_report(report_json(output, 5), recs, {p0: (6, 15), p1: (6, 15)}, printed=printed_report(result.stdout))
    assert report_json(output, 5)["superseded"] == [4]
    rows = assert_exactly_once(output, recs)
    assert {r.run for r in rows if r.offset < 6} == {1} and {r.run for r in rows if r.offset >= 6} == {5}

    # --rewind-to-run 1: everything again in run 6
    result = ok(run_load(args + ["--rewind-to-run", "1"], tmp_path))
    assert_report(report_json(output, 6), recs, {p0: (0, 15), p1: (0, 15)}, printed=printed_report(result.stdout))
    rows = assert_exactly_once(output, recs)
    assert {r.run for r in rows} == {6}
    assert sorted(p.name for p in (output / "_superseded").iterdir()) == [f"run={n}" for n in range(1, 6)]
    assert history_statuses(output, tmp_path) == {
        1: "superseded by run 6",
        2: "superseded by run 4",
        3: "superseded by run 4",
        4: "superseded by run 5",
        5: "superseded by run 6",
        6: "committed",
    }

    # a superseded run cannot be rewound to (usage error); the next plain run finds nothing new
    refused = run_load(args + ["--rewind-to-run", "5", "--dry-run"], tmp_path)
    assert (
        refused.code == 2
        and "--rewind-to-run 5: no such committed run in the history (committed runs not superseded: 6)"
        in refused.one_error()
    ), refused
    result = ok(run_load(args, tmp_path))
    report = report_json(output, 7)
    assert_report(report, recs, {p0: (15, 15), p1: (15, 15)}, printed=printed_report(result.stdout))
    assert report["total"]["records"] == 0
    assert_exactly_once(output, recs)


def test_a_rewind_before_the_runs_kept_in_the_history_loads_nothing_twice(history, tmp_path):
    output = history.copy(tmp_path / "output")
    args = load_args(history.bootstrap, history.topic, output)
    ok(run_load(args + ["--keep-runs", "2"], tmp_path))  # run 4 (nothing new); runs 1 and 2 leave the history
    assert sorted(p.name for p in (output / "_checkpoint" / "runs").iterdir()) == ["00000003", "00000004"]
    assert (output / "run=1").exists() and (output / "run=2").exists()

    inside_run1 = history.batches[0][4].timestamp  # partition 0, offset 2
    before = tree(output)
    for extra in (["--dry-run"], []):
        refused = run_load(args + ["--rewind-to-time", str(inside_run1), *extra], tmp_path)
        assert refused.code == 2, refused
        assert (
            "the rewind reaches before the oldest run kept in the checkpoint's history (run 3" in refused.one_error()
            and "rewind to run 3 or later" in refused.one_error()
        )
    assert tree(output) == before
    assert_exactly_once(output, history.recs)


def test_a_killed_rewind_to_run_retried_with_the_same_command_completes(history, tmp_path):
    output = history.copy(tmp_path / "output")
    args = load_args(history.bootstrap, history.topic, output) + ["--rewind-to-run", "2"]
    killed = LoadProcess(args, tmp_path, pause_at="planned")
    try:
        killed.wait_for_stdout("paused at planned")
    finally:
        killed.kill()
    assert (run_dir(output, 4) / "plan.json").exists() and not (output / "run=2").exists()

    result = run_load(args, tmp_path)  # the scheduler retries the same command
    assert result.code == 0, result.errors()
    assert_exactly_once(output, history.recs)
    assert {r.run for r in output_rows(output) if r.offset >= 6} == {4}


def test_rewinds_that_name_nothing_or_supersede_nothing_say_so(history, tmp_path):
    output = history.copy(tmp_path / "output")
    args = load_args(history.bootstrap, history.topic, output)
    before = tree(output)
    for offsets, message in (
        (
            json.dumps({history.topic: {"7": 1}}),
            "--rewind-to-offsets: partition history-7 does not exist (history has partitions 0 to 1)",
        ),
        (json.dumps({"elsewhere": {"0": 1}}), "--rewind-to-offsets: elsewhere is not a topic being loaded"),
    ):
        for extra in (["--dry-run"], []):
            refused = run_load(args + ["--rewind-to-offsets", offsets, *extra], tmp_path)
            assert refused.code == 2 and message in refused.one_error(), refused
    assert tree(output) == before

    future = str(history.batches[-1][-1].timestamp + 24 * 3600 * 1000)
    dry = run_load(args + ["--rewind-to-time", future, "--dry-run"], tmp_path)
    assert dry.code == 0 and dry.stdout.splitlines()[0].startswith("the rewind would supersede nothing: "), dry
    result = ok(run_load(args + ["--rewind-to-time", future], tmp_path))
    assert "rewind: superseded nothing: no committed run loaded anything past that point" in result.stdout
    assert report_json(output, 4)["superseded"] == [] and report_json(output, 4)["total"]["records"] == 0
    assert_exactly_once(output, history.recs)
