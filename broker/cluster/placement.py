"""Where partitions live: the replication factors a topic may ask for, and the replica lists of new
partitions placed as Kafka's rack-unaware assignment does (each partition's first replica round-robin
over the brokers from a start index, its followers after it with a shift that grows by one each time
the partitions have gone once round the brokers, so that followers spread too; the topic store picks
random starts so that topics do not pile up on the first broker), or as a client's manual assignment
says, once checked.
"""

MAX_REPLICATION_FACTOR = 32767  # an INT16 on the wire


class PlacementError(ValueError):
    """A replication factor or assignment that cannot be honoured; the message says why."""


def check_replication_factor(factor: int, live_brokers: int | None = None) -> None:
    """PlacementError unless ``factor`` replicas can be placed (``live_brokers`` when known)."""
    if factor < 1:
        raise PlacementError(f"replication factor must be at least 1, got {factor}")
    if live_brokers is not None and factor > live_brokers:
        raise PlacementError(f"replication factor {factor} is larger than the {live_brokers} available broker(s)")
    if factor > MAX_REPLICATION_FACTOR:
        raise PlacementError(f"replication factor {factor} is above Kafka's limit of {MAX_REPLICATION_FACTOR}")


def check_assignment(broker_ids: list[int], live_broker_ids: list[int]) -> None:
    """PlacementError unless a manually given replica list can be placed: live brokers, each once."""
    check_replication_factor(len(broker_ids), len(live_broker_ids))
    if len(set(broker_ids)) != len(broker_ids):
        raise PlacementError(f"replica list {broker_ids} names a broker twice")
    unknown = sorted(set(broker_ids) - set(live_broker_ids))
    if unknown:
        raise PlacementError(
            f"replica list {broker_ids} names broker(s) {unknown} that are not live (live: {sorted(live_broker_ids)})"
        )


def follow_assignment(requested: list[list[int]], count: int, live_broker_ids: list[int]) -> list[list[int]]:
    """The replica lists of a manual assignment of ``count`` new partitions, checked (PlacementError)."""
    if len(requested) != count:
        raise PlacementError(f"{len(requested)} replica list(s) given for {count} new partition(s)")
    for broker_ids in requested:
        check_assignment(list(broker_ids), live_broker_ids)
    return [list(broker_ids) for broker_ids in requested]


def assign_replicas(
    first_partition: int,
    count: int,
    broker_ids: list[int],
    start_index: int = 0,
    replication_factor: int = 1,
    replica_shift: int | None = None,
) -> list[list[int]]:
    """The replica lists of partitions ``first_partition .. first_partition + count - 1``: partition
    p's first replica on ``broker_ids[(start_index + p) % n]`` (brokers sorted), its followers after
    it, shifted by ``replica_shift`` (the start index when None) plus one per round of partitions."""
    if not broker_ids:
        raise PlacementError("no broker is available to place partitions on")
    check_replication_factor(replication_factor, len(broker_ids))
    brokers = sorted(broker_ids)
    n = len(brokers)
    shift = start_index if replica_shift is None else replica_shift
    placed = []
    for p in range(first_partition, first_partition + count):
        if p > 0 and p % n == 0:
            shift += 1
        first = (start_index + p) % n
        followers = [brokers[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(replication_factor - 1)]
        placed.append([brokers[first], *followers])
    return placed
