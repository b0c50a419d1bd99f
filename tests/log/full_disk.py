"""A real full disk for tests: a small tmpfs mounted for the test and filled on demand; and a disk
that fails when data is written back: an ext4 filesystem whose device (a loop device) is a sparse
file larger than the small tmpfs holding it, so writes land in the page cache and the write-back
fails (an fsync reports ENOSPC or EIO, and ext4 then turns read-only).

Mounting needs root (CI runs as root); elsewhere the tests that use them are skipped, saying why.
"""

import contextlib
import errno
import os
import subprocess

import pytest


@contextlib.contextmanager
def small_tmpfs(path, size_mib: int = 16):
    """Mount a ``size_mib`` tmpfs at ``path`` (created) for the duration of the block."""
    with _mounted(path, ["-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs"], "a tmpfs"):
        yield path


@contextlib.contextmanager
def failing_write_back(path, backing_mib: int = 8, device_mib: int = 64):
    """Mount at ``path`` an ext4 filesystem of ``device_mib`` whose blocks only ``backing_mib`` can hold."""
    with small_tmpfs(f"{path}.backing", backing_mib) as backing:
        image = os.path.join(str(backing), "device.img")
        with open(image, "wb") as sparse:
            sparse.truncate(device_mib * 1024 * 1024)
        made = subprocess.run(["mkfs.ext4", "-q", "-F", image], capture_output=True, text=True, timeout=60)
        if made.returncode != 0:
            pytest.skip(f"cannot make an ext4 filesystem: {made.stderr.strip()}")
        with _mounted(path, ["-o", "loop,errors=continue", image], "a loop device"):  # unmounting frees the device
            yield path


@contextlib.contextmanager
def _mounted(path, mount_args: list, what: str):
    if os.geteuid() != 0:
        pytest.skip(f"the test mounts {what}, which needs root")
    os.makedirs(path, exist_ok=True)
    mounted = subprocess.run(["mount", *mount_args, str(path)], capture_output=True, text=True, timeout=30)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount {what} at {path}: {mounted.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


def fill(path, leave_bytes: int = 0) -> str:
    """Fill the filesystem of directory ``path`` with a file until at most ``leave_bytes`` are free;
    return the file's path (delete it to free the space)."""
    filler = os.path.join(str(path), "filler")
    chunk = b"\xff" * 4096
    with open(filler, "ab", buffering=0) as f:
        while free_bytes(path) > leave_bytes:
            try:
                f.write(chunk[: max(1, min(len(chunk), free_bytes(path) - leave_bytes))])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    return filler


def free_bytes(path) -> int:
    stats = os.statvfs(str(path))
    return stats.f_bavail * stats.f_frsize
