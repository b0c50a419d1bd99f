"""Partition directories renamed aside for deletion (``<topic>-<partition>.<id>-delete``) and not
yet removed: found by the (possibly cut) ``<topic>-<partition>`` name they carry, so that a deletion
interrupted by a crash or a full disk can be told and finished, and their files freed early."""

import logging
import os
import re
import shutil
from collections.abc import Iterable, Mapping

from broker.log.manager import DELETE_DIR_SUFFIX, MAX_FILE_NAME

log = logging.getLogger(__name__)

_DELETED_DIRECTORY = re.compile(r"(?P<name>.+)\.[0-9a-f]{32}" + re.escape(DELETE_DIR_SUFFIX))
_DELETED_NAME_LENGTH = MAX_FILE_NAME - len(".") - 32 - len(DELETE_DIR_SUFFIX)  # the log manager cuts longer names


def _set_aside(log_dir: str) -> dict[str, list[str]]:
    """The directories of ``log_dir`` renamed aside for deletion, by the name they carry."""
    found: dict[str, list[str]] = {}
    for entry in os.listdir(log_dir) if os.path.isdir(log_dir) else ():
        if match := _DELETED_DIRECTORY.fullmatch(entry):
            found.setdefault(match["name"], []).append(os.path.join(log_dir, entry))
    return found


def interrupted_deletions(log_dir: str, partition_counts: Mapping[str, int]) -> list[str]:
    """The topics of ``partition_counts`` with a partition renamed aside and none in its place."""
    set_aside = _set_aside(log_dir)
    if not set_aside:
        return []
    present = set(os.listdir(log_dir))
    return [
        name
        for name, count in partition_counts.items()
        if any(f"{name}-{p}"[:_DELETED_NAME_LENGTH] in set_aside and f"{name}-{p}" not in present for p in range(count))
    ]


def directories_set_aside(log_dir: str, topic: str, partitions: Iterable[int]) -> list[str]:
    """The directories of ``topic``'s ``partitions`` renamed aside for deletion."""
    set_aside = _set_aside(log_dir)
    return [
        directory
        for partition in partitions
        for directory in set_aside.get(f"{topic}-{partition}"[:_DELETED_NAME_LENGTH], [])
    ]


def free_files(directory: str) -> None:
    """Remove the files of a directory renamed aside, keeping the empty directory."""
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:  # the delayed removal was quicker
        return
    for entry in entries:
        try:
            if entry.is_dir():
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError as exc:
            log.warning("cannot remove %s: %s", entry.path, exc)
