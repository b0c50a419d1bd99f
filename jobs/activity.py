"""A realistic activity stream for the demo and the notebook: page views as JSON values, keyed by
user id, spread over partitions with the design's semantic partitioning (hash(key) % partitions,
with Kafka's murmur2 hash, so one user's views stay in order in one partition, the one a Java
producer would pick), produced in compressed batches.

    views = page_views(count=1000, start_ms=..., end_ms=..., seed=7)
    produce(bootstrap, "page-views", views, partitions=4)
"""

import json
import random
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from broker.client import KafkaClient, partition_for_key
from broker.records.compression import Codec

PAGES = [
    "/",
    "/search",
    "/cart",
    "/checkout",
    "/help",
    "/account",
    "/product/42",
    "/product/7",
    "/product/1337",
    "/blog/kafka-design",
    "/blog/spark-loads",
    "/pricing",
]
PAGE_WEIGHTS = [30, 18, 8, 4, 2, 3, 9, 7, 5, 6, 4, 4]
REFERRERS = ["", "https://www.google.com/", "https://news.ycombinator.com/", "https://t.co/", "https://example.org/"]
USER_AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
    "Mozilla/5.0 (Macintosh) Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0) Chrome/131.0",
    "Mozilla/5.0 (iPhone) Mobile/15E148",
]
BATCH_RECORDS = 2000


class PageView(NamedTuple):
    key: bytes  # the user id
    value: bytes  # JSON: user_id, page, referrer, user_agent, timestamp
    timestamp: int  # ms since the epoch


def page_views(count: int, start_ms: int, end_ms: int, seed: int = 1, users: int = 50_000) -> Iterator[PageView]:
    """``count`` page views with timestamps rising evenly from ``start_ms`` to ``end_ms``."""
    rng = random.Random(seed)
    step = (end_ms - start_ms) / max(count, 1)
    pages = rng.choices(PAGES, PAGE_WEIGHTS, k=count)
    for index in range(count):
        user = f"u{int(rng.paretovariate(1.2) * 97) % users:05d}"
        timestamp = int(start_ms + index * step)
        value = json.dumps(
            {
                "user_id": user,
                "page": pages[index],
                "referrer": rng.choice(REFERRERS),
                "user_agent": rng.choice(USER_AGENTS),
                "timestamp": timestamp,
            },
            separators=(",", ":"),
        )
        yield PageView(user.encode(), value.encode(), timestamp)


def produce(
    bootstrap: str, topic: str, views: Iterable[PageView], partitions: int, compression: Codec = Codec.LZ4
) -> int:
    """Produce page views in compressed batches of up to BATCH_RECORDS per partition; the count."""
    pending: dict[int, list] = {p: [] for p in range(partitions)}
    sent = 0
    with KafkaClient(bootstrap) as client:
        for view in views:
            partition = partition_for_key(view.key, partitions)
            batch = pending[partition]
            batch.append(view)
            if len(batch) >= BATCH_RECORDS:
                sent += _send(client, topic, partition, batch, compression)
        for partition, batch in pending.items():
            if batch:
                sent += _send(client, topic, partition, batch, compression)
    return sent


def _send(client: KafkaClient, topic: str, partition: int, batch: list, compression: Codec) -> int:
    client.produce(topic, partition, [(v.key, v.value, v.timestamp) for v in batch], compression=compression)
    count = len(batch)
    batch.clear()
    return count
