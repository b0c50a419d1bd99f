"""Files replaced atomically: a crash leaves either the old file or the new one, never a mix.

A write goes to ``<name>.tmp``, is fsynced, renamed over the old file, and the directory is fsynced.
A write that fails (a full disk) removes its temporary file; one left by a crash is removed by
``remove_stale_temporaries`` at the next start.
"""

import contextlib
import os

TEMP_SUFFIX = ".tmp"


def fsync_directory(path: str) -> None:
    """Make renames and file creations in a directory durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str, data: bytes, private: bool = False) -> None:
    """Replace ``path`` with ``data``: temporary file, fsync, rename, fsync the directory. A
    ``private`` file (secrets) is readable and writable by its owner only (0600)."""
    tmp = path + TEMP_SUFFIX
    try:
        with open(tmp, "wb") as f:
            if private:
                os.fchmod(f.fileno(), 0o600)  # before the first byte is written
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove_if_present(tmp)
        raise
    fsync_directory(os.path.dirname(os.path.abspath(path)))


def remove_stale_temporaries(directory: str) -> list[str]:
    """Remove the ``*.tmp`` files a crash left in ``directory`` (never a committed file); return their names."""
    stale = sorted(
        name
        for name in os.listdir(directory)
        if name.endswith(TEMP_SUFFIX) and os.path.isfile(os.path.join(directory, name))
    )
    for name in stale:
        _remove_if_present(os.path.join(directory, name))
    return stale


def _remove_if_present(path: str) -> None:
    with contextlib.suppress(OSError):  # never hides the error that made the caller clean up
        os.unlink(path)
