"""A one-line progress display on stderr, redrawn at most ten times a second:
``[#########...........]  45%  12.3 MB / 27.3 MB  120,000 lines`` (just the counts when the
total size is unknown, as for stdin)."""

import sys
import time
from typing import TextIO

WIDTH = 30
REDRAW_SECONDS = 0.1


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


class Progress:
    def __init__(self, total_bytes: int | None, stream: TextIO | None = None) -> None:
        self.total = total_bytes
        self.stream = stream or sys.stderr
        self._drawn_at = 0.0
        self._on_line = False  # the cursor is at the end of a drawn progress line

    def update(self, done_bytes: int, lines: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        line = f"{_megabytes(done_bytes)}  {lines:,} line{'' if lines == 1 else 's'}"
        if self.total:
            share = min(done_bytes / self.total, 1.0)
            filled = int(share * WIDTH)
            line = (
                f"[{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%}  {_megabytes(done_bytes)} / "
                f"{_megabytes(self.total)}  {lines:,} line{'' if lines == 1 else 's'}"
            )
        self.stream.write("\r" + line)
        self.stream.flush()
        self._on_line = True

    def end_line(self) -> None:
        """Move past the drawn progress line, so that another message starts a line of its own."""
        if self._on_line:
            self.stream.write("\n")
            self._on_line = False

    def finish(self, done_bytes: int, lines: int) -> None:
        self.update(done_bytes, lines, force=True)
        self.end_line()
        self.stream.flush()
