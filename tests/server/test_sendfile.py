"""Fetch record bytes leave the broker with sendfile, straight from the segment file.

The broker runs in this process (on its own event loop thread, on 127.0.0.1) so that a spy can
watch ``os.sendfile``, the system call under ``loop.sendfile``; the spy only records each call's
source file, offset and count and then makes the call. A raw wire client fetches, and the
record bytes it receives must be the segment's bytes. Slices under ``SENDFILE_MIN_BYTES`` are
copied instead (see ``broker/server/connection.py`` for the measured reason).
"""

import os

import pytest

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record
from broker.server.connection import SENDFILE_MIN_BYTES

from .in_process import broker_in_this_process
from .wire import connect, create_topics_body, fetch_body, produce_body

TOPIC = "zero-copy"
VALUE_BYTES = 64 * 1024
TIMEOUT = 30


@pytest.fixture
def sendfile_calls(monkeypatch):
    """``(source file path, offset, count)`` of every os.sendfile call, which still goes through."""
    calls = []
    real_sendfile = os.sendfile

    def spy(out_fd, in_fd, offset, count, *args, **kwargs):
        calls.append((os.readlink(f"/proc/self/fd/{in_fd}"), offset, count))
        return real_sendfile(out_fd, in_fd, offset, count, *args, **kwargs)

    monkeypatch.setattr(os, "sendfile", spy)
    return calls


def produce_values(client, count: int, start: int) -> None:
    values = [os.urandom(VALUE_BYTES) for _ in range(count)]
    records = batch.build([Record(i, 1_700_000_000_000 + i, None, v) for i, v in enumerate(values)])
    result = client.call(ApiKey.PRODUCE, 3, produce_body(TOPIC, 0, records))
    partition = result["responses"][0]["partitions"][0]
    assert (partition["error_code"], partition["base_offset"]) == (ErrorCode.NONE, start)


def fetch_records(client, offset: int) -> bytes:
    result = client.call(ApiKey.FETCH, 11, fetch_body([(TOPIC, 0, offset)], partition_max_bytes=4 * 1024 * 1024))
    partition = result["responses"][0]["partitions"][0]
    assert partition["error_code"] == ErrorCode.NONE
    return bytes(partition["records"])


@pytest.mark.timeout(120)
def test_a_large_fetch_goes_out_with_sendfile_and_a_small_one_is_copied(tmp_path, sendfile_calls):
    segment = tmp_path / "log" / f"{TOPIC}-0" / "00000000000000000000.log"
    large = SENDFILE_MIN_BYTES // VALUE_BYTES + 2  # a few hundred KiB in one batch
    with broker_in_this_process(tmp_path / "log") as port, connect("127.0.0.1", port, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC))["topics"][0]["error_code"] == 0
        produce_values(client, large, start=0)
        large_records = fetch_records(client, 0)
        assert len(large_records) == segment.stat().st_size > SENDFILE_MIN_BYTES
        assert large_records == segment.read_bytes()
        sent = [(offset, count) for path, offset, count in sendfile_calls if path == str(segment)]
        assert sent and sent[0][0] == 0
        assert all(offset + count == following for (offset, count), (following, _) in zip(sent, sent[1:], strict=False))
        assert sum(count for _, count in sent) == len(large_records)  # every record byte, by sendfile

        produce_values(client, 1, start=large)
        calls_before = len(sendfile_calls)
        small_records = fetch_records(client, large)
        assert small_records == segment.read_bytes()[len(large_records) :]
        assert 0 < len(small_records) < SENDFILE_MIN_BYTES and len(sendfile_calls) == calls_before
