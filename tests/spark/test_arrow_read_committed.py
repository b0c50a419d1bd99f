"""The Spark source's decoder under read_committed and read_uncommitted, without Spark: on random
logs of committing and aborting transactional producers interleaved with plain ones, read in
random fetches over random ``[start, end)`` windows, the C and the pure-Python paths give
identical RecordBatches, and the offsets kept are exactly the committed ones in the window (every
data record under read_uncommitted); control batches are never decoded, and a window holding
only markers and aborted records still advances ``next_offset`` past them."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.records.committed import ReadFilter
from spark_kafka_source import arrow_records
from spark_kafka_source.arrow_records import decode
from tests.records.transactional_logs import EXAMPLE_EVENTS, TransactionalLog, build_log, transactional_logs

needs_native = pytest.mark.skipif(not arrow_records.native_available(), reason="the _fastdecode extension is not built")

TOPIC, PARTITION = "txn", 3
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(log: TransactionalLog, start: int, end: int, per_fetch: int, read_committed: bool, native: bool):
    """Read ``[start, end)`` as a task does: fetches of ``per_fetch`` batches from the batch holding
    the position, each with the aborted transactions a broker lists, one filter throughout."""
    read_filter = ReadFilter(read_committed)
    position, results = start, []
    while position < end:
        first = next(i for i, (_, _, last) in enumerate(log.batches) if last >= position)
        fetched = log.batches[first : first + per_fetch]
        read_filter.add_aborted(log.aborted_between(fetched[0][1], fetched[-1][2] + 1))
        decoded = decode(
            b"".join(b for b, _, _ in fetched), TOPIC, PARTITION, position, end, True, native, read_filter=read_filter
        )
        assert decoded.next_offset > position
        position = decoded.next_offset
        if decoded.batch is not None:
            results.append(decoded.batch)
    return results


def _offsets(batches) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


@needs_native
@PROPERTY
@given(transactional_logs(), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 4), st.booleans())
def test_c_and_python_keep_exactly_the_visible_records_of_a_window(log, a, b, per_fetch, read_committed):
    first, end_of_log = log.batches[0][1], log.batches[-1][2] + 1
    start, end = sorted(first + x % (end_of_log - first + 1) for x in (a, b))
    native = _read(log, start, end, per_fetch, read_committed, native=True)
    python = _read(log, start, end, per_fetch, read_committed, native=False)
    assert len(native) == len(python)
    assert all(n.equals(p) for n, p in zip(native, python, strict=True))
    visible = log.committed if read_committed else log.all_data
    assert _offsets(native) == [o for o in visible if start <= o < end]


@pytest.mark.parametrize("native", [pytest.param(True, marks=needs_native), False])
@pytest.mark.parametrize(("start", "end"), [(6, 12), (15, 18)])
def test_a_window_of_markers_and_aborted_records_only_is_read_through_empty(native, start, end):
    log = build_log(EXAMPLE_EVENTS)  # [6, 12): 3 aborted records, 3 markers; [15, 18): 2 and 1
    assert not [o for o in log.committed if start <= o < end]
    assert len(_read(log, start, end, 1, read_committed=False, native=native)[0]) > 0
    assert _read(log, start, end, 1, read_committed=True, native=native) == []
    assert _read(log, start, end, 10, read_committed=True, native=native) == []
