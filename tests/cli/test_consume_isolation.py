"""``kafkalog consume --isolation-level``, as a real process, against a partition written by
committing and aborting transactional producers interleaved with plain ones, one transaction still
open (tests/records/transactional_logs.py's example), served by the ``FakeBroker`` answering
read_committed as Kafka does (tests/jobs/test_transactional_topics.py reads the real broker): read_committed prints the
committed records below the last stable offset, read_uncommitted (the default, as Kafka's console
consumer) every data record; transaction markers never; a bad level is a usage error."""

import pytest

from tests.records.transactional_logs import EXAMPLE_EVENTS, build_log, serving

from .support import kafkalog, one_line_error

TOPIC = "txn"
LOG = build_log(EXAMPLE_EVENTS)


@pytest.fixture(scope="module")
def fake():
    with serving(TOPIC, LOG) as server:
        yield server


def _printed(fake, *args) -> list[tuple[int, str]]:
    done = kafkalog("consume", TOPIC, "--bootstrap-server", fake.bootstrap, "--timeout", 10, *args)
    assert done.returncode == 0, done.stderr
    return [(int(offset), value) for _, offset, _, _, value in (line.split("\t") for line in done.stdout.splitlines())]


def _expected(offsets: list[int]) -> list[tuple[int, str]]:
    return [(o, f"v{o}") for o in offsets]


def test_read_committed_prints_the_committed_records_below_the_last_stable_offset(fake):
    assert _printed(fake, "--isolation-level", "read_committed") == _expected(LOG.committed)


def test_read_uncommitted_is_the_default_and_prints_every_data_record(fake):
    assert _printed(fake) == _expected(LOG.all_data)
    assert _printed(fake, "--isolation-level", "read_uncommitted") == _expected(LOG.all_data)


def test_an_unknown_isolation_level_is_a_usage_error(fake):
    done = kafkalog("consume", TOPIC, "--bootstrap-server", fake.bootstrap, "--isolation-level", "serializable")
    message = one_line_error(done, 2, "kafkalog consume: argument --isolation-level: invalid choice: 'serializable'")
    assert "read_committed" in message
