"""``make demo``: the whole life of a scheduled load, on an embedded broker, in a few minutes.

1. Start a broker on a free port in a temporary directory.
2. Produce page views (JSON, keyed by user id, hash(key) % 4 partitions, LZ4 batches) covering
   the last three hours but the last 50 minutes, then load them (run 1).
3. Produce the last 50 minutes, load again (run 2: only the new records).
4. Produce a few more, then rewind to 25 minutes ago: run 2 held that time, so it is superseded
   and run 3 loads again from where run 2 started (nothing twice, nothing missing).
5. Print the history, check every offset is in the output exactly once, and query the Parquet:
   the top pages per hour.
6. Shut the broker down cleanly. The output stays in ``demo-output/``.
"""

import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from broker.client import KafkaClient, NewTopic
from broker.embedded import EmbeddedBroker

from . import activity, load

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TOPIC = "page-views"
PARTITIONS = 4
OUTPUT = Path.cwd() / "demo-output" / TOPIC
MINUTE_MS = 60_000


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def produce(bootstrap: str, count: int, start_ms: int, end_ms: int, seed: int) -> None:
    began = time.monotonic()
    sent = activity.produce(bootstrap, TOPIC, activity.page_views(count, start_ms, end_ms, seed=seed), PARTITIONS)
    seconds = time.monotonic() - began
    print(
        f"produced {sent:,} page views ({time.strftime('%H:%M', time.gmtime(start_ms / 1000))}-"
        f"{time.strftime('%H:%M', time.gmtime(end_ms / 1000))} UTC) in {seconds:.1f} s, {sent / seconds:,.0f}/s",
        flush=True,
    )


def run_load(bootstrap: str, *extra: str) -> None:
    argv = [
        "--bootstrap-servers",
        bootstrap,
        "--topics",
        TOPIC,
        "--output",
        str(OUTPUT),
        "--master",
        "local[2]",
        *extra,
    ]
    print("$ kafkalog load " + " ".join(argv[:6] + list(extra)), flush=True)
    if load.main(argv) != 0:
        raise SystemExit("the demo load failed")


def check_exactly_once(spark: "SparkSession", bootstrap: str) -> None:
    from pyspark.sql import functions as F

    from .output import read_output

    rows = read_output(spark, str(OUTPUT))
    stats = rows.agg(
        F.count("*").alias("rows"), F.countDistinct("topic", "partition", "offset").alias("distinct")
    ).first()
    if stats is None:
        raise SystemExit(f"the output at {OUTPUT} could not be counted")
    with KafkaClient(bootstrap) as client:
        latest = client.list_offsets({(TOPIC, p): -1 for p in range(PARTITIONS)})
    held = sum(offset for offset, _ in latest.values())
    verdict = "exactly once" if stats["rows"] == stats["distinct"] == held else "MISMATCH"
    print(
        f"output rows {stats['rows']:,}, distinct offsets {stats['distinct']:,}, offsets on the broker "
        f"{held:,}: {verdict}",
        flush=True,
    )
    if verdict != "exactly once":
        raise SystemExit("the output does not hold every offset exactly once")


def top_pages_per_hour(spark: "SparkSession") -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from .output import read_output

    schema = "user_id string, page string, referrer string, user_agent string, timestamp long"
    views = read_output(spark, str(OUTPUT)).select(
        "date", "hour", F.from_json(F.col("value").cast("string"), schema).alias("view")
    )
    counts = views.groupBy("date", "hour", "view.page").count()
    ranked = counts.withColumn(
        "rank", F.row_number().over(Window.partitionBy("date", "hour").orderBy(F.desc("count"), "page"))
    )
    ranked.where("rank <= 3").orderBy("date", "hour", "rank").show(30, truncate=False)


def main() -> int:
    shutil.rmtree(OUTPUT.parent, ignore_errors=True)
    now = int(time.time() * 1000)
    with EmbeddedBroker(settings={"num.partitions": str(PARTITIONS)}) as broker:
        bootstrap = broker.bootstrap
        step(f"broker listening on {bootstrap} (log in {broker.log_dir})")
        with KafkaClient(bootstrap) as client:
            client.create_topics([NewTopic(TOPIC, PARTITIONS)])

        step("produce 700,000 page views, then load them (run 1)")
        produce(bootstrap, 700_000, now - 180 * MINUTE_MS, now - 50 * MINUTE_MS, seed=1)
        run_load(bootstrap)

        step("produce 300,000 more, then load again (run 2 reads only the new records)")
        produce(bootstrap, 300_000, now - 50 * MINUTE_MS, now - 5 * MINUTE_MS, seed=2)
        run_load(bootstrap)

        step("produce 50,000 more, then rewind to 25 minutes ago (inside run 2) and load from there")
        produce(bootstrap, 50_000, now - 5 * MINUTE_MS, now, seed=3)
        rewind_to = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((now - 25 * MINUTE_MS) / 1000))
        run_load(bootstrap, "--dry-run", "--rewind-to-time", rewind_to)
        run_load(bootstrap, "--rewind-to-time", rewind_to)

        step("the checkpoint's history")
        run_load(bootstrap, "--history")

        step("check: every offset on the broker is in the output exactly once")
        spark = load.spark_session("local[2]", [])
        check_exactly_once(spark, bootstrap)

        step("top pages per hour (UTC), from the Parquet output")
        top_pages_per_hour(spark)
        spark.stop()
        step("shutting the broker down cleanly")
        print(f"broker exited with status {broker.stop()}", flush=True)
    print(
        f"\nThe output is in {OUTPUT} (Parquet under run=N/topic=.../date=.../hour=...), its checkpoint in "
        f"{OUTPUT}/_checkpoint.\nRead it with: spark.read.parquet('{OUTPUT}')",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
