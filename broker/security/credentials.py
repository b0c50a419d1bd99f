"""SCRAM credentials kept in the log directory, ``scram-credentials.json``: per user and mechanism
the salt, stored key, server key and iteration count (RFC 5802), never a password.

``kafkalog users`` changes the file (atomically, one writer at a time under a lock file); a running
broker reads it again whenever it changed (its size or modification time), so a user added or
deleted takes effect at the next authentication, without a restart.
"""

import base64
import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from typing import TypedDict

from broker.common.files import write_atomically

from .sasl import SCRAM_ITERATIONS, SCRAM_MECHANISMS, ScramCredential, scram_credential

FILE_NAME = "scram-credentials.json"
_VERSION = 1


class _StoredCredential(TypedDict):
    """One user's credential for one mechanism as the file keeps it (bytes in base64)."""

    salt: str
    stored_key: str
    server_key: str
    iterations: int


class CredentialsError(Exception):
    """The credentials file cannot be read or written; the message names it."""


class ScramCredentials:
    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, FILE_NAME)
        self._seen: tuple[int, int, int] | None = None  # (size, mtime_ns, inode) of the file last read
        self._users: dict[str, dict[str, _StoredCredential]] = {}  # user -> mechanism -> credential

    def lookup(self, username: str, mechanism: str) -> ScramCredential | None:
        """(salt, stored_key, server_key, iterations) of the user for the mechanism, or None."""
        self._refresh()
        entry = self._users.get(username, {}).get(mechanism)
        if entry is None:
            return None
        return (
            base64.b64decode(entry["salt"]),
            base64.b64decode(entry["stored_key"]),
            base64.b64decode(entry["server_key"]),
            entry["iterations"],
        )

    def users(self) -> dict[str, list[str]]:
        """Each user with the mechanisms it has credentials for."""
        self._refresh()
        return {user: sorted(mechanisms) for user, mechanisms in sorted(self._users.items())}

    def add(self, username: str, mechanism: str, password: str, iterations: int = SCRAM_ITERATIONS) -> None:
        if mechanism not in SCRAM_MECHANISMS:
            raise CredentialsError(f"mechanism {mechanism!r} is not one of {', '.join(SCRAM_MECHANISMS)}")
        salt, stored_key, server_key, iterations = scram_credential(mechanism, password, iterations)
        entry: _StoredCredential = {
            "salt": _b64(salt),
            "stored_key": _b64(stored_key),
            "server_key": _b64(server_key),
            "iterations": iterations,
        }
        with self._locked():
            self._users.setdefault(username, {})[mechanism] = entry
            self._write()

    def delete(self, username: str, mechanism: str | None = None) -> bool:
        """Remove the user's credentials for ``mechanism`` (all if None); False if there were none."""
        with self._locked():
            mechanisms = self._users.get(username, {})
            removed = mechanisms.pop(mechanism, None) is not None if mechanism else bool(mechanisms)
            if mechanism is None or not mechanisms:
                self._users.pop(username, None)
            if removed:
                self._write()
        return removed

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(self.path + ".lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self._seen = None
                self._refresh()
                yield
        except OSError as exc:
            raise CredentialsError(f"{self.path}: {exc.strerror or exc}") from None

    def _refresh(self) -> None:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._users = None, {}
            return
        except OSError as exc:
            raise CredentialsError(f"{self.path}: {exc.strerror or exc}") from None
        seen = (status.st_size, status.st_mtime_ns, status.st_ino)
        if seen == self._seen:
            return
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            users = data["users"]
            if data.get("version") != _VERSION or not isinstance(users, dict):
                raise ValueError("unknown layout")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CredentialsError(f"{self.path}: unreadable SCRAM credentials ({exc})") from None
        self._seen, self._users = seen, users

    def _write(self) -> None:
        data = json.dumps({"version": _VERSION, "users": self._users}, indent=1, sort_keys=True)
        write_atomically(self.path, data.encode(), private=True)  # salted keys: an offline guesser's start


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
