"""The lock of a checkpoint: one run at a time, and a killed run's lock taken over safely.

``lock.json`` holds the owner (a random id), host, pid, the process start time and a heartbeat
that a thread refreshes every ``HEARTBEAT_SECONDS``. A lock is stale when its process is gone (same
host: no such pid, or the pid now belongs to a younger process) or when its heartbeat is older than
``stale_after`` seconds (any host). A stale lock is renamed aside, an atomic step that only one
contender wins, and then created again exclusively.

A holder whose lock was taken over (its heartbeat stopped for longer than ``stale_after``, for
example a suspended process) notices it at the next heartbeat; ``check()`` then fails, so it
never commits over the new holder.
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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return start is None or _process_start(pid) in (None, start)


class CheckpointLock:
    def __init__(self, location: Location, purpose: str = "load", stale_after: float = STALE_AFTER_SECONDS):
        self.location = location
        self.stale_after = stale_after
        self.owner = uuid.uuid4().hex
        self.purpose = purpose
        self.lost = False
        self._stop = threading.Event()
        self._thread = None

    def _content(self) -> bytes:
        pid = os.getpid()
        return json.dumps({"owner": self.owner, "host": socket.gethostname(), "pid": pid,
                           "process_start": _process_start(pid), "purpose": self.purpose,
                           "heartbeat": time.time()}, sort_keys=True).encode()

    def acquire(self) -> "CheckpointLock":
        for _ in range(3):
            if self.location.create_exclusively(LOCK_FILE, self._content()):
                self._thread = threading.Thread(target=self._heartbeat, name="checkpoint-lock", daemon=True)
                self._thread.start()
                return self
            holder = self._holder()
            if holder is not None and not self._stale(holder):
                raise LockHeldError(
                    f"another run holds the lock of {self.location.uri}: pid {holder.get('pid')} on "
                    f"{holder.get('host')}, heartbeat {time.time() - holder.get('heartbeat', 0):.0f} s ago; a lock "
                    f"whose process is gone is taken over at once, one on another host after {self.stale_after:.0f} "
                    f"s without heartbeat")
            self._take_over(holder)
        raise LockHeldError(f"could not take the lock of {self.location.uri}: other runs keep contending for it")

    def _holder(self) -> dict | None:
        """The lock's content; None when it vanished or is unreadable (then judged by its age)."""
        try:
            return json.loads(self.location.read_bytes(LOCK_FILE))
        except FileNotFoundError:
            return None
        except ValueError:
            info = self.location.fs.get_file_info(f"{self.location.path}/{LOCK_FILE}")
            age = time.time() - info.mtime.timestamp() if info.mtime else 0
            return {"host": "?", "pid": "?", "heartbeat": time.time() - age, "unreadable": True}

    def _stale(self, holder: dict) -> bool:
        if time.time() - float(holder.get("heartbeat", 0)) > self.stale_after:
            return True
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
            return not _process_alive(holder["pid"], holder.get("process_start"))
        return False

    def _take_over(self, holder: dict | None) -> None:
        if holder is None:
            return  # released meanwhile: just try again
        aside = f"{LOCK_FILE}.stale-{self.owner}"
        try:
            self.location.move(LOCK_FILE, aside)
        except (FileNotFoundError, OSError):
            return  # another contender took it over first
        moved = self.location.read_bytes(aside)
        if holder.get("owner") is not None and json.loads(moved).get("owner") != holder["owner"]:
            # a contender took the stale lock over between our read and our rename: give its lock back
            self.location.create_exclusively(LOCK_FILE, moved)
            self.location.delete(aside)
            return
        log.warning("took over the stale lock of %s (pid %s on %s, last heartbeat %.0f s ago)", self.location.uri,
                    holder.get("pid"), holder.get("host"), time.time() - float(holder.get("heartbeat", 0)))
        self.location.delete(aside)

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                holder = json.loads(self.location.read_bytes(LOCK_FILE))
            except (OSError, ValueError):
                holder = None
            if not holder or holder.get("owner") != self.owner:
                self.lost = True
                log.error("the lock of %s was taken over by another run", self.location.uri)
                return
            self.location.write_bytes(LOCK_FILE, self._content())

    def check(self) -> None:
        """Fail if the lock was lost; called before every step that changes the checkpoint."""
        if self.lost:
            raise LockHeldError(f"this run lost the lock of {self.location.uri} to another run (its heartbeat "
                                f"stopped for more than {self.stale_after:.0f} s); it stops without committing")

    def release(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(HEARTBEAT_SECONDS)
        try:
            holder = json.loads(self.location.read_bytes(LOCK_FILE))
        except (OSError, ValueError):
            return
        if holder.get("owner") == self.owner:
            self.location.delete(LOCK_FILE)

    def __enter__(self) -> "CheckpointLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
