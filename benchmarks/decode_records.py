"""Decoding fetched record bytes into Spark-typed Arrow RecordBatches: Python path, C path, ceiling.

The data are v2 batches of ``--batch-records`` records (16-byte keys, semi-compressible values of
100 bytes and 1 KiB), grouped into fetch responses of about ``--fetch-kib`` of whole batches, each
followed by the first half of the next batch (a fetch response usually ends with a partial
batch). Every fetch is decoded with ``arrow_records.decode`` into one RecordBatch, with the
pure-Python path and with the C path. The ceiling is what a source yielding pre-built Arrow
batches does per fetch: slice the same rows out of a RecordBatch built beforehand (zero-copy).
Records/s are medians of ``--rounds`` rounds, on one core.

    .venv/bin/python -m benchmarks.decode_records [--mib 48] [--rounds 3] [--batch-records 500]
                                                  [--fetch-kib 1024] [--headers]
"""

import argparse
import random
import statistics
import time

import pyarrow as pa

from broker.records import batch
from broker.records.batch import Record
from broker.records.compression import Codec
from spark_kafka_source import arrow_records

BASE_TIMESTAMP = 1_700_000_000_000
SPARK_ARROW_COUNT_ROWS_S = 4.88e6  # Spark's count() over pre-built Arrow batches, 5 M rows: docs/benchmarks.md


def make_values(count: int, size: int, seed: int) -> list[bytes]:
    """JSON-ish values padded with random hex: they compress about 2x, like typical event data."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        head = (
            f'{{"id":{i},"user":"u{rng.randrange(10_000):05d}","event":"'
            f'{rng.choice(("click", "view", "buy", "scroll"))}","pad":"'
        ).encode()
        pad = rng.randbytes(max(0, size - len(head) - 2) // 2 + 1).hex().encode()
        out.append((head + pad)[: size - 2] + b'"}')
    return out


def make_fetches(
    values: list[bytes], codec: Codec, batch_records: int, fetch_bytes: int, headers: bool
) -> list[tuple[bytes, int, int]]:
    """``(records bytes, start, end)`` per fetch; each fetch holds ``end - start`` whole records."""
    hdrs = (("trace-id", b"0123456789abcdef"),) if headers else ()
    batches = []
    for base in range(0, len(values), batch_records):
        records = [
            Record(base + i, BASE_TIMESTAMP + base + i, b"key-%012d" % (base + i), value, hdrs)
            for i, value in enumerate(values[base : base + batch_records])
        ]
        batches.append((base, len(records), batch.build(records, base_offset=base, compression=codec)))
    fetches = []
    i = 0
    while i < len(batches):
        start = batches[i][0]
        parts: list[bytes] = []
        size, count = 0, 0
        while i < len(batches) and (not parts or size + len(batches[i][2]) <= fetch_bytes):
            parts.append(batches[i][2])
            size += len(batches[i][2])
            count += batches[i][1]
            i += 1
        if i < len(batches):
            parts.append(batches[i][2][: len(batches[i][2]) // 2])
        fetches.append((b"".join(parts), start, start + count))
    return fetches


def time_decode(fetches: list[tuple[bytes, int, int]], native: bool, headers: bool) -> float:
    rows = 0
    started = time.perf_counter()
    for data, start, end in fetches:
        decoded = arrow_records.decode(data, "events", 0, start, end, headers, native=native)
        rows += 0 if decoded.batch is None else decoded.batch.num_rows
    elapsed = time.perf_counter() - started
    return rows / elapsed


def time_slices(full: pa.RecordBatch, fetches: list[tuple[bytes, int, int]]) -> float:
    rows = 0
    started = time.perf_counter()
    for _, start, end in fetches:
        rows += full.slice(start, end - start).num_rows
    elapsed = time.perf_counter() - started
    return rows / elapsed


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=48, help="value bytes per case (default 48)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-records", type=int, default=500)
    parser.add_argument("--fetch-kib", type=int, default=1024)
    parser.add_argument("--headers", action="store_true", help="one header per record, includeHeaders")
    parser.add_argument(
        "--python-fraction",
        type=float,
        default=0.1,
        help="share of the fetches the (slow) Python path decodes (default 0.1)",
    )
    args = parser.parse_args(argv)
    if not arrow_records.native_available():
        raise SystemExit("the C extension is not built: pip install -e . first")
    results = []
    print(
        f"decode to Arrow, {args.batch_records}-record batches, {args.fetch_kib} KiB fetches, "
        f"{args.mib} MiB of values per case, median of {args.rounds} (records/s, one core):"
    )
    print(
        f"  {'value':>6} {'codec':<5} {'records':>8} {'python':>10} {'C':>10} {'slice':>12} "
        f"{'C/python':>9} {'C/slice':>8} {'C/Spark':>8}"
    )
    for size in (100, 1024):
        count = args.mib * 1024 * 1024 // size
        values = make_values(count, size, seed=size)
        full = None
        for codec in (Codec.NONE, Codec.LZ4, Codec.ZSTD):
            fetches = make_fetches(values, codec, args.batch_records, args.fetch_kib * 1024, args.headers)
            if full is None:  # the ceiling's pre-built batch: the same rows, decoded once
                full = (
                    pa.Table.from_batches(
                        [
                            arrow_records.decode(data, "events", 0, start, end, args.headers).batch
                            for data, start, end in fetches
                        ]
                    )
                    .combine_chunks()
                    .to_batches()[0]
                )
            python_fetches = fetches[: max(1, int(len(fetches) * args.python_fraction))]
            py, c, ceiling = [], [], []
            for _ in range(args.rounds):
                py.append(time_decode(python_fetches, False, args.headers))
                c.append(time_decode(fetches, True, args.headers))
                ceiling.append(time_slices(full, fetches))
            row = {
                "value_bytes": size,
                "codec": codec.name.lower(),
                "records": count,
                "python": statistics.median(py),
                "c": statistics.median(c),
                "slice": statistics.median(ceiling),
            }
            results.append(row)
            print(
                f"  {size:>6} {row['codec']:<5} {count:>8} {row['python']:>10,.0f} "
                f"{row['c']:>10,.0f} {row['slice']:>12,.0f} {row['c'] / row['python']:>8.1f}x "
                f"{row['c'] / row['slice']:>8.4f} {row['c'] / SPARK_ARROW_COUNT_ROWS_S:>7.2f}x"
            )
    print(
        "C/Spark: the C path against 4.88 M rows/s, Spark's count() over a source yielding "
        "pre-built Arrow batches (docs/benchmarks.md, 2 cores)"
    )
    return results


if __name__ == "__main__":
    main()
