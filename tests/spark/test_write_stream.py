"""``df.writeStream.format("kafkalog")`` from a file source with a checkpoint: each micro-batch's rows
are written once per successful commit, and a query restarted from its checkpoint writes only
the files that arrived since (read back with ``spark.read.format("kafkalog")``)."""

import json

import pytest

from .feed import create_topic, load, topic_name

pytestmark = pytest.mark.timeout(420)  # two streaming runs and, when first, the Spark start


def add_file(directory, name: str, events: list[dict]) -> None:
    staged = directory.parent / f".{name}"
    staged.write_text("".join(json.dumps(e) + "\n" for e in events))
    staged.rename(directory / name)  # whole files only: the file source may list the directory at any time


def run_until_done(spark, source_dir, bootstrap: str, topic: str, checkpoint) -> None:
    events = (
        spark.readStream.schema("user string, page string, n int").option("maxFilesPerTrigger", 1).json(str(source_dir))
    )
    query = (
        events.selectExpr("user AS key", "to_json(struct(page, n)) AS value")
        .writeStream.format("kafkalog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(240), "the query did not finish"
        assert query.exception() is None
    finally:
        query.stop()


def written(spark, bootstrap: str, topic: str) -> list[tuple]:
    df = load(spark, bootstrap, subscribe=topic).selectExpr(
        "CAST(key AS STRING) AS user", "get_json_object(CAST(value AS STRING), '$.n') AS n"
    )
    return sorted((r.user, int(r.n)) for r in df.collect())


def test_a_stream_from_files_writes_each_micro_batch_once_and_resumes_from_its_checkpoint(
    spark, broker, request, tmp_path
):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 3)
    source, checkpoint = tmp_path / "incoming", tmp_path / "checkpoint"
    source.mkdir()
    add_file(source, "a.json", [{"user": f"u{i % 4}", "page": "/", "n": i} for i in range(10)])
    add_file(source, "b.json", [{"user": f"u{i % 4}", "page": "/cart", "n": i} for i in range(10, 25)])
    run_until_done(spark, source, broker.bootstrap, topic, checkpoint)
    assert written(spark, broker.bootstrap, topic) == sorted((f"u{i % 4}", i) for i in range(25))
    assert len(list((checkpoint / "commits").glob("[0-9]*"))) == 2  # one micro-batch per file

    add_file(source, "c.json", [{"user": "u9", "page": "/help", "n": 25}])
    run_until_done(spark, source, broker.bootstrap, topic, checkpoint)  # restarted: only the new file
    assert written(spark, broker.bootstrap, topic) == sorted([(f"u{i % 4}", i) for i in range(25)] + [("u9", 25)])
