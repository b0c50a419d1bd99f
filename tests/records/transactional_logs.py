"""Random partition logs written by transactional producers (committing and aborting), plain and
idempotent producers, with the transaction markers a coordinator writes; each log knows its
committed records independently of any filter, and the aborted transactions a broker would list
for a fetch of any range. Used by the read_committed filter's tests and the Spark decoder's."""

import contextlib
import itertools
import random
from collections.abc import Iterator
from typing import NamedTuple

from hypothesis import strategies as st

from broker.records import batch
from broker.records.batch import ControlType, Record
from broker.records.committed import AbortedTransaction
from tests.client.fake_servers import FakeBroker

TRANSACTIONAL_PRODUCERS = (7, 8, 9)
PLAIN_PRODUCERS = (batch.NO_PRODUCER_ID, 20)  # without a producer id, and an idempotent one


class Aborted(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the offset of its ABORT marker


class TransactionalLog(NamedTuple):
    batches: list[tuple[bytes, int, int]]  # (batch bytes, base offset, last offset), in offset order
    all_data: list[int]  # offsets of every data record (what read_uncommitted returns)
    committed: list[int]  # offsets below open_from of plain producers' and committed transactions' records
    aborted: list[Aborted]
    open_from: int  # the last stable offset: the first offset of the oldest open transaction, or the end

    def aborted_between(self, first: int, end: int) -> list[AbortedTransaction]:
        """What a broker lists for a fetch returning offsets ``[first, end)``: the aborted
        transactions whose marker is at or after ``first`` and whose first offset is below ``end``."""
        return [
            AbortedTransaction(a.producer_id, a.first_offset)
            for a in self.aborted
            if a.last_offset >= first and a.first_offset < end
        ]


def _data_batch(offset: int, count: int, producer_id: int, transactional: bool, rng: random.Random) -> bytes:
    records = [Record(offset + i, 1_700_000_000_000 + offset + i, None, b"v%d" % (offset + i)) for i in range(count)]
    return batch.build(
        records,
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0 if producer_id != batch.NO_PRODUCER_ID else -1,
        base_sequence=0 if producer_id != batch.NO_PRODUCER_ID else -1,
        is_transactional=transactional,
        compression=rng.choice([0, 0, 1]),
    )


def _marker(offset: int, producer_id: int, control_type: ControlType) -> bytes:
    key, value = batch.control_record(control_type, coordinator_epoch=3)
    return batch.build(
        [Record(offset, 1_700_000_000_000 + offset, key, value)],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )


_events = st.one_of(
    st.tuples(st.just("transactional"), st.sampled_from(TRANSACTIONAL_PRODUCERS), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.sampled_from(PLAIN_PRODUCERS), st.integers(1, 3)),
    st.tuples(st.just("end"), st.sampled_from(TRANSACTIONAL_PRODUCERS), st.booleans()),
)


Event = tuple[str, int, int]  # ("transactional" | "plain", producer id, records) or ("end", producer id, commit?)

# a log with each case: an abort and a commit interleaved, a producer committing after it aborted,
# plain records between, a marker without data, and (last) one transaction still open
EXAMPLE_EVENTS: list[Event] = [
    ("plain", batch.NO_PRODUCER_ID, 2),
    ("transactional", 7, 2),
    ("transactional", 8, 1),
    ("plain", 20, 1),
    ("transactional", 7, 3),
    ("end", 7, False),
    ("end", 8, True),
    ("end", 9, False),
    ("transactional", 7, 1),
    ("plain", batch.NO_PRODUCER_ID, 1),
    ("end", 7, True),
    ("transactional", 8, 2),
    ("end", 8, False),
    ("transactional", 9, 2),
    ("plain", batch.NO_PRODUCER_ID, 1),
]


def build_log(events: list[Event], offset: int = 0, seed: int = 0) -> TransactionalLog:
    """The log the events write from ``offset`` (a random choice of codecs by ``seed``). A
    transaction not ended by the events stays open: its records are in neither ``committed`` nor
    ``aborted`` (they lie at or above the last stable offset, ``open_from``)."""
    rng = random.Random(seed)
    batches, all_data, committed, aborted = [], [], [], []
    open_transactions: dict[int, tuple[int, list[int]]] = {}  # producer -> (first offset, data offsets)
    for kind, producer_id, detail in events:
        if kind == "end":
            control_type = ControlType.COMMIT if detail else ControlType.ABORT
            batches.append((_marker(offset, producer_id, control_type), offset, offset))
            if producer_id in open_transactions:
                first, offsets = open_transactions.pop(producer_id)
                if control_type == ControlType.COMMIT:
                    committed += offsets
                else:
                    aborted.append(Aborted(producer_id, first, offset))
            offset += 1
            continue
        transactional = kind == "transactional"
        batches.append((_data_batch(offset, detail, producer_id, transactional, rng), offset, offset + detail - 1))
        offsets = list(range(offset, offset + detail))
        all_data += offsets
        if transactional:
            open_transactions.setdefault(producer_id, (offset, []))[1].extend(offsets)
        else:
            committed += offsets
        offset += detail
    open_from = min((first for first, _ in open_transactions.values()), default=offset)
    return TransactionalLog(batches, all_data, sorted(o for o in committed if o < open_from), aborted, open_from)


@st.composite
def transactional_logs(draw, max_events: int = 40) -> TransactionalLog:
    """A random log in which every transaction has ended: the whole log is below its last stable
    offset. An end without data (a marker only) is possible, as when a producer aborts a
    transaction that wrote nothing to this partition."""
    events = draw(st.lists(_events, max_size=max_events))
    events += [("end", producer_id, draw(st.booleans())) for producer_id in TRANSACTIONAL_PRODUCERS]
    return build_log(events, draw(st.sampled_from([0, 1000, 2**40])), draw(st.integers(0, 2**32)))


def fetch_splits(draw_points: list[int], count: int) -> list[tuple[int, int]]:
    """Consecutive ``[first, end)`` batch index ranges covering ``count`` batches, cut at the points."""
    cuts = sorted({p % (count + 1) for p in draw_points} | {0, count})
    return list(itertools.pairwise(cuts))


@contextlib.contextmanager
def serving(topic: str, log: TransactionalLog) -> Iterator[FakeBroker]:
    """A ``FakeBroker`` serving ``log`` as ``topic``-0, answering read_committed fetches as Kafka does
    (records below the last stable offset, with the aborted transactions)."""
    with FakeBroker(
        topic,
        [b for b, _, _ in log.batches],
        truncate=False,
        aborted=tuple((a.producer_id, a.first_offset, a.last_offset) for a in log.aborted),
        last_stable_offset=log.open_from,
    ) as server:
        yield server
