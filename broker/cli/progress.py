"""A one-line progress display on stderr, redrawn at most ten times a second:
``[#########...........]  45%  12.3 MB / 27.3 MB  120,000 records`` (just the counts when the
total size is unknown, as for stdin)."""

import sys
import time

WIDTH = 30
REDRAW_SECONDS = 0.1


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


class Progress:
    def __init__(self, total_bytes: int | None, stream=None):
        self.total = total_bytes
        self.stream = stream or sys.stderr
        self._drawn_at = 0.0

    def update(self, done_bytes: int, records: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        line = f"{_megabytes(done_bytes)}  {records:,} records"
        if self.total:
            share = min(done_bytes / self.total, 1.0)
            filled = int(share * WIDTH)
            line = f"[{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%}  {_megabytes(done_bytes)} / " \
                   f"{_megabytes(self.total)}  {records:,} records"
        self.stream.write("\r" + line)
        self.stream.flush()

    def finish(self, done_bytes: int, records: int) -> None:
        self.update(done_bytes, records, force=True)
        self.stream.write("\n")
        self.stream.flush()
