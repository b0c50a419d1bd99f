"""The partition assignors a consumer group's leader runs (pure, no I/O): ``range`` and
``roundrobin``, with the rules of Kafka's ``RangeAssignor`` and ``RoundRobinAssignor``, so that a
group mixing this project's members with Kafka's or librdkafka's gets the same split whoever leads.

Each takes the members' subscribed topics, ``{member id: topics}``, and each topic's partitions,
``{topic: [partitions]}`` (topics missing from it, because they do not exist, are not assigned),
and returns every member's partitions, ``{member id: {topic: [partitions]}}`` (every member is
present, possibly with nothing).

* range: topic by topic, the members subscribed to it in member-id order each get a consecutive
  run of its partitions; the first ``partitions % members`` get one more.
* roundrobin: every subscribed partition, in (topic, partition) order, goes to the next member in
  member-id order that subscribes to its topic.
"""

import itertools
from collections.abc import Collection, Mapping

Subscriptions = Mapping[str, Collection[str]]  # member id -> the topics it subscribes to
Assignments = dict[str, dict[str, list[int]]]  # member id -> topic -> its partitions


def assign_range(subscriptions: Subscriptions, partitions: Mapping[str, list[int]]) -> Assignments:
    assigned: Assignments = {member: {} for member in subscriptions}
    for topic in sorted({t for topics in subscriptions.values() for t in topics} & partitions.keys()):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        numbers = sorted(partitions[topic])
        share, extra = divmod(len(numbers), len(members))
        start = 0
        for index, member in enumerate(members):
            count = share + (index < extra)
            if count:
                assigned[member][topic] = numbers[start : start + count]
            start += count
    return assigned


def assign_round_robin(subscriptions: Subscriptions, partitions: Mapping[str, list[int]]) -> Assignments:
    assigned: Assignments = {member: {} for member in subscriptions}
    members = itertools.cycle(sorted(subscriptions))
    subscribed = {t for topics in subscriptions.values() for t in topics} & partitions.keys()
    for topic in sorted(subscribed):
        for partition in sorted(partitions[topic]):
            member = next(members)
            while topic not in subscriptions[member]:
                member = next(members)
            assigned[member].setdefault(topic, []).append(partition)
    return assigned


ASSIGNORS = {"range": assign_range, "roundrobin": assign_round_robin}
"""The assignors by their protocol names in JoinGroup (Kafka's and librdkafka's names)."""
