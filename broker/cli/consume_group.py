"""``kafkalog consume TOPIC --group G``: consume as a member of consumer group G, sharing the
topic's partitions with the group's other members (this tool's, or any Kafka client's).

Each partition assigned to this member starts at the group's committed offset, or, where the group
has none or it lies outside the log (below the log start after retention or delete-records, above
the end), at the earliest or latest offset (``--auto-offset-reset``; ``none`` fails instead), as
Kafka's consumer resets; so does a fetch answered OFFSET_OUT_OF_RANGE mid-run (``--follow``), with
a note on stderr. Records are printed as plain
``consume`` prints them, and after each round of fetches, once the lines are flushed to stdout,
the next offset of every partition that printed something is committed: **at least once** (a
member stopped between printing and committing, by SIGKILL or a broken session, has its last
records printed again by the partition's next owner; nothing is skipped). When the group
rebalances, the member commits, joins again and goes on with its new partitions. Ctrl-C or
SIGTERM commits and leaves the group at once, so the others take over without waiting for the
session timeout. Without ``--follow`` the member stops, commits and leaves once its partitions
are read up to the end offsets measured when they were assigned. A member whose command fails
leaves the group at once too. With ``--follow``, as Kafka's consumer does, an outage is waited out
(``outages``): a partition whose leader is down is tried again every few seconds while the others
are read, and a coordinator that cannot be reached is joined again once it can be (for ever, or
for ``--retry-for`` seconds).
"""

import argparse
import signal
import sys
import time

from broker.client import EARLIEST, LATEST, GroupMember, KafkaClient, KafkaError, OffsetOutOfRangeError

from .common import OK, CommandError, partitions_of
from .outages import Outages, is_outage, wait_out
from .record_lines import fetch_records, record_line

PROG = "kafkalog consume"
FOLLOW_POLL_SECONDS = 0.5  # with --follow, the wait after a round that found nothing new
COMMIT_METADATA = "kafkalog consume"


def consume_in_group(client: KafkaClient, args: argparse.Namespace) -> int:
    outages = Outages(PROG, args.retry_for) if args.follow else None
    group = f"group {args.group!r}"
    wait_out(outages, args.topic, lambda: partitions_of(client, args.topic, args.bootstrap_server))  # unknown: fails
    member = GroupMember(client, args.group, [args.topic], session_timeout_ms=args.session_timeout_ms)
    remaining = args.max_records
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    try:
        while remaining is None or remaining > 0:
            assigned = wait_out(outages, group, member.join).get(args.topic, [])
            _say(
                f"group {args.group!r} generation {member.generation}: assigned "
                f"{'partitions ' + ', '.join(map(str, assigned)) if assigned else 'no partition'} of {args.topic}"
            )
            done, remaining = _consume_assigned(client, member, assigned, remaining, args, outages)
            if done:
                break
    except KeyboardInterrupt:
        if not args.follow:
            _leave(member)
            raise
    except Exception:
        _leave_after_failure(member)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
    _leave(member)
    return OK


def _consume_assigned(
    client, member: GroupMember, partitions: list[int], remaining: int | None, args, outages: Outages | None
):
    """Print the records of this generation's ``partitions``, committing after each round;
    ``(done, remaining)``: done when this member is finished (not when it must join again, also
    after its coordinator became unreachable under --follow: the join waits it out)."""
    topic = args.topic
    positions: dict[int, int] = {}
    try:
        positions = _starting_positions(client, member, topic, partitions, args.auto_offset_reset)
        ends = (
            None
            if args.follow
            else {p: o for (_, p), (o, _) in client.list_offsets({(topic, p): LATEST for p in partitions}).items()}
        )
        while remaining is None or remaining > 0:
            if not member.alive():
                return False, remaining
            active = [p for p in partitions if ends is None or positions[p] < ends[p]]
            if not active and ends is not None:
                return True, remaining
            printed = {}
            for partition in active:
                label = f"{topic}-{partition}"
                if outages is not None and not outages.ready(label):
                    continue
                try:
                    records, position = fetch_records(
                        client, topic, partition, positions[partition], None if ends is None else ends[partition]
                    )
                except OffsetOutOfRangeError as exc:  # cut below it, or the topic was created again
                    positions[partition] = _reset(
                        topic, partition, exc.offset, exc.log_start_offset, exc.high_watermark, args.auto_offset_reset
                    )
                    continue
                except KafkaError as exc:  # its leader is down: the other partitions go on
                    if outages is None or not is_outage(exc):
                        raise
                    outages.failed(label, exc)
                    continue
                if outages is not None:
                    outages.read(label)
                shown = records if remaining is None else records[:remaining]
                for entry, record in shown:
                    print(record_line(topic, partition, entry, record, args.format))
                if ends is not None and position == positions[partition]:
                    ends[partition] = position  # nothing left below the end: the log was cut meanwhile
                # the next offset to print: past the fetch, unless --max-records stopped in it or the
                # fetch went past the end (records appended since are left for the next reader)
                printed[partition] = position if len(shown) == len(records) else shown[-1][1].offset + 1
                if ends is not None:
                    printed[partition] = min(printed[partition], ends[partition])
                if remaining is not None:
                    remaining -= len(shown)
                    if remaining == 0:
                        break
            sys.stdout.flush()
            advanced = {(topic, p): o for p, o in printed.items() if o != positions[p]}
            positions.update(printed)
            member.commit(advanced, COMMIT_METADATA)
            if args.follow and not advanced:
                time.sleep(FOLLOW_POLL_SECONDS)
        return True, remaining
    except KafkaError as exc:  # a heartbeat or commit that found no coordinator
        if outages is None or not is_outage(exc):
            raise
        outages.failed(f"group {member.group!r}", exc)
        return False, remaining
    except KeyboardInterrupt:
        sys.stdout.flush()  # printed lines of finished fetches are committed; the rest come again
        member.commit({(topic, p): o for p, o in positions.items()}, COMMIT_METADATA)
        raise


def _starting_positions(client, member: GroupMember, topic: str, partitions: list[int], reset: str) -> dict:
    """The group's committed offset of each partition if the log holds it (from its start to its
    end), else the offset ``reset`` gives."""
    if not partitions:
        return {}
    committed = member.committed({topic: partitions})  # before the ends: a commit never passes them
    earliest = client.list_offsets({(topic, p): EARLIEST for p in partitions})
    latest = client.list_offsets({(topic, p): LATEST for p in partitions})
    positions = {}
    for p in partitions:
        offset, start, end = committed.get((topic, p)), earliest[(topic, p)][0], latest[(topic, p)][0]
        in_log = offset is not None and start <= offset <= end
        positions[p] = offset if in_log else _reset(topic, p, offset, start, end, reset)
    return positions


def _reset(topic: str, partition: int, offset: int | None, start: int, end: int, reset: str) -> int:
    """Where a partition without a usable ``offset`` starts (the log holds ``start`` to ``end``):
    --auto-offset-reset earliest or latest; CommandError for none."""
    why = (
        "the group has no committed offset"
        if offset is None
        else f"offset {offset} is outside the log, which holds offsets {start} to {end}"
    )
    if reset == "none":
        raise CommandError(
            f"{topic}-{partition}: {why} and --auto-offset-reset is none (give earliest or latest to start there)"
        )
    position = start if reset == "earliest" else end
    if offset is not None:  # no committed offset is the usual start: no note for it
        _say(f"{topic}-{partition}: {why}; starting at the {reset} offset {position} (--auto-offset-reset)")
    return position


def _leave(member: GroupMember) -> None:
    member.leave()
    _say(f"left group {member.group!r}")


def _leave_after_failure(member: GroupMember) -> None:
    """A failing member leaves at once, so the others take its partitions without waiting for its
    session to time out; the failure is the error to report, not this."""
    try:
        member.leave()
    except KafkaError as exc:
        _say(f"could not leave group {member.group!r} ({exc}): it is dropped after its session timeout")


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM stops the member as Ctrl-C does: commit, leave


def _say(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)
