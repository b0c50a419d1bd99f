"""What ``kafkalog produce`` says about the lines it did not store: each refused line by number
(as it is found with ``--on-error skip``; with ``--on-error stop`` the first one opens the final
line), and one final line that counts the lines stored and names, as ranges, every line that was
not, and where reading stopped:

    line 20001 not stored: <reason>; stopped (--on-error stop): 20,000 lines stored; not stored:
    line 20001; anything after line 20001 was not read
"""

import sys

from broker.client import Batcher

from .progress import Progress

PROG = "kafkalog produce"


class LineReport:
    def __init__(self, on_error: str, acks: int, progress: Progress | None = None) -> None:
        self.on_error, self.progress = on_error, progress
        self.done = "stored" if acks else "sent"  # with acks=0 nothing confirms a line
        self.held: list[tuple[int, str]] = []  # refusals for the final line (--on-error stop)

    def refused(self, number: int, reason: str) -> None:
        """Line ``number`` cannot be stored, for ``reason``."""
        if self.on_error == "skip":
            self._print(number, reason)
        else:
            self.held.append((number, reason))

    def _print(self, number: int, reason: str) -> None:
        if self.progress:
            self.progress.end_line()
        print(f"{PROG}: line {number} not {self.done}: {reason}", file=sys.stderr)

    def final_line(self, batcher: Batcher, last_read: int, finished: bool, interrupted: bool = False) -> str | None:
        """The final line of a run that did not store every line it read (None when it did); the
        refusals held for it, but the first, are printed before."""
        if not batcher.not_stored and not batcher.in_flight:
            return None
        if interrupted:
            how = "interrupted"
        elif batcher.failure:
            how = str(batcher.failure)
        elif self.held:
            first, reason = self.held.pop(0)
            how = f"line {first} not {self.done}: {reason}; stopped (--on-error stop)"
        else:
            how = "skipped lines (--on-error skip)"
        for number, reason in self.held:
            self._print(number, reason)
        not_stored = sorted(batcher.not_stored)
        text = f"{how}: {_lines(batcher.stored)} {self.done}"
        if not_stored:
            text += f"; not {self.done}: line{'s' if len(not_stored) > 1 else ''} {line_ranges(not_stored)}"
        if batcher.in_flight:
            text += f"; unconfirmed (interrupted while being sent): lines {line_ranges(batcher.in_flight)}"
        return text if finished else f"{text}; anything after line {last_read} was not read"


def _lines(count: int) -> str:
    return f"{count:,} line{'' if count == 1 else 's'}"


def line_ranges(numbers: list[int]) -> str:
    """``[3, 7, 8, 9, 12]`` -> ``"3, 7-9, 12"``."""
    ranges: list[list[int]] = []
    for number in numbers:
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
