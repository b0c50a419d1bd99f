"""``broker.records.retain``: keeping some records of a batch, byte for byte, and the C and Python
walks of the records agreeing (the same spans, or the same error naming the same record)."""

import random

import pytest

from broker.records import batch, retain
from broker.records.batch import Record, TimestampType
from broker.records.compression import Codec
from broker.records.errors import CorruptRecordError


def sample(codec=Codec.NONE, timestamp_type=TimestampType.CREATE_TIME, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    records = [
        Record(
            100 + i,
            1_700_000_000_000 + rng.randrange(-1000, 10**9),
            None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 300)),
            None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 3000)),
            tuple((f"h{j}", rng.choice([None, b"x" * j])) for j in range(rng.randrange(3))),
        )
        for i in range(50)
    ]
    return batch.build(
        records,
        base_offset=100,
        compression=codec,
        timestamp_type=timestamp_type,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        max_timestamp=1_800_000_000_000 if timestamp_type == TimestampType.LOG_APPEND_TIME else None,
    )


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
@pytest.mark.parametrize("timestamp_type", list(TimestampType)[1:])
def test_retained_records_are_the_kept_ones_unchanged_and_the_header_keeps_the_batchs_fields(codec, timestamp_type):
    entry = sample(codec, timestamp_type)
    header = batch.parse_header(entry)
    original = batch.decode(entry)
    kept = retain.retain(entry, header, lambda r: r.offset % 3 == 0)
    rebuilt = batch.validate(kept)
    assert batch.decode(kept).records == [r for r in original.records if r.offset % 3 == 0]
    same = (
        "base_offset",
        "last_offset_delta",
        "base_timestamp",
        "attributes",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "partition_leader_epoch",
    )
    assert [getattr(rebuilt, f) for f in same] == [getattr(header, f) for f in same]
    assert rebuilt.records_count == len([r for r in original.records if r.offset % 3 == 0]) == 16
    if timestamp_type == TimestampType.CREATE_TIME:
        assert rebuilt.max_timestamp == max(r.timestamp for r in original.records if r.offset % 3 == 0)
    else:
        assert rebuilt.max_timestamp == header.max_timestamp
    assert retain.retain(entry, header, lambda r: True) == entry
    assert retain.retain(entry, header, lambda r: False) is None


def test_keys_name_each_records_key_tombstone_and_timestamp():
    entry = sample()
    header = batch.parse_header(entry)
    assert [(k.offset, k.key, k.is_tombstone, k.timestamp) for k in retain.keys(entry, header)] == [
        (r.offset, r.key, r.value is None, r.timestamp) for r in batch.decode(entry).records
    ]


@pytest.mark.skipif(retain._native_spans is None, reason="the C extension _recordwalk was not built")
def test_the_c_and_python_walks_agree_on_valid_and_mutated_batches():
    rng = random.Random(1)
    for seed in range(30):
        entry = bytearray(sample(seed=seed))
        header = batch.parse_header(entry)
        for _ in range(20):
            mutated = bytearray(entry)
            if seed:
                mutated[rng.randrange(batch.HEADER_SIZE, len(mutated))] = rng.randrange(256)
            section = bytes(mutated[batch.HEADER_SIZE :])
            outcomes = []
            for walk in (retain._spans, retain._python_spans):
                try:
                    outcomes.append([(s.start, s.end, s.record) for s in walk(section, header)])
                except CorruptRecordError as exc:
                    outcomes.append(str(exc))
            assert outcomes[0] == outcomes[1]


def test_keyed_offsets_are_the_keys_and_offsets_of_the_records_with_a_key():
    entry = sample(Codec.LZ4)
    header = batch.parse_header(entry)
    assert retain.keyed_offsets(entry, header) == [
        (r.key, r.offset) for r in batch.decode(entry).records if r.key is not None
    ]
