"""Shared fixtures: real broker processes on free ports, always stopped at the end, librdkafka's
three-broker mock cluster (``mock``, an independent Kafka implementation), and one local
SparkSession for the whole run (pytest-spark's ``spark_session``, configured in setup.cfg), whose
Python workers run this interpreter so they can import the project."""

import os
import pathlib
import signal
import sys

import pytest

from broker.embedded import EmbeddedBroker

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

# A shell that starts the suite in the background hands it SIGINT ignored, and children inherit
# that: Ctrl-C tests would then wait for ever. A handled signal is reset to the default at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# What makes a test ``slow`` (``make test-fast`` leaves it out): a fixture that starts a broker process,
# ZooKeeper, a cluster, Spark or other processes; or a place under tests/ whose tests start such
# processes themselves (kafkalog commands, brokers of their own, notebooks, a fresh venv). A test
# elsewhere that starts one is marked by hand (``@pytest.mark.slow``).
SLOW_FIXTURES = {
    "spark",
    "spark_session",
    "broker",
    "start_broker",
    "cluster",
    "jobs_broker",
    "zookeeper_server",
    "mock",
    "mock_cluster",
    "members",
    "children",
}
SLOW_PLACES = (
    "cli/",
    "cluster/",
    "security/",
    "interop/",
    "jobs/",
    "test_notebooks.py",
    "test_packaging.py",
    "test_java_check.py",
    "server/test_broker_command.py",
    "server/test_crash_safety.py",
    "server/test_memory_bound.py",
    "server/test_describe_apis.py",
    "server/test_topic_compression.py",
    "server/test_slow_disk.py",
    "log/test_cleaner_kills.py",
    "log/test_full_disk_broker.py",
)
TESTS = pathlib.Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())) or item.path.relative_to(
            TESTS
        ).as_posix().startswith(SLOW_PLACES):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def spark(spark_session):
    spark_session.sparkContext.setLogLevel("ERROR")
    return spark_session


# Group timeouts short enough for tests: members may use 100 ms sessions, and the first rebalance
# of a group does not wait Kafka's 3 s for more members
FAST_GROUPS = {"group.min.session.timeout.ms": "100", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One broker per test module (tests use their own topic names), 4 partitions by default."""
    process = EmbeddedBroker(tmp_path_factory.mktemp("broker") / "log", {"num.partitions": "4", **FAST_GROUPS}).start()
    yield process
    process.kill()


@pytest.fixture
def start_broker(tmp_path):
    """Start brokers with given settings; each is killed at the end of the test."""
    started = []

    def start(settings: dict | None = None, log_dir=None, **kwargs) -> EmbeddedBroker:
        process = EmbeddedBroker(log_dir or tmp_path / f"log{len(started)}", settings, **kwargs).start()
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture(scope="module")
def mock():
    """(bootstrap list, handle) of a 3-broker mock cluster that lives for the module."""
    from confluent_kafka import Producer

    handle = Producer({"test.mock.num.brokers": 3, "log_level": 3})
    brokers = handle.list_topics(timeout=10).brokers
    assert len(brokers) == 3
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in sorted(brokers.values(), key=lambda b: b.id))
    yield bootstrap, handle
    handle.flush(5)
