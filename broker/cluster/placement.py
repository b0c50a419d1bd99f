"""Where partitions live: the replication factors a topic may ask for, and the replica lists of new
partitions, spread round-robin over the brokers from a start index (Kafka's rack-unaware
assignment; the controller picks a random start so topics do not pile up on the first broker), or
as a client's manual assignment says, once checked.

Partitions have one replica each, as in Kafka 0.7's design (before replication): a replication factor
above 1 is refused (replication is a later step), and so is one above the live brokers.
"""

MAX_REPLICATION_FACTOR = 1


class PlacementError(ValueError):
    """A replication factor or assignment that cannot be honoured; the message says why."""


def check_replication_factor(factor: int, live_brokers: int | None = None) -> None:
    """PlacementError unless ``factor`` replicas can be placed (``live_brokers`` when known)."""
    if factor < 1:
        raise PlacementError(f"replication factor must be at least 1, got {factor}")
    if live_brokers is not None and factor > live_brokers:
        raise PlacementError(f"replication factor {factor} is larger than the {live_brokers} available broker(s)")
    if factor > MAX_REPLICATION_FACTOR:
        raise PlacementError(
            f"replication factor {factor} is not supported: each partition has one replica "
            f"(replication is not built yet), so the factor can only be {MAX_REPLICATION_FACTOR}"
        )


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


def assign_replicas(first_partition: int, count: int, broker_ids: list[int], start_index: int = 0) -> list[list[int]]:
    """The replica lists of partitions ``first_partition .. first_partition + count - 1``: partition p
    on broker ``broker_ids[(start_index + p) % len(broker_ids)]``."""
    if not broker_ids:
        raise PlacementError("no broker is available to place partitions on")
    brokers = sorted(broker_ids)
    return [[brokers[(start_index + p) % len(brokers)]] for p in range(first_partition, first_partition + count)]
