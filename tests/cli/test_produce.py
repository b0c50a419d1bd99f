"""``kafkalog produce`` as a real process: lines from stdin and from a file, keys split at a separator
and placed by Kafka's murmur2 partitioner, an explicit partition, every codec (checked in the stored
batches), every acks setting, batching of a large file with its progress line, input sent while a
pipe pauses, and the errors. Every record is read back with confluent-kafka."""

import base64
import datetime
import json
import signal
import subprocess
import sys
import time

import confluent_kafka
import pytest
from kafka.partitioner.default import murmur2

from ..waiting import wait_for
from .support import (
    WAIT_SECONDS,
    Rec,
    consume_records,
    kafkalog,
    latest_offsets,
    one_line_error,
    stored_codecs,
    topic_for,
)

PARTITIONS = 4  # the broker fixture's num.partitions


def new_topic(broker, request, *extra) -> str:
    topic = topic_for(request)
    done = kafkalog("topics", "create", topic, *extra, "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0, done.stderr
    return topic


def produce(broker, topic, *args, input=None):
    return kafkalog("produce", topic, *args, "--bootstrap-server", broker.bootstrap, input=input)


def producing(broker, topic, *args) -> subprocess.Popen:
    """``kafkalog produce`` reading from a pipe the test writes to."""
    return subprocess.Popen(
        [sys.executable, "-m", "broker.cli", "produce", topic, *args, "--bootstrap-server", broker.bootstrap],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_until_stored(broker, topic, count: int) -> None:
    """Until partition 0 holds ``count`` records (sent while the input pauses), at most WAIT_SECONDS."""
    wait_for(
        lambda: latest_offsets(broker.bootstrap, topic, [0])[0] >= count,
        timeout=WAIT_SECONDS,
        what="the lines sent while the input paused",
    )


def key_values(records: list[Rec]) -> list[tuple]:
    return [(r.partition, r.key, r.value) for r in records]


def test_stdin_with_keys_goes_to_the_partitions_kafka_producers_would_choose(broker, request):
    topic = new_topic(broker, request)
    lines = [f"user-{i}:event {i}: clicked" for i in range(40)]
    done = produce(broker, topic, "--key-separator", ":", input="\n".join(lines) + "\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    expected = []
    for i in range(40):
        key = f"user-{i}".encode()
        expected.append(((murmur2(bytearray(key)) & 0x7FFFFFFF) % PARTITIONS, key, f"event {i}: clicked".encode()))
    got = consume_records(broker.bootstrap, topic, range(PARTITIONS), 40)
    assert sorted(key_values(got)) == sorted(expected)
    for partition in range(PARTITIONS):  # each partition keeps the input order
        values = [r.value for r in got if r.partition == partition]
        assert values == [v for p, _, v in expected if p == partition]


def test_a_file_with_crlf_empty_lines_utf8_binary_and_no_final_newline(broker, request, tmp_path):
    topic = new_topic(broker, request, "--partitions", "2")
    path = tmp_path / "lines.txt"
    lines = [b"first", b"", "d\u00e9j\u00e0 vu \u2603".encode(), b"\xff\xfe binary", b"tab\there", b"last"]
    path.write_bytes(b"first\r\n\r\n" + b"\n".join(lines[2:]))
    done = produce(broker, topic, "--file", path, "--partition", "1")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    got = consume_records(broker.bootstrap, topic, [1], len(lines))
    assert [(r.offset, r.key, r.value) for r in got] == [(i, None, line) for i, line in enumerate(lines)]
    assert latest_offsets(broker.bootstrap, topic, [0, 1]) == {0: 0, 1: len(lines)}


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_each_codec_is_what_the_broker_stores(broker, request, codec):
    topic = new_topic(broker, request, "--partitions", "1")
    lines = [f"k{i % 3}|{'compressible value ' * 5}{i}" for i in range(200)]
    done = produce(
        broker, topic, "--key-separator", "|", "--compression", codec, "--partition", "0", input="\n".join(lines)
    )
    assert done.returncode == 0, done.stderr
    assert stored_codecs(broker.bootstrap, topic, 0) == [codec]
    got = consume_records(broker.bootstrap, topic, [0], 200)
    assert [(r.key, r.value) for r in got] == [tuple(line.encode().split(b"|", 1)) for line in lines]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_each_acks_setting_delivers_every_record(broker, request, acks):
    topic = new_topic(broker, request, "--partitions", "1")
    done = produce(broker, topic, "--acks", acks, input="".join(f"value {i}\n" for i in range(25)))
    assert done.returncode == 0, done.stderr
    got = consume_records(broker.bootstrap, topic, [0], 25)  # waits: with acks=0 nothing confirmed them
    assert [r.value for r in got] == [f"value {i}".encode() for i in range(25)]


def test_a_large_file_goes_in_several_batches_over_partitions_with_progress(broker, request, tmp_path):
    topic = new_topic(broker, request, "--partitions", "3")
    count = 12_000
    path = tmp_path / "big.txt"
    path.write_text("".join(f"{i:08d} {'x' * 90}\n" for i in range(count)))
    done = produce(broker, topic, "--file", path, "--progress", "--compression", "lz4")
    assert done.returncode == 0, done.stderr
    progress = done.stderr.split("\r")[-1]
    assert "100%" in progress and f"{count:,} lines" in progress and done.stderr.endswith("\n")
    offsets = latest_offsets(broker.bootstrap, topic, range(3))
    assert sum(offsets.values()) == count and min(offsets.values()) > 0  # unkeyed batches move on
    got = consume_records(broker.bootstrap, topic, range(3), count)
    assert sorted(r.value[:8] for r in got) == [f"{i:08d}".encode() for i in range(count)]
    assert all(len(stored_codecs(broker.bootstrap, topic, p)) >= 1 for p in range(3))


def test_lines_are_sent_while_the_input_pauses(broker, request):
    topic = new_topic(broker, request, "--partitions", "1")
    process = producing(broker, topic)
    try:
        process.stdin.write(b"early\n")
        process.stdin.flush()
        wait_until_stored(broker, topic, 1)  # before the input ends
        process.stdin.write(b"late\n")
        process.stdin.close()
        assert process.wait(WAIT_SECONDS) == 0
    finally:
        process.kill()
        process.stderr.close()
    assert [r.value for r in consume_records(broker.bootstrap, topic, [0], 2)] == [b"early", b"late"]


def test_a_line_without_the_separator_stops_after_sending_the_lines_before_it(broker, request):
    topic = new_topic(broker, request, "--partitions", "1")
    done = produce(broker, topic, "--key-separator", "=", input="a=1\nb=2\nno separator\nc=3\n")
    one_line_error(
        done,
        1,
        "kafkalog produce: line 3 not stored: no key separator '='; stopped (--on-error stop): "
        "2 lines stored; not stored: line 3; anything after line 3 was not read",
    )
    assert [(r.key, r.value) for r in consume_records(broker.bootstrap, topic, [0], 2)] == [(b"a", b"1"), (b"b", b"2")]


BIG_LINE = 20_001  # the number of the 5 MiB line of big_input


def big_input(tmp_path):
    """20,000 short lines, one of 5 MiB (far over the broker's 1 MiB max.message.bytes), 10 more."""
    lines = [f"short {i}" for i in range(1, BIG_LINE)] + ["x" * (5 << 20)] + [f"after {i}" for i in range(10)]
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, lines


def stored_values(broker, topic, partitions: int) -> list[bytes]:
    count = sum(latest_offsets(broker.bootstrap, topic, range(partitions)).values())
    return [
        r.value
        for r in sorted(
            consume_records(broker.bootstrap, topic, range(partitions), count), key=lambda r: (r.partition, r.offset)
        )
    ]


def test_a_too_large_line_stops_the_run_there_and_every_line_before_it_is_stored(broker, request, tmp_path):
    """Found as: 13,444 of 20,000 lines stored, the good lines batched with the large one dropped."""
    topic = new_topic(broker, request, "--partitions", "1")
    path, lines = big_input(tmp_path)
    message = one_line_error(
        produce(broker, topic, "--file", path),
        1,
        f"kafkalog produce: line {BIG_LINE} not stored: a record of 5,242,880 bytes: {topic}-0: ",
    )
    assert "MESSAGE_TOO_LARGE" in message
    assert message.endswith(
        f"stopped (--on-error stop): 20,000 lines stored; not stored: line {BIG_LINE}; "
        f"anything after line {BIG_LINE} was not read"
    )
    assert stored_values(broker, topic, 1) == [line.encode() for line in lines[: BIG_LINE - 1]]


def test_with_on_error_skip_only_the_too_large_line_is_left_out(broker, request, tmp_path):
    topic = new_topic(broker, request, "--partitions", "3")
    path, lines = big_input(tmp_path)
    done = produce(broker, topic, "--file", path, "--on-error", "skip")
    assert done.returncode == 1
    named, summary = done.stderr.splitlines()
    assert named.startswith(f"kafkalog produce: line {BIG_LINE} not stored: a record of 5,242,880 bytes: ")
    assert "MESSAGE_TOO_LARGE" in named
    assert summary == (
        f"kafkalog produce: skipped lines (--on-error skip): 20,010 lines stored; not stored: line {BIG_LINE}"
    )
    expected = lines[: BIG_LINE - 1] + lines[BIG_LINE:]
    assert sorted(stored_values(broker, topic, 3)) == sorted(line.encode() for line in expected)


def test_records_refused_inside_a_batch_are_named_and_the_rest_keep_their_order(broker, request):
    """The topic's limit is far below the command's batch size: the client splits the refused batch."""
    topic = new_topic(broker, request, "--config", "max.message.bytes=2000")
    lines = [f"k{i % 5}:{'y' * 3000 if i in (30, 61) else f'value {i}'}" for i in range(1, 81)]
    done = produce(broker, topic, "--key-separator", ":", "--on-error", "skip", input="\n".join(lines) + "\n")
    assert done.returncode == 1
    named = [line.split(" not stored")[0] for line in done.stderr.splitlines()[:-1]]
    assert named == ["kafkalog produce: line 30", "kafkalog produce: line 61"]
    assert done.stderr.splitlines()[-1].endswith("78 lines stored; not stored: lines 30, 61")
    got = consume_records(broker.bootstrap, topic, range(PARTITIONS), 78)
    expected = [tuple(line.encode().split(b":")) for i, line in enumerate(lines, 1) if i not in (30, 61)]
    for partition in range(PARTITIONS):
        assert [(r.key, r.value) for r in got if r.partition == partition] == [
            (k, v) for k, v in expected if (murmur2(bytearray(k)) & 0x7FFFFFFF) % PARTITIONS == partition
        ]


def test_a_refused_line_ends_a_run_whose_input_is_still_open(broker, request):
    """--on-error stop while stdin stays open: the refusal found when the input pauses ends the run."""
    topic = new_topic(broker, request, "--partitions", "1", "--config", "max.message.bytes=2000")
    process = producing(broker, topic)
    try:
        process.stdin.write(b"one\ntwo\n" + b"z" * 5000 + b"\n")
        process.stdin.flush()
        assert process.wait(WAIT_SECONDS) == 1
        stderr = process.stderr.read().decode()
    finally:
        process.kill()
        process.stdin.close()
        process.stderr.close()
    assert stderr.count("\n") == 1 and stderr.startswith("kafkalog produce: line 3 not stored: a record of 5,000 bytes")
    assert stderr.rstrip().endswith("2 lines stored; not stored: line 3; anything after line 3 was not read")
    assert [r.value for r in consume_records(broker.bootstrap, topic, [0], 2)] == [b"one", b"two"]


def test_lines_not_sent_when_the_broker_goes_away_are_named(start_broker, request):
    broker = start_broker({"num.partitions": "1"})
    topic = new_topic(broker, request)
    process = producing(broker, topic, "--timeout", "2")
    try:
        process.stdin.write(b"".join(b"before %d\n" % i for i in range(5)))
        process.stdin.flush()
        wait_until_stored(broker, topic, 5)
        broker.kill()
        process.stdin.write(b"after 1\nafter 2\nafter 3\n")
        process.stdin.close()
        assert process.wait(WAIT_SECONDS * 2) == 1
        stderr = process.stderr.read().decode()
    finally:
        process.kill()
        process.stderr.close()
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith("kafkalog produce: ") and "could be reached" in stderr
    assert stderr.rstrip().endswith("5 lines stored; not stored: lines 6-8")


def test_a_missing_topic_is_created_where_the_broker_creates_topics_on_first_use(broker, request):
    """Found as: produce refused a missing topic although the broker auto-creates (as the sink's writes do)."""
    missing = topic_for(request, "missing")
    done = produce(broker, missing, input="x\ny\n")
    assert (done.returncode, done.stderr) == (0, "")
    assert sorted(r.value for r in consume_records(broker.bootstrap, missing, range(PARTITIONS), 2)) == [b"x", b"y"]
    one_line_error(
        produce(broker, "bad name!", input="x\n"),
        1,  # what the broker cannot create is named so
        "kafkalog produce: 'bad name!' is not a valid topic name: at most 249 ASCII letters, digits, '.', "
        "'_' and '-' (INVALID_TOPIC_EXCEPTION)",
    )


def test_a_missing_topic_is_refused_where_the_broker_does_not_create_topics(start_broker, request):
    broker = start_broker({"auto.create.topics.enable": "false"})
    missing = topic_for(request, "missing")
    one_line_error(
        produce(broker, missing, input="x\n"),
        1,
        f"kafkalog produce: topic {missing!r} does not exist on {broker.bootstrap} (and the broker does "
        f"not create topics on first use: auto.create.topics.enable=false; create it with `kafkalog "
        f"topics create`)",
    )


def test_kafka_console_producer_properties_split_keys(broker, request):
    """kafka-console-producer.sh's --property parse.key=true, with key.separator (a tab by default),
    --compression-codec and --request-required-acks."""
    topic = new_topic(broker, request, "--partitions", "1")
    done = kafkalog(
        "produce",
        "--topic",
        topic,
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        "--compression-codec",
        "gzip",
        "--request-required-acks",
        "all",
        "--bootstrap-server",
        f"PLAINTEXT://{broker.bootstrap}",
        input="k1:v1\nk2:v:2\n",
    )
    assert (done.returncode, done.stderr) == (0, "")
    done = produce(broker, topic, "--property", "parse.key=true", input="k3\tv3\n")
    assert (done.returncode, done.stderr) == (0, "")
    assert key_values(consume_records(broker.bootstrap, topic, [0], 3)) == [
        (0, b"k1", b"v1"),
        (0, b"k2", b"v:2"),
        (0, b"k3", b"v3"),
    ]
    assert stored_codecs(broker.bootstrap, topic, 0) == ["gzip", "none"]


def test_operation_errors_exit_1(broker, request):
    topic = new_topic(broker, request, "--partitions", "2", "--config", "max.message.bytes=1000")
    one_line_error(
        produce(broker, topic, "--partition", "2", input="x\n"),
        1,
        f"kafkalog produce: topic {topic!r} has no partition 2 (its partitions are 0-1)",
    )
    message = one_line_error(
        produce(broker, topic, input="small\n" + "y" * 5000 + "\n"),
        1,
        "kafkalog produce: line 2 not stored: a record of 5,000 bytes: ",
    )
    assert any(f"{topic}-{partition}:" in message for partition in (0, 1))  # the sticky partition, picked at random
    assert "MESSAGE_TOO_LARGE" in message and "1 line stored" in message


@pytest.mark.parametrize(
    "args, message",
    [
        (["--compression", "brotli"], "argument --compression/--compression-codec: invalid choice: 'brotli'"),
        (["--acks", "2"], "argument --acks/--request-required-acks: invalid choice: '2'"),
        (["--partition", "-1"], "argument --partition: '-1' is not a whole number >= 0"),
        (["--key-separator", ""], "--key-separator cannot be empty"),
        (["--file", "/nonexistent/lines.txt"], "--file /nonexistent/lines.txt: No such file or directory"),
        (["--header", "no-value"], "argument --header: 'no-value' is not KEY=VALUE"),
        (["--header", "=v"], "argument --header: '=v' is not KEY=VALUE"),
        (["--property", "ignore.error=true"], "--property ignore.error: not a property of this producer"),
        (["--property", "parse.key=1"], "--property parse.key=1: the value is true or false"),
        (["--property", "key.separator=:"], "--property key.separator needs --property parse.key=true"),
        (["--property", "parse.key=true", "--key-separator", ":"], "give one"),
        (["--timestamp", "yesterday"], "argument --timestamp: 'yesterday' is neither ISO-8601 nor epoch milliseconds"),
        (["--format", "json", "--key-separator", ":"], "--key-separator splits plain lines"),
        (["--on-error", "ignore"], "argument --on-error: invalid choice: 'ignore'"),
    ],
)
def test_usage_errors_exit_2(broker, args, message):
    done = produce(broker, "any-topic", *args, input="x\n")
    assert message in one_line_error(done, 2, "kafkalog produce: ")


def consumed_with_headers(bootstrap: str, topic: str, count: int) -> list[tuple]:
    """(key, value, timestamp, headers) of ``count`` records of partition 0, read by confluent-kafka."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"cli-{topic}", "enable.auto.commit": False}
    )
    got = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        deadline = time.monotonic() + WAIT_SECONDS
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                got.append((message.key(), message.value(), message.timestamp()[1], message.headers() or []))
    finally:
        consumer.close()
    assert len(got) == count, f"{len(got)} records consumed, {count} expected"
    return got


def test_headers_and_a_timestamp_for_every_line(broker, request):
    topic = new_topic(broker, request, "--partitions", "1")
    done = produce(
        broker,
        topic,
        "--key-separator",
        ":",
        "--header",
        "source=web",
        "--header",
        "empty=",
        "--timestamp",
        "2026-11-20T13:00:00Z",
        input="u1:a\nu2:b\n",
    )
    assert (done.returncode, done.stderr) == (0, "")
    stamp = int(datetime.datetime(2026, 11, 20, 13, tzinfo=datetime.timezone.utc).timestamp() * 1000)
    headers = [("source", b"web"), ("empty", b"")]
    assert consumed_with_headers(broker.bootstrap, topic, 2) == [
        (b"u1", b"a", stamp, headers),
        (b"u2", b"b", stamp, headers),
    ]


def test_json_lines_carry_key_value_headers_and_timestamp(broker, request):
    topic = new_topic(broker, request, "--partitions", "1")
    lines = [
        {
            "key": "k1",
            "value": "v1",
            "headers": [{"key": "h", "value": "1"}, {"key": "h", "value": None}],
            "timestamp": 1_700_000_000_000,
        },
        {
            "key": None,
            "value": base64.b64encode(b"\xff\x00").decode(),
            "valueEncoding": "base64",
            "headers": {"trace": "t-7"},
            "timestamp": "2023-11-14T22:13:20.005Z",
        },
        {"value": None, "topic": "ignored", "partition": 9, "offset": 5, "timestampType": "CreateTime"},
    ]
    done = produce(
        broker,
        topic,
        "--format",
        "json",
        "--header",
        "via=cli",
        "--timestamp",
        "1000",
        input="".join(json.dumps(line) + "\n" for line in lines),
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert consumed_with_headers(broker.bootstrap, topic, 3) == [
        (b"k1", b"v1", 1_700_000_000_000, [("h", b"1"), ("h", None), ("via", b"cli")]),
        (None, b"\xff\x00", 1_700_000_000_005, [("trace", b"t-7"), ("via", b"cli")]),
        (None, None, 1000, [("via", b"cli")]),
    ]


def test_what_consume_prints_as_json_produces_the_same_records(broker, request):
    source, copy = new_topic(broker, request, "--partitions", "1"), topic_for(request, "copy")
    assert (
        kafkalog("topics", "create", copy, "--partitions", "1", "--bootstrap-server", broker.bootstrap).returncode == 0
    )
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
    for i, (key, value) in enumerate([(b"k", b"v"), (b"\xfe", b"tab\tnew\nline"), (None, b"\x00\xff")]):
        producer.produce(
            source,
            key=key,
            value=value,
            partition=0,
            timestamp=1_600_000_000_000 + i,
            headers=[("bin", b"\xff"), ("text", "\u00e9".encode()), ("none", None)],
        )
    assert producer.flush(WAIT_SECONDS) == 0
    printed = kafkalog("consume", "--topic", source, "--format", "json", "--bootstrap-servers", broker.bootstrap)
    assert printed.returncode == 0, printed.stderr
    done = produce(broker, copy, "--format", "json", input=printed.stdout)
    assert (done.returncode, done.stderr) == (0, "")
    assert consumed_with_headers(broker.bootstrap, copy, 3) == consumed_with_headers(broker.bootstrap, source, 3)


def test_bad_json_lines_are_named_and_skipped(broker, request):
    topic = new_topic(broker, request, "--partitions", "1")
    lines = [
        '{"value": "good 1"}',
        "not json",
        '["a list"]',
        '{"value": 5}',
        '{"vlaue": "typo"}',
        '{"value": "x", "timestamp": -5}',
        '{"value": "x", "valueEncoding": "base64"}',
        '{"value": "x", "headers": [1]}',
        '{"value": "\\ud800"}',
        '{"value": "good 2"}',
    ]
    done = produce(broker, topic, "--format", "json", "--on-error", "skip", input="\n".join(lines) + "\n")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    reasons = done.stderr.splitlines()
    assert [r.split(": ")[1] for r in reasons[:-1]] == [f"line {n} not stored" for n in range(2, 10)]
    assert "not JSON" in reasons[0] and "unknown field 'vlaue'" in reasons[3] and "timestamp -5" in reasons[4]
    assert "lone surrogate" in reasons[7]
    assert reasons[-1] == "kafkalog produce: skipped lines (--on-error skip): 2 lines stored; not stored: lines 2-9"
    assert [r.value for r in consume_records(broker.bootstrap, topic, [0], 2)] == [b"good 1", b"good 2"]


def test_ctrl_c_after_every_line_was_sent_is_quiet(broker, request):
    topic = new_topic(broker, request, "--partitions", "1")
    process = producing(broker, topic)
    try:
        process.stdin.write(b"typed\n")
        process.stdin.flush()
        wait_until_stored(broker, topic, 1)
        process.send_signal(signal.SIGINT)
        assert process.wait(WAIT_SECONDS) == 130
        assert process.stderr.read() == b""
    finally:
        process.kill()
        process.stdin.close()
        process.stderr.close()
