"""``kafkalog consume`` as a real process, reading what confluent-kafka produced: every start option
(beginning, offset, a time resolved through the broker's time index, compared with confluent-kafka's
``offsets_for_times``), one partition, a record limit, plain and JSON lines byte for byte, escaped
plain text, Kafka's console consumer's spellings, ``--follow`` (new records, Ctrl-C, a broker that
dies and returns, ``--retry-for``), a closed pipe, and the errors."""

import base64
import datetime
import json
import signal
import subprocess
import sys
import threading
import uuid

import confluent_kafka
import pytest

from broker.client import KafkaClient, NewTopic
from tests.waiting import wait_for

from ..log.util import garble_first_record
from ..processes import connected_to
from .support import WAIT_SECONDS, committed, kafkalog, one_line_error, produce_records, topic_for

BASE = 1_700_000_000_000
COUNT = 30
PARTITIONS = 3


def _value(i: int) -> bytes:
    return {4: b"\xff\x00 not utf-8", 7: b"tab\there\nnew line", 11: b""}.get(i, f"value {i} \u00e9t\u00e9".encode())


RECORDS = [
    (i % PARTITIONS, None if i % 10 == 9 else f"key-{i}".encode(), _value(i), BASE + 1000 * i) for i in range(COUNT)
]
# (partition, offset, key, value, timestamp) as the broker stores them: offsets count up per partition
STORED = [(p, i // PARTITIONS, k, v, t) for i, (p, k, v, t) in enumerate(RECORDS)]


@pytest.fixture(scope="module")
def topic(broker):
    name = f"cli-consume-{uuid.uuid4().hex[:8]}"
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert client.create_topics([NewTopic(name, PARTITIONS)]) == {name: None}
    produce_records(broker.bootstrap, name, RECORDS)
    return name


def consume(broker, *args, timeout=60):
    return kafkalog("consume", *args, "--bootstrap-server", broker.bootstrap, timeout=timeout)


def _iso(timestamp: int) -> str:
    moment = datetime.datetime.fromtimestamp(timestamp // 1000, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{timestamp % 1000:03d}Z"


def _text(data) -> str:
    """The escaped text of RECORDS' keys and values (none holds a backslash or a control byte but these)."""
    if data is None:
        return "null"
    text = data.decode("utf-8", "backslashreplace")
    return text.replace("\t", "\\t").replace("\n", "\\n").replace("\x00", "\\x00")


def plain_line(record) -> str:
    partition, offset, key, value, timestamp = record
    return "\t".join([str(partition), str(offset), _iso(timestamp), _text(key), _text(value)])


def decoded(line: str) -> tuple:
    """A JSON line back to (partition, offset, key, value, timestamp), bytes exactly."""
    out = json.loads(line)
    fields = {}
    for name in ("key", "value"):
        text = out[name]
        if text is None:
            fields[name] = None
        elif out.get(name + "Encoding") == "base64":
            fields[name] = base64.b64decode(text)
        else:
            fields[name] = text.encode("utf-8")
    assert out["timestampType"] == "CreateTime"
    return out["partition"], out["offset"], fields["key"], fields["value"], out["timestamp"]


def plain_lines(done) -> list[str]:
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.splitlines()


def test_by_default_everything_from_the_beginning_as_plain_lines(broker, topic):
    lines = plain_lines(consume(broker, topic))
    assert sorted(lines) == sorted(plain_line(r) for r in STORED)
    assert plain_lines(consume(broker, topic, "--from-beginning")) == lines


def test_json_lines_carry_the_exact_bytes(broker, topic):
    done = consume(broker, topic, "--format", "json")
    assert done.returncode == 0, done.stderr
    got = [decoded(line) for line in done.stdout.splitlines()]
    assert sorted(got, key=lambda r: (r[0], r[1])) == sorted(STORED, key=lambda r: (r[0], r[1]))
    assert all(json.loads(line)["topic"] == topic for line in done.stdout.splitlines())


def test_one_partition_from_an_offset(broker, topic):
    lines = plain_lines(consume(broker, topic, "--partition", "1", "--offset", "6"))
    assert lines == [plain_line(r) for r in STORED if r[0] == 1 and r[1] >= 6]
    every_partition = plain_lines(consume(broker, topic, "--offset", "8"))
    assert sorted(every_partition) == sorted(plain_line(r) for r in STORED if r[1] >= 8)
    done = consume(broker, topic, "--offset", "1000")  # past the end: nothing, no error, but a note
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        f"kafkalog consume: no records to print: --offset 1000 is at or past the end of every "
        f"partition of {topic} (end offsets 0: 10, 1: 10, 2: 10)\n"
    )


def test_max_records(broker, topic):
    assert (
        plain_lines(consume(broker, topic, "--partition", "2", "--max-records", "4"))
        == [plain_line(r) for r in STORED if r[0] == 2][:4]
    )
    lines = plain_lines(consume(broker, topic, "--max-records", "13"))
    assert len(lines) == 13 and set(lines) <= {plain_line(r) for r in STORED}
    assert len(plain_lines(consume(broker, topic, "--max-messages", "5"))) == 5  # kafka-console-consumer's name


def offsets_for_time(broker, topic, timestamp: int) -> dict:
    """confluent-kafka's answer: the first offset at or after ``timestamp`` per partition (-1: none)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cli-times"})
    try:
        found = consumer.offsets_for_times(
            [confluent_kafka.TopicPartition(topic, p, timestamp) for p in range(PARTITIONS)], timeout=WAIT_SECONDS
        )
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


@pytest.mark.parametrize("form", ["epoch-ms", "iso-utc", "iso-offset", "iso-naive"])
def test_from_time_starts_where_the_time_index_says(broker, topic, form):
    timestamp = BASE + 14_500  # between records 14 and 15
    moment = datetime.datetime.fromtimestamp(timestamp / 1000, tz=datetime.timezone.utc)
    text = {
        "epoch-ms": str(timestamp),
        "iso-utc": moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "iso-offset": moment.astimezone(datetime.timezone(datetime.timedelta(hours=2))).isoformat(),
        "iso-naive": moment.replace(tzinfo=None).isoformat(),
    }[form]
    lines = plain_lines(consume(broker, topic, "--from-time", text))
    assert sorted(lines) == sorted(plain_line(r) for r in STORED if r[4] >= timestamp)
    first = {}
    for line in lines:
        partition, offset = map(int, line.split("\t")[:2])
        first.setdefault(partition, offset)
    assert first == offsets_for_time(broker, topic, timestamp)


def test_from_time_before_and_after_every_record(broker, topic):
    assert len(plain_lines(consume(broker, topic, "--from-time", "2000-01-01T00:00:00Z"))) == COUNT
    done = consume(broker, topic, "--partition", "1", "--from-time", str(BASE + 1000 * COUNT))
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        f"kafkalog consume: no records to print: no record of partition 1 of {topic} is "
        f"stamped at or after --from-time\n"
    )


def test_an_empty_topic_says_so(broker, request):
    topic = topic_for(request)
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert client.create_topics([NewTopic(topic, 2)]) == {topic: None}
    done = consume(broker, topic)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"kafkalog consume: no records to print: every partition of {topic} is empty\n"


def test_follow_from_an_offset_past_the_end_prints_nothing_below_it(broker, request):
    """Found as: --offset 12 --follow on a partition ending at 10 printed offsets 10 and 11 once they came."""
    topic = topic_for(request)
    produce_records(broker.bootstrap, topic, [(0, None, b"old", BASE)] * 2)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "consume",
            topic,
            "--partition",
            "0",
            "--offset",
            "4",
            "--follow",
            "--max-records",
            "2",
            "--bootstrap-server",
            broker.bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # connected: most likely following already, so the records below come after it (the test holds either way)
        wait_for(lambda: connected_to(process.pid, broker.port), WAIT_SECONDS, what="the consumer connecting")
        produce_records(broker.bootstrap, topic, [(0, None, f"new {i}".encode(), BASE) for i in range(2, 6)])
        out, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
    assert (process.returncode, err) == (0, "")
    assert [line.split("\t")[1:5:3] for line in out.splitlines()] == [["4", "new 4"], ["5", "new 5"]]


def test_follow_prints_records_produced_later_and_stops_at_max_records(broker, request):
    topic = topic_for(request)
    produce_records(broker.bootstrap, topic, [(0, None, b"before", BASE)])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "consume",
            topic,
            "--follow",
            "--max-records",
            "3",
            "--bootstrap-server",
            broker.bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().endswith("\tbefore\n")  # it is running and caught up
        produce_records(broker.bootstrap, topic, [(1, b"k", b"after 1", BASE + 1), (0, None, b"after 2", BASE + 2)])
        out, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
    assert process.returncode == 0 and err == ""
    assert sorted(line.split("\t")[-1] for line in out.splitlines()) == ["after 1", "after 2"]


def test_ctrl_c_ends_follow_with_status_0(broker, topic):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "consume",
            topic,
            "--follow",
            "--partition",
            "0",
            "--bootstrap-server",
            broker.bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline()  # following now
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
    assert (process.returncode, err) == (0, "")


def test_a_reader_that_goes_away_is_not_an_error(broker, request):
    topic = topic_for(request)
    produce_records(broker.bootstrap, topic, [(0, None, b"x" * 200, BASE + i) for i in range(2000)])
    process = subprocess.Popen(
        [sys.executable, "-m", "broker.cli", "consume", topic, "--bootstrap-server", broker.bootstrap],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout.readline().startswith(b"0\t0\t")
        process.stdout.close()  # like `| head -1`
        _, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
    assert (process.returncode, err) == (0, b"")


def test_a_stored_batch_whose_records_do_not_decode_is_a_one_line_error(broker, request):
    """Records damaged on disk behind a valid CRC (the broker refuses such a batch on produce)."""
    topic = topic_for(request)
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        client.create_topics([NewTopic(topic, 1)])
    produce_records(broker.bootstrap, topic, [(0, b"k", b"v", BASE)])
    garble_first_record(broker.log_dir, topic)
    message = one_line_error(
        consume(broker, topic), 1, f"kafkalog consume: {topic}-0: the batch at offset 0 is unreadable: "
    )
    assert "overruns its batch" in message


def test_errors(broker, topic):
    one_line_error(
        consume(broker, "no-such-topic"),
        1,
        f"kafkalog consume: topic 'no-such-topic' does not exist on {broker.bootstrap}",
    )
    one_line_error(
        consume(broker, topic, "--partition", "3"),
        1,
        f"kafkalog consume: topic {topic!r} has no partition 3 (its partitions are 0-2)",
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--offset", "-3"], "argument --offset: '-3' is not a whole number >= 0"),
        (["--from-time", "yesterday"], "argument --from-time: 'yesterday' is neither ISO-8601 nor epoch milliseconds"),
        (["--offset", "1", "--from-time", "0"], "argument --from-time: not allowed with argument --offset"),
        (["--max-records", "0"], "argument --max-records/--max-messages: '0' is not a whole number >= 1"),
        (["--format", "xml"], "argument --format: invalid choice: 'xml'"),
    ],
)
def test_usage_errors_exit_2(broker, topic, args, message):
    assert message in one_line_error(consume(broker, topic, *args), 2, "kafkalog consume: ")


def test_json_lines_show_headers_in_order_with_exact_bytes(broker, request):
    topic = topic_for(request)
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert client.create_topics([NewTopic(topic, 1)]) == {topic: None}
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"v", partition=0, headers=[("trace", b"t-1"), ("bin", b"\xff\x00"), ("trace", None)])
    producer.produce(topic, value=b"none", partition=0)
    assert producer.flush(WAIT_SECONDS) == 0
    done = consume(broker, "--topic", topic, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["headers"] for line in done.stdout.splitlines()] == [
        [
            {"key": "trace", "value": "t-1"},
            {"key": "bin", "value": "/wA=", "valueEncoding": "base64"},
            {"key": "trace", "value": None},
        ],
        [],
    ]


def test_plain_keys_and_values_are_escaped_so_that_different_bytes_never_print_alike(broker, request):
    """Found as: a key holding a tab and one holding backslash-t printed alike, and NUL bytes raw."""
    topic = topic_for(request)
    shown = {
        b"a\tb": "a\\tb",
        b"a\\tb": "a\\\\tb",
        b"a\x00b": "a\\x00b",
        b"a\xffb": "a\\xffb",
        b"a\\xffb": "a\\\\xffb",
        b"\x1b[31m": "\\x1b[31m",
        "no\u00a0break".encode(): "no\\u00a0break",
        "line\u2028sep".encode(): "line\\u2028sep",
        "\u00e9t\u00e9 \u65e5".encode(): "\u00e9t\u00e9 \u65e5",
    }
    produce_records(broker.bootstrap, topic, [(0, key, key, BASE) for key in shown])
    lines = plain_lines(consume(broker, topic, "--partition", "0"))
    assert [line.split("\t")[3:] for line in lines] == [[text, text] for text in shown.values()]
    assert len(set(shown.values())) == len(shown)


def test_kafka_console_consumer_spellings(broker, topic):
    """kafka-console-consumer.sh's --from-beginning, --max-messages, --property print.X=true|false and
    --offset earliest|latest."""
    done = consume(
        broker,
        "--topic",
        topic,
        "--partition",
        "1",
        "--from-beginning",
        "--max-messages",
        "2",
        "--property",
        "print.key=true",
        "--property",
        "print.partition=false",
        "--property",
        "print.timestamp=false",
    )
    assert plain_lines(done) == [f"{o}\t{_text(k)}\t{_text(v)}" for p, o, k, v, _ in STORED if p == 1][:2]
    done = consume(
        broker,
        "--topic",
        topic,
        "--partition",
        "2",
        "--property",
        "print.offset=false",
        "--property",
        "print.key=false",
        "--property",
        "print.timestamp=false",
        "--max-messages",
        "1",
    )
    assert plain_lines(done) == [f"2\t{_text(v)}" for p, o, k, v, _ in STORED if p == 2][:1]
    assert plain_lines(consume(broker, topic, "--offset", "earliest")) == plain_lines(consume(broker, topic))
    done = consume(broker, topic, "--offset", "latest")
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        f"kafkalog consume: no records to print: --offset latest starts at the end of every "
        f"partition of {topic} (--follow prints the records that come)\n"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--property", "print.headers=true"],
            "--property print.headers: not a property of this consumer (it takes print.partition=true|false, ",
        ),
        (["--property", "print.key=yes"], "--property print.key=yes: the value is true or false"),
        (["--property", "print.key"], "'print.key' is not KEY=VALUE"),
        (["--property", "print.key=true", "--format", "json"], "--property print.* chooses the columns of plain lines"),
        (["--retry-for", "5"], "--retry-for bounds the retries of --follow"),
    ],
)
def test_property_and_retry_for_usage_errors(broker, topic, args, message):
    assert message in one_line_error(consume(broker, topic, *args), 2, "kafkalog consume: ")


def _kill_later(process: subprocess.Popen) -> None:
    """Kill the process after 3 * WAIT_SECONDS at most (its pipes then end), so that no read of them
    waits for ever; the test's own finally kills it sooner."""
    killer = threading.Timer(3 * WAIT_SECONDS, process.kill)
    killer.daemon = True
    killer.start()


def _following_a_dead_broker(start_broker, request, *args, before_the_kill=None) -> tuple:
    """(broker, topic, process): ``consume --follow`` of a one-partition topic, caught up with its
    one record (and ``before_the_kill(broker, topic)`` done), then its broker killed."""
    broker = start_broker({"num.partitions": "1"})
    topic = topic_for(request)
    produce_records(broker.bootstrap, topic, [(0, None, b"before", BASE)])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "consume",
            topic,
            "--follow",
            *args,
            "--bootstrap-server",
            broker.bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _kill_later(process)
    assert process.stdout.readline().endswith("\tbefore\n")
    if before_the_kill is not None:
        before_the_kill(broker, topic)
    broker.kill()
    return broker, topic, process


def _outlasted_then_restarted(broker, topic: str, process: subprocess.Popen) -> tuple[str, str]:
    """The process waits through an outage longer than the client's own retries; then the broker
    starts again (the same port and log directory) and gets a record "after": the process's
    (stdout, stderr) once it ends."""
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=8)
    broker.start()
    produce_records(broker.bootstrap, topic, [(0, None, b"after", BASE)])
    return process.communicate(timeout=WAIT_SECONDS)


def test_follow_keeps_retrying_while_the_broker_is_down_and_goes_on_when_it_returns(start_broker, request):
    """Found as: --follow exited after about 5 retries (3 s) of an outage; Kafka's consumer keeps retrying."""
    broker, topic, process = _following_a_dead_broker(start_broker, request, "--max-records", "2")
    try:
        assert f"{topic}-0 cannot be read now (" in process.stderr.readline()
        out, err = _outlasted_then_restarted(broker, topic, process)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert out.endswith("\tafter\n") and err == f"kafkalog consume: {topic}-0 is read again\n"


def test_follow_in_a_group_waits_out_its_coordinator_and_goes_on_when_it_returns(start_broker, request):
    """Found as: ``consume --group --follow`` left after about 5 retries of an outage."""
    group = topic_for(request, "group")

    def first_record_committed(broker, topic):  # else it is printed again after the outage: at least once
        wait_for(
            lambda: committed(broker.bootstrap, group, topic, 1) == {0: 1},
            WAIT_SECONDS,
            what="the member's commit of its first record",
        )

    broker, topic, process = _following_a_dead_broker(
        start_broker, request, "--group", group, "--max-records", "2", before_the_kill=first_record_committed
    )
    try:
        assert process.stderr.readline().startswith(f"kafkalog consume: group {group!r} generation 1: assigned")
        assert " cannot be read now (" in process.stderr.readline()
        out, err = _outlasted_then_restarted(broker, topic, process)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert out.endswith("\tafter\n") and "Traceback" not in err, err
    assert err.splitlines()[-1] == f"kafkalog consume: left group {group!r}"
    assert committed(broker.bootstrap, group, topic, 1) == {0: 2}


def test_follow_gives_up_after_retry_for(start_broker, request):
    _, topic, process = _following_a_dead_broker(start_broker, request, "--retry-for", "1")
    try:
        out, err = process.communicate(timeout=2 * WAIT_SECONDS)
    finally:
        process.kill()
    first, last = err.splitlines()
    assert process.returncode == 1 and "Traceback" not in err
    assert first.startswith(f"kafkalog consume: {topic}-0 cannot be read now (") and "retrying for up to 1 s" in first
    assert last.startswith(f"kafkalog consume: {topic}-0 could not be read for 1 s (--retry-for): ")


def test_follow_started_while_the_broker_is_down_waits_for_it(start_broker, request):
    broker = start_broker({"num.partitions": "1"})
    topic = topic_for(request)
    produce_records(broker.bootstrap, topic, [(0, None, b"stored", BASE)])
    broker.kill()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "consume",
            topic,
            "--follow",
            "--max-records",
            "1",
            "--bootstrap-server",
            broker.bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _kill_later(process)
    try:
        first = process.stderr.readline()
        assert first.startswith(f"kafkalog consume: {topic} cannot be read now (") and "could be reached" in first
        broker.start()
        out, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
    assert (process.returncode, err) == (0, f"kafkalog consume: {topic} is read again\n")
    assert out.endswith("\tstored\n")
