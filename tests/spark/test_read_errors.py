"""Invalid options and unreachable brokers, as a Spark user sees them.

The option checks themselves are unit-tested without Spark (test_options.py); here a handful go
through Spark to show the user gets our explanation: an error raised while Spark creates the
source or plans the read comes back as ``AnalysisException`` [PYTHON_DATA_SOURCE_ERROR] whose
message is one line ending with the ``OptionError`` text (the option's name as documented, what is
wrong, an example), with no traceback. Checks that need
the broker (an end beyond a partition's end, JSON naming a partition that is not read, a missing
topic) are made at planning. A broker nobody listens on, or one that never answers, gives an error
naming the address within the request timeout, not a hang; so does a broker that dies between
planning and reading (then as a task failure, ``PythonException``, also without a traceback); one
restarted in between is simply read again.
"""

import json
import socket

import pytest
from pyspark.errors import AnalysisException, PythonException

from broker.embedded import free_port

from .feed import assert_rows, create_topic, load, messages, produce, rows

pytestmark = pytest.mark.timeout(90)

TOPIC = "errors-topic"  # 2 partitions, 3 records each


@pytest.fixture(scope="module")
def topic(broker):
    create_topic(broker.bootstrap, TOPIC, 2)
    produce(broker.bootstrap, TOPIC, messages(6, partitions=(0, 1), tag="err"))
    return TOPIC


def planning_error(spark, bootstrap: str, options: dict) -> str:
    """The message of the AnalysisException that loading and collecting with ``options`` raises."""
    with pytest.raises(AnalysisException) as raised:
        load(spark, bootstrap, options).collect()
    message = str(raised.value)
    assert "PYTHON_DATA_SOURCE_ERROR" in message, message[:500]
    lines = [line for line in message.splitlines() if not line.strip().startswith("SQLSTATE")]
    assert len(lines) == 1 and "Traceback" not in message, message[:800]
    return message


INVALID = [
    pytest.param(
        {"subscribe": TOPIC, "startingOffset": "earliest"},
        ["option startingOffset: unknown option of the kafkalog source", "did you mean startingOffsets?"],
        id="typo",
    ),
    pytest.param(
        {"subscribe": TOPIC, "startingOffsets": "latest"},
        ["option startingOffsets: a batch query cannot start at latest"],
        id="start-latest",
    ),
    pytest.param(
        {"subscribe": TOPIC, "kafka.auto.offset.reset": "earliest"},
        ["option kafka.auto.offset.reset", "set the source option 'startingOffsets'"],
        id="auto-offset-reset",
    ),
    pytest.param(
        {"subscribe": TOPIC, "kafka.isolation.level": "serializable"},
        ["option kafka.isolation.level: 'serializable' is not one of read_uncommitted, read_committed"],
        id="isolation-level",
    ),
    pytest.param(
        {"subscribe": TOPIC, "minPartitions": "0"},
        ["option minPartitions: 0 must be at least 1", 'for example .option("minPartitions", "8")'],
        id="min-partitions",
    ),
    pytest.param(
        {"subscribe": TOPIC, "assign": json.dumps({TOPIC: [0]})},
        ["exactly one of the options assign, subscribe, subscribePattern must be given"],
        id="two-strategies",
    ),
    pytest.param(
        {"subscribe": TOPIC, "endingOffsets": json.dumps({TOPIC: {"0": 99, "1": -1}})},
        ["option endingOffsets", f"{TOPIC}-0 is asked to end at 99", "holds offsets up to 3"],
        id="end-beyond-partition",
    ),
    pytest.param(
        {"subscribe": TOPIC, "startingOffsets": json.dumps({TOPIC: {"0": 0, "1": 0, "5": 0}})},
        ["option startingOffsets: must name exactly the partitions being read", f"not assigned {TOPIC}-5"],
        id="json-extra-partition",
    ),
    pytest.param(
        {"assign": json.dumps({TOPIC: [0, 1]}), "endingOffsets": json.dumps({TOPIC: {"1": 2}})},
        ["option endingOffsets: must name exactly the partitions being read", f"missing {TOPIC}-0"],
        id="json-missing-partition",
    ),
    pytest.param(
        {"subscribe": f"{TOPIC},errors-no-such-topic"},
        ["option subscribe: topic 'errors-no-such-topic' does not exist"],
        id="missing-topic",
    ),
    pytest.param(
        {"subscribe": TOPIC, "startingTimestamp": "yesterday"},
        ["option startingTimestamp: 'yesterday' is not an integer"],
        id="timestamp-not-a-number",
    ),
]


@pytest.mark.parametrize("options, expected", INVALID)
def test_invalid_options_surface_with_the_option_name_and_explanation(spark, broker, topic, options, expected):
    message = planning_error(spark, broker.bootstrap, options)
    for text in expected:
        assert text in message, f"{text!r} not in {message[:800]}"


def test_missing_topic_is_not_created_by_the_read(spark, broker, topic):
    planning_error(spark, broker.bootstrap, {"subscribe": "errors-never-created"})
    from .feed import client

    with client(broker.bootstrap) as c:
        assert "errors-never-created" not in c.topics()


def test_a_user_schema_is_refused_with_an_analysis_exception(spark, broker, topic):
    with pytest.raises(AnalysisException, match="fixed schema"):
        (
            spark.read.format("kafkalog")
            .schema("value string")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", TOPIC)
            .load()
            .collect()
        )


def test_unreachable_broker_names_the_address(spark):
    address = f"127.0.0.1:{free_port()}"
    message = planning_error(
        spark, address, {"subscribe": TOPIC, "kafka.request.timeout.ms": "2000", "fetchOffset.numRetries": "0"}
    )
    assert f"no broker of {address} could be reached" in message and f"cannot connect to {address}" in message, message[
        :800
    ]


def test_broker_that_never_answers_times_out_naming_the_address(spark):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections (backlog) but never reads or answers
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        message = planning_error(
            spark,
            address,
            {
                "subscribe": TOPIC,
                "kafka.request.timeout.ms": "1000",
                "fetchOffset.numRetries": "1",
                "fetchOffset.retryIntervalMs": "10",
            },
        )
    assert address in message and "timed out" in message, message[:800]


def test_broker_gone_between_planning_and_reading_fails_the_task_naming_it(spark, start_broker):
    gone = start_broker({"num.partitions": "1"})
    produce(gone.bootstrap, "errors-gone", messages(4, partitions=(0,), tag="gone"))
    df = load(
        spark,
        gone.bootstrap,
        {
            "subscribe": "errors-gone",
            "kafka.request.timeout.ms": "2000",
            "fetchOffset.numRetries": "1",
            "fetchOffset.retryIntervalMs": "10",
        },
    )
    assert df.rdd.getNumPartitions() == 1
    gone.kill()
    with pytest.raises(PythonException) as raised:
        df.collect()
    assert gone.bootstrap in str(raised.value) and "Traceback" not in str(raised.value), str(raised.value)[:800]


def test_broker_restarted_between_planning_and_reading_is_read_again(spark, start_broker):
    restarted = start_broker({"num.partitions": "2"})
    produced = produce(restarted.bootstrap, "errors-restarted", messages(8, partitions=(0, 1), tag="again"))
    df = load(
        spark,
        restarted.bootstrap,
        {"subscribe": "errors-restarted", "includeHeaders": "true", "fetchOffset.retryIntervalMs": "100"},
    )
    assert df.rdd.getNumPartitions() == 2
    restarted.stop()
    restarted.start()  # same port, same log directory
    assert_rows(rows(df), produced)
