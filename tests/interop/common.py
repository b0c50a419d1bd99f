"""Client-independent helpers of the interop matrix: ``Rec``, one record as the tests compare it
(every adapter turns what its consumer returns into ``Rec`` values); the deterministic records a
test produces (``make_records``) and the offsets the broker must give them (``with_offsets``: every
partition of a fresh topic starts at 0, records keep their order); ``assert_same_records``, with a
readable diff; ``stored_batches``, what the broker really stored (``kafkalog dump-log --json``:
codec, producer ids, batch boundaries); ``broker_log_checked``, which fails a test during which the
broker logged a warning or an error (as it does for every connection it closes on a bad request,
and for handler crashes), so problems a client silently retried past are still seen."""

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from typing import NamedTuple

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PARTITIONS = 4  # num.partitions of the module-scoped broker fixture
WAIT_SECONDS = 20  # upper bound for every "until all records arrived" loop
KAFKALOG = os.path.join(os.path.dirname(sys.executable), "kafkalog")


class Rec(NamedTuple):
    partition: int
    offset: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    timestamp: int | None = None


def now_ms() -> int:
    return int(time.time() * 1000)


def topic_name(request) -> str:
    """The test's name (with its parameters, the client among them), reduced to Kafka's legal
    characters and length."""
    return re.sub(r"[^a-zA-Z0-9._-]+", "_", request.node.name).strip("_")[:200]


def make_records(
    count: int,
    partitions=(0, 1, 2, 3),
    base_timestamp: int | None | str = "recent",
    value_size: int = 16,
    headers: bool = True,
    tag: str = "r",
) -> list[Rec]:
    """``count`` records spread round-robin over ``partitions``: distinct keys and values, a couple
    of headers (one repeated key), and timestamps ``base_timestamp + i`` ("recent": a minute ago;
    None: no explicit timestamp). Offsets are left as None (see ``with_offsets``)."""
    if base_timestamp == "recent":
        base_timestamp = now_ms() - 60_000
    records = []
    for i in range(count):
        value = f"{tag}-value-{i:06d}-".encode()
        value = (value * (value_size // len(value) + 1))[: max(value_size, len(value))]
        hdrs = (("seq", str(i).encode()), ("h", b"a"), ("h", b"b")) if headers else ()
        records.append(
            Rec(
                partition=partitions[i % len(partitions)],
                offset=None,
                key=f"{tag}-key-{i}".encode(),
                value=value,
                headers=hdrs,
                timestamp=None if base_timestamp is None else base_timestamp + i,
            )
        )
    return records


def with_offsets(records: list[Rec], start: dict | None = None) -> list[Rec]:
    """The records with the offsets the broker must assign: consecutive per partition, in order,
    from ``start[partition]`` (default 0)."""
    next_offset = dict(start or {})
    result = []
    for rec in records:
        offset = next_offset.get(rec.partition, 0)
        next_offset[rec.partition] = offset + 1
        result.append(rec._replace(offset=offset))
    return result


def _ordered(records):
    return sorted(records, key=lambda r: (r.partition, -1 if r.offset is None else r.offset))


def assert_same_records(got: list[Rec], expected: list[Rec], compare_timestamps: bool = True) -> None:
    """Every field of every record equal (order: by partition then offset), else a focused message."""
    got, expected = _ordered(got), _ordered(expected)
    if not compare_timestamps:
        got = [r._replace(timestamp=None) for r in got]
        expected = [r._replace(timestamp=None) for r in expected]
    if got == expected:
        return
    for index, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            fields = [f for f in Rec._fields if getattr(g, f) != getattr(e, f)]
            raise AssertionError(
                f"record #{index} differs in {fields}:\n  got      {g}\n  expected {e}\n"
                f"({len(got)} records consumed, {len(expected)} expected)"
            )
    extra = got[len(expected) :] or expected[len(got) :]
    which = "unexpected extra" if len(got) > len(expected) else "missing"
    raise AssertionError(f"{len(got)} records consumed, {len(expected)} expected; {which}: {extra[:5]}")


def assert_no_duplicates(got: list[Rec]) -> None:
    positions = [(r.partition, r.offset) for r in got]
    assert len(positions) == len(set(positions)), "a (partition, offset) was delivered twice"
    payloads = [(r.key, r.value) for r in got]
    assert len(payloads) == len(set(payloads)), "the same record was stored twice (duplicate produce)"


def stored_batches(log_dir: str, topic: str, partition: int) -> list[dict]:
    """The batches stored for ``topic-partition`` (one dict per batch, from ``kafkalog dump-log --json``)."""
    path = os.path.join(log_dir, f"{topic}-{partition}")
    done = subprocess.run([KAFKALOG, "dump-log", "--json", path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"dump-log failed ({done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return [line for line in lines if "baseOffset" in line]


def topic_configs(log_dir: str, topic: str) -> dict | None:
    """The per-topic config overrides the broker persisted (``<log-dir>/topics.json``), None if unknown."""
    with open(os.path.join(log_dir, "topics.json"), encoding="utf-8") as f:
        topics = json.load(f)["topics"]
    return topics[topic]["configs"] if topic in topics else None


def deadline(seconds: float = WAIT_SECONDS) -> float:
    return time.monotonic() + seconds


def expired(at: float) -> bool:
    return time.monotonic() > at


def compressible_records(
    count: int, partition: int = 0, base_timestamp: int | None = None, tag: str = "c"
) -> list[Rec]:
    """Records with long, highly repetitive values: every codec shrinks a batch of them a lot."""
    records = []
    for i in range(count):
        value = (b"interop compressible payload " * 8) + str(i % 7).encode() * 40
        records.append(
            Rec(
                partition,
                None,
                f"{tag}-{i % 10}".encode(),
                value,
                (("n", str(i).encode()),),
                None if base_timestamp is None else base_timestamp + i,
            )
        )
    return records


def assert_sequences_continuous(batches: list[dict]) -> None:
    """One producer id for the whole partition, sequences from 0 without gaps or repeats."""
    assert len({b["producerId"] for b in batches}) == 1 and batches[0]["producerId"] >= 0, [
        b["producerId"] for b in batches
    ]
    assert batches[0]["baseSequence"] == 0
    for before, after in zip(batches, batches[1:], strict=False):
        assert after["baseSequence"] == before["lastSequence"] + 1, "sequence gap or repeat in the log"


@contextlib.contextmanager
def broker_log_checked(broker):
    start = os.path.getsize(broker.stderr_path)
    yield
    with open(broker.stderr_path, errors="replace") as f:
        f.seek(start)
        logged = f.read()
    problems = [
        line for line in logged.splitlines() if " WARNING " in line or " ERROR " in line or line.startswith("Traceback")
    ]
    assert not problems, "the broker logged problems during this test:\n" + "\n".join(problems[:20])
