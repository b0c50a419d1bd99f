"""``checkpoint.lock``: one holder at a time; the lock of a killed process (real, SIGKILLed) or of a
silent one (heartbeat older than ``stale_after``) is taken over, a live one is not; the heartbeat
notices a takeover; an unreadable lock file is judged by its age. Every test runs with both
implementations of the checkpoint's Location (``open_dir``); the other processes use pyarrow."""

import json
import os
import socket
import time

import pytest

from spark_kafka_source.checkpoint import CheckpointLock, Location, LockHeldError
from spark_kafka_source.checkpoint import lock as lock_module
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def location(tmp_path, open_dir) -> Location:
    return open_dir(str(tmp_path / "ck"))


@pytest.fixture
def locks():
    """Locks made in a test; whatever is still held is released at the end."""
    made = []

    def make(location: Location, **kwargs) -> CheckpointLock:
        made.append(CheckpointLock(location, **kwargs))
        return made[-1]

    yield make
    for lock in made:
        lock.release()


def holder(location: Location) -> dict:
    return json.loads(location.read_bytes("lock.json"))


def plant(location: Location, **fields) -> dict:
    """Write a lock file as another run would have left it."""
    content = {
        "owner": "someone-else",
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "process_start": None,
        "purpose": "load",
        "heartbeat": time.time(),
        **fields,
    }
    location.write_bytes("lock.json", json.dumps(content).encode())
    return content


def test_acquire_writes_the_holder_and_release_removes_it(location, locks):
    lock = locks(location, purpose="rewind").acquire()
    content = holder(location)
    assert content["owner"] == lock.owner and content["pid"] == os.getpid()
    assert content["host"] == socket.gethostname() and content["purpose"] == "rewind"
    assert content["process_start"] == lock_module._process_start(os.getpid()) is not None
    assert abs(content["heartbeat"] - time.time()) < 30
    lock.check()
    lock.release()
    assert not location.exists("lock.json")
    assert [n for n in location.names() if n.startswith("lock")] == []
    lock.release()  # twice: nothing happens


def test_the_lock_is_a_context_manager(location):
    with CheckpointLock(location) as lock:
        assert holder(location)["owner"] == lock.owner
    assert not location.exists("lock.json")


def test_a_second_lock_fails_while_the_first_is_held(location, locks, open_dir):
    first = locks(location).acquire()
    second = locks(open_dir(location.uri))
    with pytest.raises(LockHeldError) as raised:
        second.acquire()
    message = str(raised.value)
    assert f"another run holds the lock of {location.uri}: pid {os.getpid()} on {socket.gethostname()}" in message
    assert holder(location)["owner"] == first.owner
    first.release()
    second.acquire()
    assert holder(location)["owner"] == second.owner


def test_release_leaves_the_lock_of_another_owner(location, locks):
    first = locks(location).acquire()
    second = locks(location, stale_after=0).acquire()  # stale_after=0: any heartbeat counts as stale
    first.release()
    assert holder(location)["owner"] == second.owner


HOLDER = """
    import sys, time
    from spark_kafka_source.checkpoint import CheckpointLock, open_location
    lock = CheckpointLock(open_location(sys.argv[1])).acquire()
    open(sys.argv[2], "w").close()
    time.sleep(60)
"""


def test_a_live_lock_of_another_process_is_kept_and_a_killed_ones_is_taken_over_at_once(
    tmp_path, location, children, locks
):
    ready = tmp_path / "ready"
    process = children.start(HOLDER, location.uri, ready)
    wait_for(lambda: ready.exists() or process.poll() is not None, timeout=30, what="the child to take the lock")
    assert process.poll() is None, children.output(process)
    assert holder(location)["pid"] == process.pid
    contender = locks(location)  # default stale_after (120 s): only the dead pid allows a takeover
    with pytest.raises(LockHeldError, match=f"pid {process.pid} on"):
        contender.acquire()
    children.kill(process)  # SIGKILL: no release, lock.json stays
    assert holder(location)["pid"] == process.pid
    contender.acquire()
    assert holder(location)["owner"] == contender.owner
    assert [n for n in location.names() if n.startswith("lock")] == ["lock.json"]  # the stale one is gone


def test_a_lock_whose_heartbeat_is_older_than_stale_after_is_taken_over(location, locks):
    plant(location, host="another-host", pid=1, heartbeat=time.time() - 300)
    lock = locks(location, stale_after=120).acquire()
    assert holder(location)["owner"] == lock.owner


def test_a_fresh_lock_of_another_host_is_not_taken_over(location, locks):
    plant(location, host="another-host", pid=2**22 + 12345, heartbeat=time.time() - 60)  # no such pid here
    with pytest.raises(LockHeldError, match="pid 4206649 on another-host, heartbeat 60 s ago"):
        locks(location, stale_after=120).acquire()
    assert holder(location)["owner"] == "someone-else"


def test_even_a_live_process_loses_its_lock_when_its_heartbeat_is_too_old(location, locks):
    plant(location, heartbeat=time.time() - 300)  # this very process, alive, but silent for 300 s
    lock = locks(location, stale_after=120).acquire()
    assert holder(location)["owner"] == lock.owner


def test_a_lock_of_a_gone_pid_on_this_host_is_taken_over(location, locks, children):
    process = children.start("pass")
    process.wait(30)  # reaped: the pid names no process now
    plant(location, pid=process.pid, heartbeat=time.time())
    lock = locks(location).acquire()
    assert holder(location)["owner"] == lock.owner


def test_a_reused_pid_is_told_apart_by_its_start_time(location, locks):
    plant(location, pid=os.getpid(), process_start="1", heartbeat=time.time())  # our pid, an older process
    lock = locks(location).acquire()
    assert holder(location)["owner"] == lock.owner


def test_the_heartbeat_refreshes_the_lock(location, locks, monkeypatch):
    monkeypatch.setattr(lock_module, "HEARTBEAT_SECONDS", 0.05)
    locks(location).acquire()
    first = holder(location)["heartbeat"]
    wait_for(lambda: holder(location)["heartbeat"] > first, timeout=10, what="a heartbeat")


def test_the_heartbeat_notices_a_takeover_and_check_then_fails(location, locks, monkeypatch, open_dir):
    monkeypatch.setattr(lock_module, "HEARTBEAT_SECONDS", 0.5)
    first = locks(location).acquire()
    beat = holder(location)["heartbeat"]
    wait_for(lambda: holder(location)["heartbeat"] != beat, timeout=10, what="a heartbeat")
    # right after a heartbeat (so the first's next one is 0.5 s away), a contender that deems it stale takes over
    second = locks(open_dir(location.uri), stale_after=0).acquire()
    second.stale_after = 120  # (a holder whose own heartbeat is older than stale_after deems itself lost)
    assert holder(location)["owner"] == second.owner
    wait_for(lambda: first.lost, timeout=10, what="the first holder to notice")
    with pytest.raises(LockHeldError, match=f"this run lost the lock of {location.uri} to another run"):
        first.check()
    assert holder(location)["owner"] == second.owner  # the first holder did not write over it
    second.check()
    first.release()
    assert holder(location)["owner"] == second.owner


def test_the_heartbeat_notices_a_deleted_lock(location, locks, monkeypatch):
    monkeypatch.setattr(lock_module, "HEARTBEAT_SECONDS", 0.05)
    lock = locks(location).acquire()
    location.delete("lock.json")
    wait_for(lambda: lock.lost, timeout=10, what="the holder to notice")
    with pytest.raises(LockHeldError):
        lock.check()


def test_check_fails_as_soon_as_the_lock_was_taken_over(location, locks, open_dir):
    first = locks(location).acquire()
    # the first holder was suspended for 300 s: its lock file still holds its last heartbeat
    content = holder(location)
    location.write_bytes("lock.json", json.dumps({**content, "heartbeat": time.time() - 300}).encode())
    second = locks(open_dir(location.uri), stale_after=120).acquire()
    assert holder(location)["owner"] == second.owner
    with pytest.raises(LockHeldError):
        first.check()  # the resumed holder must not go on to commit over the new one


GARBAGE = b'\x00\x00{"owner": "trunc'


def test_an_unreadable_lock_file_is_judged_by_its_age(location, locks):
    location.write_bytes("lock.json", GARBAGE)
    with pytest.raises(LockHeldError, match="pid \\? on \\?, heartbeat 0 s ago"):
        locks(location, stale_after=120).acquire()
    assert location.read_bytes("lock.json") == GARBAGE
    old = time.time() - 300
    os.utime(f"{location.path}/lock.json", (old, old))
    lock = locks(location, stale_after=120).acquire()
    assert holder(location)["owner"] == lock.owner


@pytest.mark.parametrize("content", [b"[]", b"null", b'"text"', b"0"])
def test_a_lock_file_of_json_that_is_not_an_object_is_judged_by_its_age(location, content):
    location.write_bytes("lock.json", content)
    old = time.time() - 300
    os.utime(f"{location.path}/lock.json", (old, old))
    lock = CheckpointLock(location, stale_after=120).acquire()  # (release, too, fails on such a file)
    try:
        assert holder(location)["owner"] == lock.owner
    finally:
        lock.release()


def test_a_takeover_race_never_leaves_two_holders(location, locks, children, open_dir):
    """Three contenders find the lock of a killed run. B reads it; A takes it over; B then moves
    A's fresh lock aside (it read the dead owner before) and, while B puts it back, C finds no
    lock at all and creates one. The interleaving is forced with hooks, in one process."""
    dead = children.start("pass")
    dead.wait(30)
    plant(location, owner="dead", pid=dead.pid)
    a = locks(open_dir(location.uri))
    b = locks(open_dir(location.uri))
    c = locks(open_dir(location.uri))
    results = {}

    def attempt(name, lock):
        try:
            lock.acquire()
            results[name] = "acquired"
        except LockHeldError:
            results[name] = "refused"

    b_location = b.location
    read_bytes, create_exclusively = b_location.read_bytes, b_location.create_exclusively

    def read_then_let_a_in(name):
        data = read_bytes(name)
        if name == "lock.json" and "a" not in results:
            attempt("a", a)  # B has read the dead lock; A takes it over now
        return data

    def let_c_in_then_create(name, data):
        if name == "lock.json" and a.owner.encode() in data and "c" not in results:
            attempt("c", c)  # B moved A's lock aside and is about to put it back; C comes now
        return create_exclusively(name, data)

    b_location.read_bytes = read_then_let_a_in
    b_location.create_exclusively = let_c_in_then_create
    attempt("b", b)
    assert results["a"] == "acquired"
    holders = sorted(name for name, result in results.items() if result == "acquired")
    assert len(holders) == 1, f"{holders} all acquired the lock; lock.json is {holder(location)['owner']}"
