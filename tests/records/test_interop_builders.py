"""Cross-checks of v2 batches against independent encoders and decoders: kafka-python's and
aiokafka's (Cython and pure-Python) DefaultRecordBatchBuilder / DefaultRecordBatch, in both
directions, for every codec, null keys/values, null header values, empty values, unicode header
keys, a 1 MiB value, producer-state fields, LogAppendTime, control batches and offset gaps."""

import random

import pytest
from aiokafka.record import default_records as aiokafka_records
from kafka.record import default_records as kafka_records

from broker.records import batch, record_set
from broker.records.batch import ControlType, Record, TimestampType
from broker.records.compression import Codec

T = 1_700_000_000_000

RECORDS = [
    Record(0, T, b"key-0", b"value " * 40, (("trace-id", b"abc"), ("empty", b""))),
    Record(1, T + 1, None, b"null key " * 20, ()),
    Record(2, T - 100, b"null value", None, ()),
    Record(3, T + 5, b"", b"", ()),
    Record(
        4,
        T + 5,
        b"hdr",
        b"x" * 100,
        (("null-valued", None), ("\u043a\u043b\u044e\u0447", b"\xd0"), ("\u65e5\u672c\u8a9e \U0001f389", b"v")),
    ),
    Record(5, T + 999, b"\x00\xff", b"\x00" * 300, ()),
    Record(6, T + 2, None, None, (("only-header", None),)),
]
ONE_MIB_VALUE = random.Random(1).randbytes(1024) * 1024  # compressible, so codecs really apply

BUILDERS = {
    "kafka-python": kafka_records.DefaultRecordBatchBuilder,
    "aiokafka": aiokafka_records.DefaultRecordBatchBuilder,
    "aiokafka-py": aiokafka_records._DefaultRecordBatchBuilderPy,
}
READERS = {
    "kafka-python": kafka_records.DefaultRecordBatch,
    "aiokafka": aiokafka_records.DefaultRecordBatch,
    "aiokafka-py": aiokafka_records._DefaultRecordBatchPy,
}
# the partitionLeaderEpoch each client writes
CLIENT_LEADER_EPOCH = {"kafka-python": 0, "aiokafka": -1, "aiokafka-py": -1}
CODECS = list(Codec)
codec_ids = lambda c: c.name.lower()  # noqa: E731


def test_aiokafka_supports_every_codec():
    import aiokafka.codec

    assert aiokafka.codec.has_gzip() and aiokafka.codec.has_snappy()
    assert aiokafka.codec.has_lz4() and aiokafka.codec.has_zstd()


def foreign_build(
    builder_name, records, codec=Codec.NONE, *, is_transactional=0, producer_id=-1, producer_epoch=-1, base_sequence=-1
) -> bytes:
    """Build with a client's builder; record offsets are deltas from 0, as a producer writes them."""
    builder = BUILDERS[builder_name](
        magic=2,
        compression_type=int(codec),
        is_transactional=is_transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 23,
    )
    for r in records:
        assert (
            builder.append(r.offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
            is not None
        )
    return bytes(builder.build())


def foreign_read(reader_name, buf):
    """``(crc_ok, reader, [Record...])`` as a client's reader sees the batch."""
    reader = READERS[reader_name](bytes(buf))
    crc_ok = reader.validate_crc()
    records = [Record(r.offset, r.timestamp, r.key, r.value, tuple(tuple(h) for h in r.headers)) for r in reader]
    return crc_ok, reader, records


# --- client builds, we decode --------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=codec_ids)
@pytest.mark.parametrize("builder_name", list(BUILDERS))
def test_client_built_batch_decodes_identically(builder_name, codec):
    built = foreign_build(builder_name, RECORDS, codec)
    header = batch.validate(built)
    assert header.compression == codec
    assert header.base_offset == 0
    assert header.partition_leader_epoch == CLIENT_LEADER_EPOCH[builder_name]
    assert header.records_count == len(RECORDS)
    assert header.last_offset_delta == len(RECORDS) - 1
    assert header.base_timestamp == RECORDS[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in RECORDS)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert header.timestamp_type == TimestampType.CREATE_TIME
    assert not header.is_transactional and not header.is_control
    decoded = batch.decode(built)
    assert decoded.records == RECORDS
    assert list(record_set.iter_user_records(built)) == [(TimestampType.CREATE_TIME, r) for r in RECORDS]


@pytest.mark.parametrize("builder_name", list(BUILDERS))
def test_client_built_transactional_batch_header(builder_name):
    built = foreign_build(
        builder_name,
        RECORDS[:3],
        Codec.NONE,
        is_transactional=1,
        producer_id=4242,
        producer_epoch=3,
        base_sequence=2**31 - 2,
    )
    header = batch.validate(built)
    assert header.is_transactional
    assert header.attributes == 0x10
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4242, 3, 2**31 - 2)
    assert header.last_sequence == 0  # INT32_MAX - 1 + 2 wraps to 0
    decoded = batch.decode(built)
    assert decoded.is_transactional and decoded.producer_id == 4242
    assert decoded.records == RECORDS[:3]


@pytest.mark.parametrize("codec", CODECS, ids=codec_ids)
@pytest.mark.parametrize("builder_name", list(BUILDERS))
def test_client_built_one_mib_value_decodes(builder_name, codec):
    records = [Record(0, T, b"big", ONE_MIB_VALUE, (("h", b"1"),)), Record(1, T, None, b"small", ())]
    built = foreign_build(builder_name, records, codec)
    assert batch.parse_header(built).compression == codec
    assert batch.decode(built).records == records


@pytest.mark.parametrize("builder_name", list(BUILDERS))
def test_client_built_single_record_variants(builder_name):
    for record in [
        Record(0, T, None, None, ()),
        Record(0, T, None, b"", ()),
        Record(0, T, b"", None, ()),
        Record(0, 0, b"k", b"v", (("", None),)),
        Record(0, -1, b"k", b"v", ()),
    ]:
        assert batch.decode(foreign_build(builder_name, [record])).records == [record]


@pytest.mark.parametrize("builder_name, leader_epoch", [("kafka-python", 0), ("aiokafka", -1), ("aiokafka-py", -1)])
def test_uncompressed_build_is_byte_identical_to_client_build(builder_name, leader_epoch):
    ours = batch.build(RECORDS, partition_leader_epoch=leader_epoch)
    assert ours == foreign_build(builder_name, RECORDS)


@pytest.mark.parametrize("builder_name", list(BUILDERS))
def test_client_built_batch_with_offset_and_epoch_assigned(builder_name):
    built = foreign_build(builder_name, RECORDS, Codec.LZ4)
    placed = b"".join(batch.with_offset_and_epoch(built, 5000, 12))
    assert batch.validate(placed).base_offset == 5000
    assert batch.decode(placed).records == [r._replace(offset=r.offset + 5000) for r in RECORDS]


# --- we build, clients read ----------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=codec_ids)
@pytest.mark.parametrize("reader_name", list(READERS))
def test_our_batch_reads_identically_in_clients(reader_name, codec):
    records = [r._replace(offset=r.offset + 700) for r in RECORDS]
    built = batch.build(
        records,
        base_offset=700,
        compression=codec,
        producer_id=99,
        producer_epoch=4,
        base_sequence=10,
        partition_leader_epoch=6,
    )
    crc_ok, reader, seen = foreign_read(reader_name, built)
    assert crc_ok
    assert seen == records
    assert reader.base_offset == 700
    assert reader.compression_type == codec
    assert reader.first_timestamp == records[0].timestamp
    assert reader.max_timestamp == max(r.timestamp for r in records)
    assert reader.last_offset_delta == len(records) - 1
    assert (reader.producer_id, reader.producer_epoch, reader.base_sequence) == (99, 4, 10)
    assert reader.timestamp_type == 0
    assert not reader.is_transactional and not reader.is_control_batch
    assert reader.next_offset == 700 + len(records)


@pytest.mark.parametrize("codec", CODECS, ids=codec_ids)
def test_our_batch_header_fields_seen_by_kafka_python(codec):
    built = batch.build(
        RECORDS,
        compression=codec,
        partition_leader_epoch=33,
        producer_id=1,
        producer_epoch=0,
        base_sequence=2**31 - 1,
        is_transactional=True,
    )
    reader = kafka_records.DefaultRecordBatch(built)
    assert reader.validate_crc()
    assert reader.leader_epoch == 33
    assert reader.records_count == len(RECORDS)
    assert reader.size_in_bytes == len(built)
    assert reader.is_transactional
    assert reader.last_sequence == batch.parse_header(built).last_sequence == len(RECORDS) - 2


@pytest.mark.parametrize("codec", CODECS, ids=codec_ids)
@pytest.mark.parametrize("reader_name", list(READERS))
def test_our_one_mib_value_reads_in_clients(reader_name, codec):
    records = [Record(0, T, b"big", ONE_MIB_VALUE, (("h", None),))]
    crc_ok, _, seen = foreign_read(reader_name, batch.build(records, compression=codec))
    assert crc_ok
    assert seen == records


@pytest.mark.parametrize("codec", CODECS, ids=codec_ids)
@pytest.mark.parametrize("reader_name", list(READERS))
def test_our_log_append_time_batch_reads_in_clients(reader_name, codec):
    built = batch.build(
        RECORDS, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=T + 10**6
    )
    crc_ok, reader, seen = foreign_read(reader_name, built)
    assert crc_ok
    assert reader.timestamp_type == 1
    assert seen == [r._replace(timestamp=T + 10**6) for r in RECORDS]


@pytest.mark.parametrize("reader_name", list(READERS))
def test_with_log_append_time_output_reads_in_clients(reader_name):
    stamped = batch.with_log_append_time(batch.build(RECORDS, compression=Codec.ZSTD), T + 7)
    crc_ok, reader, seen = foreign_read(reader_name, stamped)
    assert crc_ok
    assert reader.timestamp_type == 1
    assert reader.max_timestamp == T + 7
    assert seen == [r._replace(timestamp=T + 7) for r in RECORDS]


@pytest.mark.parametrize("reader_name", list(READERS))
def test_with_offset_and_epoch_output_reads_in_clients(reader_name):
    placed = b"".join(batch.with_offset_and_epoch(batch.build(RECORDS, compression=Codec.GZIP), 10**12, 3))
    crc_ok, reader, seen = foreign_read(reader_name, placed)
    assert crc_ok
    assert reader.base_offset == 10**12
    assert seen == [r._replace(offset=r.offset + 10**12) for r in RECORDS]


@pytest.mark.parametrize("reader_name", list(READERS))
def test_our_offset_gaps_read_in_clients(reader_name):
    records = [Record(50, T, b"a", b"1", ()), Record(53, T, b"b", b"2", ()), Record(90, T, b"c", b"3", ())]
    crc_ok, reader, seen = foreign_read(reader_name, batch.build(records, base_offset=50))
    assert crc_ok
    assert seen == records
    assert reader.next_offset == 91


@pytest.mark.parametrize("control_type", list(ControlType), ids=lambda c: c.name.lower())
def test_our_control_batch_reads_as_control_record_in_kafka_python(control_type):
    key, value = batch.control_record(control_type, coordinator_epoch=9)
    built = batch.build(
        [Record(10, T, key, value)],
        base_offset=10,
        is_control=True,
        is_transactional=True,
        producer_id=5,
        producer_epoch=1,
    )
    reader = kafka_records.DefaultRecordBatch(built)
    assert reader.validate_crc()
    assert reader.is_control_batch and reader.is_transactional
    (record,) = list(reader)
    assert isinstance(record, kafka_records.ControlRecord)
    assert record.offset == 10
    assert record.version == 0
    assert record.type == int(control_type)
    assert record.commit is (control_type == ControlType.COMMIT)
    assert record.abort is (control_type == ControlType.ABORT)


@pytest.mark.parametrize("reader_name", ["aiokafka", "aiokafka-py"])
def test_our_control_batch_is_flagged_in_aiokafka(reader_name):
    key, value = batch.control_record(ControlType.ABORT)
    built = batch.build(
        [Record(0, T, key, value)], is_control=True, is_transactional=True, producer_id=5, producer_epoch=1
    )
    crc_ok, reader, seen = foreign_read(reader_name, built)
    assert crc_ok
    assert reader.is_control_batch
    assert seen == [Record(0, T, key, value, ())]


@pytest.mark.parametrize("reader_name", list(READERS))
def test_clients_detect_our_crc_when_corrupted(reader_name):
    corrupted = bytearray(batch.build(RECORDS))
    corrupted[-3] ^= 0x01
    assert READERS[reader_name](bytes(corrupted)).validate_crc() is False
