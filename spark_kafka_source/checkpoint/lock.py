"""The lock of a checkpoint: one run at a time, and a killed run's lock taken over safely.

``lock.json`` holds the owner (a random id), host, pid, the process start time and a heartbeat
that a thread refreshes every ``HEARTBEAT_SECONDS``. A lock is stale when its process is gone (same
host: no such pid, or the pid now belongs to a younger process) or when its heartbeat is older than
``stale_after`` seconds (any host). A stale lock is replaced by one atomic write, by one
contender at a time (an exclusive takeover marker), after checking it is still the stale one, so
the lock file is never missing while it changes hands.

A holder whose lock was taken over (its heartbeat stopped for longer than ``stale_after``, for
example a suspended process) notices it in ``check()``, which reads the lock file before every
step that changes the checkpoint, and so never commits over the new holder. (A takeover landing
between a heartbeat's read and its write is the one window left; it is milliseconds wide.)
"""

import json
import logging
import os
import socket
import threading
import time
import uuid

from .location import CheckpointError, Location

log = logging.getLogger(__name__)

LOCK_FILE = "lock.json"
HEARTBEAT_SECONDS = 10.0
STALE_AFTER_SECONDS = 120.0
MARKER_ABANDONED_SECONDS = 60.0


class LockHeldError(CheckpointError):
    """Another run holds the checkpoint's lock."""


def _process_start(pid: int) -> str | None:
    """The kernel's start time of a process (clock ticks since boot), to tell a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _process_alive(pid: int, start: str | None) -> bool:
    """Whether the process that wrote a lock still runs (a zombie, killed but not reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
    except (OSError, IndexError):
        pass
    return start is None or _process_start(pid) in (None, start)


class CheckpointLock:
    def __init__(self, location: Location, purpose: str = "load", stale_after: float = STALE_AFTER_SECONDS) -> None:
        self.location = location
        self.stale_after = stale_after
        self.owner = uuid.uuid4().hex
        self.purpose = purpose
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _content(self) -> bytes:
        pid = os.getpid()
        return json.dumps(
            {
                "owner": self.owner,
                "host": socket.gethostname(),
                "pid": pid,
                "process_start": _process_start(pid),
                "purpose": self.purpose,
                "heartbeat": time.time(),
            },
            sort_keys=True,
        ).encode()

    def acquire(self) -> "CheckpointLock":
        for _ in range(5):
            if self.location.create_exclusively(LOCK_FILE, self._content()):
                return self._held()
            holder = self._holder()
            if holder is None:
                continue  # released meanwhile: try again
            if not self._stale(holder):
                raise LockHeldError(
                    f"another run holds the lock of {self.location.uri}: pid {holder.get('pid')} on "
                    f"{holder.get('host')}, heartbeat {time.time() - holder.get('heartbeat', 0):.0f} s ago; a lock "
                    f"whose process is gone is taken over at once, one on another host after {self.stale_after:.0f} "
                    f"s without heartbeat"
                )
            if self._take_over(holder):
                return self._held()
        raise LockHeldError(f"could not take the lock of {self.location.uri}: other runs keep contending for it")

    def _held(self) -> "CheckpointLock":
        self._last_beat = time.monotonic()
        self._thread = threading.Thread(target=self._heartbeat, name="checkpoint-lock", daemon=True)
        self._thread.start()
        return self

    def _holder(self) -> dict | None:
        """The lock's content; None when it vanished. Content that is not a JSON object is judged
        by the file's age, under an owner name made of its modification time."""
        try:
            data = self.location.read_bytes(LOCK_FILE)
        except FileNotFoundError:
            return None
        try:
            holder = json.loads(data)
        except ValueError:
            holder = None
        if isinstance(holder, dict) and "owner" in holder:
            return holder
        modified = self.location.modified(LOCK_FILE) or time.time()
        return {"owner": f"unreadable-{modified:.6f}", "host": "?", "pid": "?", "heartbeat": modified}

    def _stale(self, holder: dict) -> bool:
        if time.time() - float(holder.get("heartbeat", 0)) > self.stale_after:
            return True
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
            return not _process_alive(holder["pid"], holder.get("process_start"))
        return False

    def _take_over(self, holder: dict) -> bool:
        """Replace a stale lock with ours. Contenders for the same stale owner go one at a time
        through an exclusive marker; each checks that the lock is still the stale one, and the
        lock file is replaced in one atomic write, so it is never missing."""
        marker = f"{LOCK_FILE}.takeover-{holder['owner']}"
        if not self.location.create_exclusively(marker, self.owner.encode()):
            self._clear_abandoned(marker)
            return False
        try:
            current = self._holder()
            if current is None or current["owner"] != holder["owner"]:
                return False
            self.location.write_bytes(LOCK_FILE, self._content())
        finally:
            self.location.delete(marker)
        log.warning(
            "took over the stale lock of %s (pid %s on %s, last heartbeat %.0f s ago)",
            self.location.uri,
            holder.get("pid"),
            holder.get("host"),
            time.time() - float(holder.get("heartbeat", 0)),
        )
        return True

    def _clear_abandoned(self, marker: str) -> None:
        """A takeover marker lives for milliseconds; one much older was left by a killed contender."""
        modified = self.location.modified(marker)
        if modified and time.time() - modified > MARKER_ABANDONED_SECONDS:
            self.location.delete(marker)

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            if time.monotonic() - self._last_beat > self.stale_after or not self._still_ours():
                self._lose()
                return
            self.location.write_bytes(LOCK_FILE, self._content())
            self._last_beat = time.monotonic()

    def _still_ours(self) -> bool:
        holder = self._holder()
        return holder is not None and holder["owner"] == self.owner

    def _lose(self) -> None:
        if not self.lost:
            log.error("the lock of %s was taken over by another run", self.location.uri)
        self.lost = True

    def check(self) -> None:
        """Fail if the lock was lost; called before every step that changes the checkpoint."""
        if not self.lost and not self._still_ours():
            self._lose()
        if self.lost:
            raise LockHeldError(
                f"this run lost the lock of {self.location.uri} to another run (its heartbeat "
                f"stopped for more than {self.stale_after:.0f} s); it stops without committing"
            )

    def release(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(HEARTBEAT_SECONDS)
        if self._still_ours():
            self.location.delete(LOCK_FILE)

    def __enter__(self) -> "CheckpointLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
