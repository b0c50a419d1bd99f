"""Killing a test's child process with everything it started (a Spark driver, its JVM, PySpark's
worker daemon), at once, and waiting until all of it is gone."""

import os
import signal
import subprocess

import psutil

from tests.waiting import wait_for


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the whole process tree at once: the process's group (a driver and its Spark JVM) and
    the groups its descendants made (PySpark's worker daemon makes its own); then wait until every
    one of them is gone. The process must lead its own session (``start_new_session=True``)."""
    tree = [process.pid]
    try:
        tree += [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        pass
    groups = {process.pid}
    for pid in tree:
        try:
            groups.add(os.getpgid(pid))
        except ProcessLookupError:
            continue
    for group in groups & set(tree):  # only groups led by the process's own tree
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait(30)
    wait_for(
        lambda: not [pid for pid in tree if living(pid)],
        30,
        interval=0.1,
        what=f"the processes of the killed tree gone ({tree})",
    )


def living(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def connected_to(pid: int, port: int) -> bool:
    """Whether the process holds an established TCP connection to ``port`` (on this host)."""
    try:
        connections = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.NoSuchProcess:
        return False
    return any(c.status == psutil.CONN_ESTABLISHED and c.raddr and c.raddr.port == port for c in connections)
