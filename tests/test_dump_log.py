"""``kafkalog dump-log``: output, JSON fields, exit codes, corruption reports, and garbage input."""

import json
import os
import struct
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker import cli
from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.records import batch
from broker.records.compression import Codec

from .log.util import BASE_TIME, make_batch


@pytest.fixture
def partition_dir(tmp_path):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(segment_bytes=1500, index_interval_bytes=1))
    for i in range(12):
        log.append(make_batch(3, timestamp=BASE_TIME + i, codec=Codec(i % 5)))
    log.append(batch.build([batch.Record(0, BASE_TIME, None, None, (("h", b"1"),))]))
    log.flush()
    log.close()
    return tmp_path / "events-0"


def run_json(capsys, *args):
    code = cli.main(["dump-log", "--json", *map(str, args)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return code, [x for x in lines if "summary" not in x and "indexEntry" not in x and "invalid" not in x], lines[-1]["summary"]


def test_a_valid_partition_prints_every_batch_and_exits_0(partition_dir, capsys):
    assert cli.main(["dump-log", str(partition_dir)]) == 0
    out = capsys.readouterr().out
    assert out.count("baseOffset:") == 13
    assert out.count("Dumping ") == len(list(partition_dir.glob("*.log"))) > 1
    assert "compression: zstd" in out and "crcValid: true" in out
    assert out.strip().endswith("all bytes valid")


def test_json_has_one_object_per_batch_and_a_summary(partition_dir, capsys):
    code, batches, summary = run_json(capsys, partition_dir)
    assert code == 0
    assert [b["baseOffset"] for b in batches] == list(range(0, 37, 3))
    assert [b["lastOffset"] for b in batches] == list(range(2, 37, 3)) + [36]
    for b in batches:
        assert {"position", "size", "baseOffset", "lastOffset", "count", "magic", "compression", "maxTimestamp",
                "crcValid"} <= b.keys()
        assert b["magic"] == 2 and b["crcValid"] is True
    assert [b["compression"] for b in batches[:5]] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert summary["validBatches"] == 13 and summary["invalid"] == [] and summary["firstInvalidPosition"] is None


def test_records_lists_offsets_and_sizes(partition_dir, capsys):
    code, batches, _ = run_json(capsys, "--records", partition_dir)
    assert code == 0
    assert [r["offset"] for b in batches for r in b["records"]] == list(range(37))
    last = batches[-1]["records"][0]
    assert (last["keySize"], last["valueSize"], last["headerKeys"]) == (-1, -1, ["h"])
    assert batches[0]["records"][0]["keySize"] == len(b"key-0")


def test_a_bad_crc_is_reported_and_the_walk_goes_on(partition_dir, capsys):
    segment = sorted(partition_dir.glob("*.log"))[0]
    _, before, _ = run_json(capsys, segment)
    second = before[1]
    with open(segment, "r+b") as f:
        f.seek(second["position"] + second["size"] - 1)
        last = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([last[0] ^ 1]))
    code, after, summary = run_json(capsys, segment)
    assert code == 1
    assert [b["crcValid"] for b in after] == [i != 1 for i in range(len(before))]
    assert summary["firstInvalidPosition"] == second["position"]
    assert summary["validBatches"] == len(before) - 1 and summary["invalidBatches"] == 1


def test_a_torn_tail_is_reported_with_its_position(partition_dir, capsys):
    segment = sorted(partition_dir.glob("*.log"))[-1]
    size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(make_batch(5)[:40])
    assert cli.main(["dump-log", str(segment)]) == 1
    assert f"INVALID {segment} at position {size}" in capsys.readouterr().out
    code, _, summary = run_json(capsys, segment)
    assert code == 1 and summary["firstInvalidPosition"] == size and summary["firstInvalidFile"] == str(segment)


def test_index_files_are_dumped(partition_dir, capsys):
    index = sorted(partition_dir.glob("*.index"))[0]
    assert cli.main(["dump-log", "--json", str(index)]) == 0
    entries = [json.loads(line)["indexEntry"] for line in capsys.readouterr().out.splitlines()[:-1]]
    assert entries and all(e["position"] > 0 for e in entries)
    assert [e["offset"] for e in entries] == sorted(e["offset"] for e in entries)


def test_legacy_message_sets_are_dumped(tmp_path, capsys):
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    data = b""
    for magic, codec in [(0, 0), (1, 0), (1, 1)]:
        builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
        for i in range(3):
            builder.append(i, timestamp=BASE_TIME if magic else None, key=None, value=b"v%d" % i)
        data += bytes(builder.build())
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    code, entries, summary = run_json(capsys, "--records", path)
    assert code == 0
    assert [e["magic"] for e in entries] == [0, 0, 0, 1, 1, 1, 1]
    assert entries[-1]["compression"] == "gzip" and len(entries[-1]["records"]) == 3


def test_usage_errors_exit_2(tmp_path, capsys):
    assert cli.main(["dump-log", str(tmp_path / "missing.log")]) == 2
    (tmp_path / "notes.txt").write_text("hi")
    assert cli.main(["dump-log", str(tmp_path / "notes.txt")]) == 2
    with pytest.raises(SystemExit) as raised:
        cli.main(["dump-log"])
    assert raised.value.code == 2
    assert "missing.log: no such file" in capsys.readouterr().err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=3000), prefix=st.sampled_from([b"", make_batch(2), make_batch(1, codec=Codec.GZIP)]),
       suffix=st.sampled_from([".log", ".index", ".timeindex"]))
def test_garbage_never_crashes_it(tmp_path, capsys, data, prefix, suffix):
    path = tmp_path / f"00000000000000000000{suffix}"
    path.write_bytes(prefix + data)
    assert cli.main(["dump-log", "--records", str(path)]) in (0, 1)
    assert cli.main(["dump-log", "--json", str(path)]) in (0, 1)
    assert "summary" in capsys.readouterr().out


def test_the_console_script_is_installed(partition_dir):
    kafkalog = os.path.join(os.path.dirname(sys.executable), "kafkalog")
    result = subprocess.run([kafkalog, "dump-log", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "exit status: 0 every byte is valid" in result.stdout
    result = subprocess.run([kafkalog, "dump-log", str(partition_dir)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.count("baseOffset:") == 13


def test_an_unknown_codec_is_reported_not_fatal(tmp_path, capsys):
    data = bytearray(make_batch(2))
    struct.pack_into(">h", data, 21, 7)
    struct.pack_into(">I", data, 17, batch.compute_crc(data))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data) + make_batch(1))
    code, batches, summary = run_json(capsys, path)
    assert code == 1
    assert [b["compression"] for b in batches] == ["unknown(7)", "none"]
    assert summary["firstInvalidPosition"] == 0
