"""A committed run's end offsets, committed to a consumer group, so that the lag of a scheduled load
shows in ``kafkalog groups describe`` and in any Kafka lag monitor.

The checkpoint stays the source of truth: the group's offsets are a copy, written after the
checkpoint's commit and never read back by the load. So a failed group commit (a broker without a
group coordinator, a group that has active members, an unreachable coordinator) is a warning
logged on one line, never a failed run; a kill between the two commits leaves the group one run
behind until the next run commits its own ends. Against a broker that offers no group API the
run logs that in one line and goes on (no retries: the broker said so in its ApiVersions).

What the group's offsets say: how far the output is complete, the end offsets of the last
committed run. A rewind reloads records, it does not unload them: its run's ends are the latest
offsets again, so the group's offsets do not move back to the rewind point (the lag does not jump
up by the records being reloaded). Commits are those of a tool outside the group (generation -1),
carrying ``kafkalog load run N`` as metadata.
"""

import logging

from broker.client import GroupClient, GroupsUnsupportedError, KafkaClient, KafkaError, UnsupportedVersionError
from spark_kafka_source.checkpoint import Run

log = logging.getLogger(__name__)


def default_group_id(output_uri: str) -> str:
    """The group of a load that names none: one per output, ``kafkalog-load:<output URI>``."""
    return f"kafkalog-load:{output_uri}"


def commit_run_ends(client: KafkaClient, group: str, run: Run) -> bool:
    """Commit ``run``'s end offsets to ``group``; False (with one warning line) when it could not."""
    offsets = {p.key: p.end for p in run.plan}
    if not offsets:
        return True
    try:
        GroupClient(client).commit(group, offsets, metadata=f"kafkalog load run {run.number}")
    except GroupsUnsupportedError as exc:
        log.warning("%s: %s (--no-group-commit turns this off)", _not_committed(run, group), exc)
        return False
    except (KafkaError, UnsupportedVersionError, OSError) as exc:
        log.warning("%s: %s", _not_committed(run, group), exc)
        return False
    log.info("run %d: end offsets committed to consumer group %r", run.number, group)
    return True


def _not_committed(run, group: str) -> str:
    return (
        f"kafkalog load warning: run {run.number}'s end offsets not committed to consumer group {group!r} "
        f"(the checkpoint has them)"
    )
