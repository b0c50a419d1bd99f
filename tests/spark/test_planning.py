"""Planning on the driver against a real broker, without Spark: the errors that need the broker,
and what ``failOnDataLoss=false`` logs.

* Errors found at planning (a missing subscribed topic, offset or timestamp JSON that does not
  name exactly the partitions read, an end beyond a partition's end, a starting timestamp nothing
  matches, a checkpoint location that does not exist) name their option and show a valid example.
  Where the example is built for the read (the JSON naming exactly the partitions read), using it
  plans the read.
* ``failOnDataLoss=false``: what is skipped (a start below the log start after retention, a start
  past a partition's end, an assigned partition of a topic that does not exist) is logged by the planner as a
  warning naming topic, partition and offsets, and planning goes on with what is left. In a Spark
  read the planner runs in the Python worker Spark starts on the driver, so that is where these
  lines are written (its stderr, in the driver's log); here the planner is called in the test's
  process, where caplog sees them.
"""

import json
import logging
import re
import time

import pytest

from spark_kafka_source.options import OptionError, parse
from spark_kafka_source.planning import DataLossError, OffsetRange, client_for, resolve_ranges
from tests.waiting import wait_for

from .feed import create_topic, log_start, messages, produce

pytestmark = pytest.mark.timeout(120)

TOPIC = "planning-topic"  # 3 partitions: 4, 3 and 3 records
JSON_EXAMPLE = re.compile(r"""; for example \.option\("([^"]+)", '([^']*)'\)$""")


@pytest.fixture(scope="module")
def topic(broker):
    create_topic(broker.bootstrap, TOPIC, 3)
    produce(broker.bootstrap, TOPIC, messages(10, partitions=(0, 1, 2), tag="plan"))
    return TOPIC


def plan(bootstrap: str, **options) -> list[OffsetRange]:
    parsed = parse({"kafka.bootstrap.servers": bootstrap, **options})
    with client_for(parsed) as client:
        return resolve_ranges(client, parsed)


def planning_error(bootstrap: str, **options) -> str:
    with pytest.raises(OptionError) as raised:
        plan(bootstrap, **options)
    return str(raised.value)


FULL = [OffsetRange(TOPIC, 0, 0, 4), OffsetRange(TOPIC, 1, 0, 3), OffsetRange(TOPIC, 2, 0, 3)]
EMPTY = [OffsetRange(TOPIC, 0, 4, 4), OffsetRange(TOPIC, 1, 3, 3), OffsetRange(TOPIC, 2, 3, 3)]


@pytest.mark.parametrize(
    "option, value, problem, planned",
    [
        ("startingOffsets", {"0": 0, "1": 0}, f"must name exactly the partitions being read (missing {TOPIC}-2)", FULL),
        ("endingOffsets", {"0": -1, "1": -1, "2": -1, "5": 9}, f"(not assigned {TOPIC}-5)", FULL),
        ("startingOffsetsByTimestamp", {"0": 0}, f"missing {TOPIC}-1, {TOPIC}-2", FULL),
        # the example's time (2023) is before every record: each partition then ends where it starts
        (
            "endingOffsetsByTimestamp",
            {"1": 0, "3": 0},
            f"missing {TOPIC}-0, {TOPIC}-2; not assigned {TOPIC}-3",
            [r._replace(start=0, end=0) for r in FULL],
        ),
    ],
)
def test_json_not_naming_the_partitions_read_shows_json_that_does(broker, topic, option, value, problem, planned):
    message = planning_error(broker.bootstrap, subscribe=topic, **{option: json.dumps({topic: value})})
    assert message.startswith(f"option {option}: ") and problem in message, message
    shown = JSON_EXAMPLE.search(message)
    assert shown and shown.group(1) == option, message
    example = json.loads(shown.group(2))
    assert example == {topic: {str(p): example[topic][str(p)] for p in range(3)}}, message
    # the example, as given, plans every partition
    assert plan(broker.bootstrap, subscribe=topic, **{option: shown.group(2)}) == planned


def test_end_beyond_a_partition_shows_ends_at_latest(broker, topic):
    message = planning_error(
        broker.bootstrap, assign=json.dumps({topic: [0, 1]}), endingOffsets=json.dumps({topic: {"0": 99, "1": 2}})
    )
    assert message.startswith("option endingOffsets: ") and f"{topic}-0 is asked to end at 99" in message, message
    assert message.endswith(f"""; for example .option("endingOffsets", '{{"{topic}":{{"0":-1,"1":-1}}}}')"""), message


def test_missing_subscribed_topic(broker, topic):
    message = planning_error(broker.bootstrap, subscribe=f"{topic},planning-no-such-topic")
    assert message.startswith(
        f"option subscribe: topic 'planning-no-such-topic' does not exist on {broker.bootstrap}"
    ), message
    assert message.endswith('; for example .option("subscribe", "events,clicks")'), message


def test_starting_timestamp_without_a_match_shows_the_strategy_option(broker, topic):
    future = str(int(time.time() * 1000) + 86_400_000)
    message = planning_error(broker.bootstrap, subscribe=topic, startingTimestamp=future)
    assert message.startswith("option startingTimestamp: no record of ") and future in message, message
    assert message.endswith('; for example .option("startingOffsetsByTimestampStrategy", "latest")'), message
    # with the option shown, every partition starts (and ends) at its end
    assert (
        plan(broker.bootstrap, subscribe=topic, startingTimestamp=future, startingOffsetsByTimestampStrategy="latest")
        == EMPTY
    )


def test_checkpoint_location_that_does_not_exist(broker, topic, tmp_path):
    missing = tmp_path / "no-such-checkpoint"
    message = planning_error(broker.bootstrap, subscribe=topic, startingOffsetsFromCheckpoint=str(missing))
    assert message.startswith(f"option startingOffsetsFromCheckpoint: there is no checkpoint at file://{missing}"), (
        message
    )
    assert '; for example .option("startingOffsetsFromCheckpoint", "hdfs://' in message, message


# -- failOnDataLoss=false: logged and skipped ------------------------------------------------------


def loss_warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "spark_kafka_source.planning" and r.levelno == logging.WARNING
    ]


def test_a_start_past_the_end_is_logged_and_the_partition_skipped(broker, topic, caplog):
    options = dict(subscribe=topic, startingOffsets=json.dumps({topic: {"0": 0, "1": 7, "2": 1}}))
    with pytest.raises(DataLossError, match=f"{topic}-1: the read starts at offset 7 but the partition ends at 3"):
        plan(broker.bootstrap, **options)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spark_kafka_source.planning"):
        ranges = plan(broker.bootstrap, failOnDataLoss="false", **options)
    assert ranges == [OffsetRange(topic, 0, 0, 4), OffsetRange(topic, 2, 1, 3)]
    (warning,) = loss_warnings(caplog)
    assert f"{topic}-1: the read starts at offset 7 but the partition ends at 3" in warning, warning
    assert "failOnDataLoss=false, so the read skips it" in warning, warning


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_an_assigned_partition_past_the_topics_count_is_an_option_error_not_loss(broker, topic, fail_on_data_loss):
    with pytest.raises(OptionError) as refused:
        plan(broker.bootstrap, assign=json.dumps({topic: [2, 9]}), failOnDataLoss=fail_on_data_loss)
    assert str(refused.value).startswith(
        f"option assign: partition {topic}-9 does not exist: topic '{topic}' has 3 partitions (0 to 2); for example "
    ), refused.value


def test_an_assigned_partition_of_a_missing_topic_is_logged(broker, topic, caplog):
    with caplog.at_level(logging.WARNING, logger="spark_kafka_source.planning"):
        ranges = plan(broker.bootstrap, assign=json.dumps({topic: [2], "planning-gone": [0]}), failOnDataLoss="false")
    assert ranges == [OffsetRange(topic, 2, 0, 3)]
    (warning,) = loss_warnings(caplog)
    assert "assigned partition planning-gone-0 does not exist" in warning, warning


def test_a_start_below_the_log_start_is_logged_with_the_offsets_gone(start_broker, caplog):
    """Retention really deletes segments (2000-byte segments, one 5-record batch each)."""
    broker = start_broker(
        {"num.partitions": "1", "log.segment.bytes": "2000", "log.retention.check.interval.ms": "200"}
    )
    topic = "planning-trimmed"
    create_topic(broker.bootstrap, topic, 1, {"retention.bytes": "3000"})
    for batch in range(8):
        produce(broker.bootstrap, topic, messages(5, tag=f"trim{batch}", value_size=200), flush_every=5)
    first = wait_for(
        lambda: log_start(broker.bootstrap, topic, 0), 30, interval=0.2, what="retention moving the log start"
    )
    # retention may move it further; plan against the start as it is then, and check the log says so
    options = dict(subscribe=topic, startingOffsets=json.dumps({topic: {"0": 1}}), failOnDataLoss="false")
    with caplog.at_level(logging.WARNING, logger="spark_kafka_source.planning"):
        (planned,) = plan(broker.bootstrap, **options)
    assert planned.start >= first > 1 and planned.end == 40
    (warning,) = loss_warnings(caplog)
    assert (
        f"{topic}-0: the read starts at offset 1, but the earliest offset still available is {planned.start}: "
        f"offsets [1, {planned.start}) are gone"
    ) in warning, warning
    with pytest.raises(DataLossError, match=re.escape(f"{topic}-0: the read starts at offset 1")):
        plan(broker.bootstrap, **{**options, "failOnDataLoss": "true"})
