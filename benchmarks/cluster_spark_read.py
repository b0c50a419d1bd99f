"""Rows per second of a Spark read of a topic spread over 3 brokers vs the same topic on 1 broker.

In one run, on a local[2] SparkSession: a 3-broker cluster (``EmbeddedCluster``: ZooKeeper and 3
broker processes, replication factor 1) and a standalone broker each hold a topic of 6 partitions
(on the cluster, 2 led by each broker) with the same number of 100-byte values; ``count()`` and a
``noop`` write of each through the kafkalog source (one task per partition, each fetching from its
partition's leader) alternate, round after round. The figure is the cluster's rate as a ratio of
the single broker's. Spark's two task slots, the brokers and ZooKeeper share this machine's cores,
so the ratio shows what the spread costs here, not what 3 machines would give.

    .venv/bin/python -m benchmarks.cluster_spark_read [--records 5000000] [--rounds 5]
"""

import argparse
import functools
import os
import statistics
import sys
import tempfile

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


from broker.client import KafkaClient  # noqa: E402
from broker.embedded import EmbeddedBroker  # noqa: E402
from broker.embedded_cluster import EmbeddedCluster  # noqa: E402

from .broker_throughput import produce  # noqa: E402
from .cluster_throughput import create_topic  # noqa: E402
from .spark_read import local_spark, timed, write_noop  # noqa: E402

BROKERS = 3
PARTITIONS = 6
VALUE_SIZE = 100
TOPIC = "bench"


def filled(bootstrap: str, records: int) -> set:
    """Create the topic, produce ``records`` values into it; the ids of its partitions' leaders."""
    create_topic(bootstrap, TOPIC, PARTITIONS)
    produce(bootstrap, TOPIC, VALUE_SIZE, records * VALUE_SIZE, PARTITIONS)
    with KafkaClient(bootstrap) as client:
        return {client.leader_of(TOPIC, p).node_id for p in range(PARTITIONS)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    spark = local_spark()
    times: dict[tuple[str, str], list[float]] = {}
    with (
        tempfile.TemporaryDirectory() as directory,
        EmbeddedBroker(os.path.join(directory, "single")) as broker,
        EmbeddedCluster(os.path.join(directory, "cluster"), brokers=BROKERS) as cluster,
    ):
        sides = {f"{BROKERS} brokers": cluster.bootstrap, "1 broker": broker.bootstrap}
        for name, bootstrap in sides.items():
            leaders = filled(bootstrap, args.records)
            if name != "1 broker" and len(leaders) != BROKERS:
                raise RuntimeError(f"the cluster's topic is led by brokers {sorted(leaders)} only")
        frames = {
            name: spark.read.format("kafkalog")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", TOPIC)
            .load()
            for name, bootstrap in sides.items()
        }
        for name, frame in frames.items():  # warm-up: Python workers, page cache
            assert frame.count() == args.records, name
        for _ in range(args.rounds):
            for name, frame in frames.items():
                times.setdefault((name, "count"), []).append(timed(frame.count))
                times.setdefault((name, "noop"), []).append(timed(functools.partial(write_noop, frame)))
    spark.stop()
    rates = {key: args.records / statistics.median(values) for key, values in times.items()}
    cluster_side, single_side = list(frames)
    print(
        f"{args.records:,} records of {VALUE_SIZE}-byte values, {PARTITIONS} partitions, local[2], median of "
        f"{args.rounds}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores:"
    )
    print(f"  {'':12s} {cluster_side + ' rows/s':>18s} {single_side + ' rows/s':>16s} {'ratio':>6s}")
    for action in ("count", "noop"):
        spread, single = rates[(cluster_side, action)], rates[(single_side, action)]
        print(f"  {action:12s} {spread:18,.0f} {single:16,.0f} {spread / single:6.2f}")
    return rates


if __name__ == "__main__":
    main()
