"""The input lines of ``kafkalog produce``: read from a file descriptor as they arrive, without their
line ends (``\\n`` or ``\\r\\n``), telling the caller when the input pauses so that what was read is
sent at once (lines typed or piped slowly are not held back)."""

import os
import select
from collections.abc import Callable, Iterator

LINGER_SECONDS = 0.1  # input quiet for this long: send what was read
READ_SIZE = 64 * 1024


class LineReader:
    """Iterates over the lines of ``fd``, counting the bytes read; ``when_idle()`` is called whenever
    the input has had nothing new for LINGER_SECONDS, and ends the iteration when it returns True.
    ``finished`` tells whether the end of the input was reached."""

    def __init__(self, fd: int, when_idle: Callable[[], bool]) -> None:
        self.fd, self.when_idle = fd, when_idle
        self.bytes_read = 0
        self.finished = False

    def __iter__(self) -> Iterator[bytes]:
        parts = []
        while True:
            if not select.select([self.fd], [], [], LINGER_SECONDS)[0]:
                if self.when_idle():
                    return
                select.select([self.fd], [], [])
            chunk = os.read(self.fd, READ_SIZE)
            if not chunk:
                break
            self.bytes_read += len(chunk)
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                parts.append(chunk[start:end])
                yield _without_cr(b"".join(parts))
                parts, start = [], end + 1
            parts.append(chunk[start:])
        if any(parts):
            yield _without_cr(b"".join(parts))
        self.finished = True


def _without_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line
