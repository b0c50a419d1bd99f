"""``kafkalog dump-log``: output, JSON fields, exit codes, corruption reports, and garbage input."""

import json
import os
import shutil
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

KAFKALOG = os.path.join(os.path.dirname(sys.executable), "kafkalog")


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
    return (
        code,
        [x for x in lines if "summary" not in x and "indexEntry" not in x and "invalid" not in x],
        lines[-1]["summary"],
    )


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
        assert {
            "position",
            "size",
            "baseOffset",
            "lastOffset",
            "count",
            "magic",
            "compression",
            "maxTimestamp",
            "crcValid",
        } <= b.keys()
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


def test_print_data_shows_keys_payloads_and_headers_as_kafka_dump_log_does(tmp_path, capsys):
    log = PartitionLog.open(str(tmp_path / "data-0"), LogConfig())
    log.append(
        batch.build(
            [
                batch.Record(0, BASE_TIME, b"user-1", b"tab\there"),
                batch.Record(1, BASE_TIME, None, b"\xff\x00", (("h", b"1"), ("n", None))),
            ],
            compression=Codec.GZIP,
        )
    )
    log.close()
    assert cli.main(["dump-log", "--print-data", str(tmp_path / "data-0")]) == 0
    records = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert records[0].endswith("key: user-1 payload: tab\\there headers: []")
    assert records[1].endswith("key: null payload: \\xff\\x00 headers: [h=1, n=null]")
    code, batches, _ = run_json(capsys, "--print-data", tmp_path / "data-0")
    assert code == 0
    assert [{k: r[k] for k in ("key", "payload", "headers")} for r in batches[0]["records"]] == [
        {"key": "user-1", "payload": "tab\there", "headers": []},
        {"key": None, "payload": "/wA=", "headers": [{"key": "h", "value": "1"}, {"key": "n", "value": None}]},
    ]
    assert batches[0]["records"][1]["payloadEncoding"] == "base64"


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
    assert cli.main(["dump-log"]) == 2
    err = capsys.readouterr().err
    assert "missing.log: no such file" in err and "give the segment files or partition directories" in err
    with pytest.raises(SystemExit) as raised:
        cli.main(["dump-log", "--files", "a.log,,b.log"])
    assert raised.value.code == 2
    assert "'a.log,,b.log' is not a comma-separated list of paths" in capsys.readouterr().err


@pytest.mark.slow  # starts a process
def test_kafka_dump_log_spellings(partition_dir):
    """kafka-dump-log.sh --files A,B --deep-iteration --print-data-log, through the real command."""
    segments = sorted(str(path) for path in partition_dir.glob("*.log"))
    kafka = subprocess.run(
        [KAFKALOG, "dump-log", "--files", ",".join(segments), "--deep-iteration", "--print-data-log"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    ours = subprocess.run(
        [KAFKALOG, "dump-log", *segments, "--records", "--print-data"], capture_output=True, text=True, timeout=60
    )
    assert (kafka.returncode, kafka.stderr) == (0, "")
    assert kafka.stdout == ours.stdout and "key: key-0 payload: " in kafka.stdout


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.binary(max_size=3000),
    prefix=st.sampled_from([b"", make_batch(2), make_batch(1, codec=Codec.GZIP)]),
    suffix=st.sampled_from([".log", ".index", ".timeindex"]),
)
def test_garbage_never_crashes_it(tmp_path, capsys, data, prefix, suffix):
    path = tmp_path / f"00000000000000000000{suffix}"
    path.write_bytes(prefix + data)
    assert cli.main(["dump-log", "--records", str(path)]) in (0, 1)
    assert cli.main(["dump-log", "--json", str(path)]) in (0, 1)
    assert "summary" in capsys.readouterr().out


@pytest.mark.slow  # starts a process
def test_the_console_script_is_installed(partition_dir):
    result = subprocess.run([KAFKALOG, "dump-log", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "exit status: 0 every byte is valid" in result.stdout
    result = subprocess.run([KAFKALOG, "dump-log", str(partition_dir)], capture_output=True, text=True, timeout=60)
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


def test_records_that_cannot_be_decoded_exit_1(tmp_path, capsys):
    """A gzip batch whose payload was zeroed and whose CRC was recomputed: the CRC holds, the records do not."""
    data = bytearray(make_batch(3, codec=Codec.GZIP))
    data[batch.HEADER_SIZE :] = bytes(len(data) - batch.HEADER_SIZE)
    struct.pack_into(">I", data, 17, batch.compute_crc(data))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data) + make_batch(1, start=3))
    code, batches, summary = run_json(capsys, path)
    assert code == 1
    assert [b["crcValid"] for b in batches] == [True, True] and "recordsError" in batches[0]
    assert (summary["invalidBatches"], summary["validBatches"], summary["firstInvalidPosition"]) == (1, 1, 0)
    assert cli.main(["dump-log", str(path)]) == 1
    assert "recordsError: cannot decompress gzip data" in capsys.readouterr().out


def _fifo(path):
    os.mkfifo(path)


def _dangling_symlink(path):
    os.symlink(path.parent / "gone.log", path)


@pytest.mark.timeout(60)  # opening a FIFO for reading would block until a writer comes
@pytest.mark.parametrize("make", [os.mkdir, _fifo, _dangling_symlink])
def test_a_segment_that_is_not_a_readable_file_exits_2(partition_dir, capsys, make):
    odd = partition_dir / "00000000000000099999.log"
    make(odd)
    assert cli.main(["dump-log", str(partition_dir)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(f"kafkalog dump-log: {odd}: ")


def run_where_file_modes_apply(*args) -> subprocess.CompletedProcess:
    """Run kafkalog so that file modes deny reads: as root, without the capabilities that bypass them."""
    command = [KAFKALOG, *args]
    if os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search"
        command = [shutil.which("setpriv") or "setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *command]
        try:
            subprocess.run(command[:4] + ["true"], check=True, capture_output=True, timeout=60)
        except (OSError, subprocess.CalledProcessError):
            pytest.skip("running as root and setpriv cannot drop the capabilities that bypass file modes")
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_an_unreadable_directory_or_segment_exits_2_naming_it(partition_dir):
    last = sorted(partition_dir.glob("*.log"))[-1]
    segments = len(list(partition_dir.glob("*.log")))
    for unreadable, files_started in [(partition_dir, 0), (last, segments)]:
        unreadable.chmod(0)
        try:
            result = run_where_file_modes_apply("dump-log", str(partition_dir))
        finally:
            unreadable.chmod(0o755)
        assert result.returncode == 2
        assert result.stderr == f"kafkalog dump-log: {unreadable}: permission denied\n"
        assert result.stdout.count("Dumping ") == files_started
        assert "summary" not in result.stdout


def test_control_batches_and_the_txnindex_are_dumped(tmp_path, capsys):
    log = PartitionLog.open(str(tmp_path / "txn-0"))
    for producer_id, commit in ((1, True), (2, False)):
        log.append(make_batch(2, producer_id=producer_id, producer_epoch=0, base_sequence=0, is_transactional=True))
        log.append_txn_marker(producer_id, 0, coordinator_epoch=7, commit=commit)
    txn_index = log.active_segment.txn_index.path
    log.close()
    code, batches, _ = run_json(capsys, tmp_path / "txn-0")
    assert code == 0
    assert [(b.get("controlType"), b.get("coordinatorEpoch")) for b in batches] == [
        (None, None),
        ("COMMIT", 7),
        (None, None),
        ("ABORT", 7),
    ]
    assert cli.main(["dump-log", txn_index]) == 0
    out = capsys.readouterr().out
    assert "version: 0 producerId: 2 firstOffset: 3 lastOffset: 5 lastStableOffset: 6" in out
    with open(txn_index, "ab") as f:
        f.write(b"\x00" * 5)
    assert cli.main(["dump-log", txn_index]) == 1
    assert "5 trailing bytes are not a whole 34-byte entry" in capsys.readouterr().out


def test_each_batch_shows_its_leader_epoch_and_the_checkpoint_its_entries(tmp_path, capsys):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig())
    for epoch in (0, 0, 3, 7):
        log.append(make_batch(2), leader_epoch=epoch)
    log.close()
    checkpoint = tmp_path / "events-0" / "leader-epoch-checkpoint"
    code, batches, _ = run_json(capsys, tmp_path / "events-0")
    assert code == 0 and [b["partitionLeaderEpoch"] for b in batches] == [0, 0, 3, 7]
    assert cli.main(["dump-log", "--json", str(checkpoint)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["leaderEpoch"] for x in lines[:-1]] == [
        {"file": str(checkpoint), "epoch": 0, "startOffset": 0},
        {"file": str(checkpoint), "epoch": 3, "startOffset": 4},
        {"file": str(checkpoint), "epoch": 7, "startOffset": 6},
    ]
    assert cli.main(["dump-log", str(checkpoint)]) == 0
    assert capsys.readouterr().out.splitlines()[1:4] == [
        "epoch: 0 startOffset: 0",
        "epoch: 3 startOffset: 4",
        "epoch: 7 startOffset: 6",
    ]


def test_a_malformed_leader_epoch_checkpoint_exits_1_with_the_reason(tmp_path, capsys):
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    checkpoint.write_text("0\n2\n0 0\n")
    assert cli.main(["dump-log", str(checkpoint)]) == 1
    assert f"INVALID {checkpoint} at position 0: 2 entries expected, 1 found" in capsys.readouterr().out
