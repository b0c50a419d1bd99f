"""The group coordinator's state machine and offset manager, on the pure objects: a clock the test
moves, and a store that keeps the appended records (and can fail or hold them back)."""

from broker.coordinator.config import MAX_MEMBER_METADATA_BYTES, GroupConfig
from broker.coordinator.group import Group, GroupState
from broker.coordinator.group_coordinator import GroupCoordinator, JoinRequest, OffsetCommit
from broker.coordinator.offset_manager import StoreError, replay
from broker.coordinator.offsets_records import GroupKey, OffsetKey, decode_key, decode_value
from broker.protocol.errors import ErrorCode

from ..clock import FakeClock

SESSION = 10_000
REBALANCE = 30_000
DELAY = 100


class Store:
    """Appends in memory; ``fail`` makes the next appends fail, ``hold`` keeps their ``done`` for later."""

    def __init__(self):
        self.records: dict[int, list] = {}
        self.fail = None
        self.hold = False
        self.held = []

    def append(self, partition, records, done):
        if self.fail is not None:
            done(self.fail)
            return
        if self.hold:
            self.held.append((partition, records, done))
            return
        self.records.setdefault(partition, []).extend(records)
        done(None)

    def decoded(self):
        out = []
        for records in self.records.values():
            for key, value in records:
                key = decode_key(key)
                out.append((key, decode_value(key, value)))
        return out


def make(config=None):
    clock, store = FakeClock(), Store()
    config = config or GroupConfig(
        initial_rebalance_delay_ms=DELAY, min_session_timeout_ms=1000, offsets_topic_partitions=3
    )
    coordinator = GroupCoordinator(config, store, clock)
    for partition in range(config.offsets_topic_partitions):
        coordinator.install(partition, ({}, {}))
    return coordinator, clock, store


class Answer:
    """Collects what a respond callable was given."""

    def __init__(self):
        self.values = []

    def __call__(self, *value):
        self.values.append(value[0] if len(value) == 1 else value)

    @property
    def one(self):
        assert len(self.values) == 1, self.values
        return self.values[0]


def join(
    coordinator,
    member_id="",
    group="g",
    protocols=(("range", b"r"),),
    instance=None,
    session=SESSION,
    v4=True,
    protocol_type="consumer",
):
    answer = Answer()
    coordinator.join(
        JoinRequest(
            group, member_id, instance, "client", "/127.0.0.1", session, REBALANCE, protocol_type, list(protocols), v4
        ),
        answer,
    )
    return answer


def advance(coordinator, clock, ms):
    clock.now += ms
    coordinator.tick()


def delays(coordinator, clock, count):
    """Let ``count`` initial delays pass (each member that joins during one extends it once)."""
    for _ in range(count):
        advance(coordinator, clock, DELAY)


def first_generation(coordinator, clock, count=1, **kwargs):
    """``count`` members join an empty group (v4 flow); returns their member ids, leader first."""
    firsts = [join(coordinator, **kwargs).one for _ in range(count)]
    if kwargs.get("instance") is None:
        assert {f.error for f in firsts} == {ErrorCode.MEMBER_ID_REQUIRED}
    ids = [f.member_id for f in firsts]
    assert all(i.startswith("client-") for i in ids)
    answers = [join(coordinator, member_id=i, **kwargs) for i in ids]
    assert all(not a.values for a in answers)  # the initial delay holds them
    delays(coordinator, clock, count)
    results = [a.one for a in answers]
    assert {r.error for r in results} == {ErrorCode.NONE}
    assert {r.generation for r in results} == {1}
    leader = results[0].leader
    return [leader] + [i for i in ids if i != leader]


def sync_all(coordinator, ids, generation, group="g"):
    answers = {}
    for member_id in ids[1:] + ids[:1]:  # followers first: they wait for the leader
        answers[member_id] = Answer()
        assignments = [(i, f"for-{i}".encode()) for i in ids] if member_id == ids[0] else []
        coordinator.sync(group, generation, member_id, None, assignments, answers[member_id])
    return {i: a.one for i, a in answers.items()}


def test_member_id_required_then_a_generation_after_the_initial_delay():
    coordinator, clock, store = make()
    ids = first_generation(coordinator, clock, count=2)
    group = coordinator.groups["g"]
    assert group.state == GroupState.COMPLETING_REBALANCE
    synced = sync_all(coordinator, ids, 1)
    assert {i: r.assignment for i, r in synced.items()} == {i: f"for-{i}".encode() for i in ids}
    assert group.state == GroupState.STABLE
    stored = [v for k, v in store.decoded() if isinstance(k, GroupKey)]
    assert stored[-1].generation == 1 and {m.member_id for m in stored[-1].members} == set(ids)
    assert {m.assignment for m in stored[-1].members} == {f"for-{i}".encode() for i in ids}


def test_the_leader_gets_every_members_metadata_and_followers_none():
    coordinator, clock, _ = make()
    leader_id = join(coordinator).one.member_id
    follower_id = join(coordinator).one.member_id
    leader = join(coordinator, member_id=leader_id, protocols=[("range", b"L")])
    follower = join(coordinator, member_id=follower_id, protocols=[("range", b"F")])
    delays(coordinator, clock, 3)
    by_leader = leader.one if leader.one.leader == leader_id else follower.one
    other = follower.one if by_leader is leader.one else leader.one
    assert sorted(m[2] for m in by_leader.members) == [b"F", b"L"]
    assert other.members == ()


def test_a_new_member_rebalances_a_stable_group_and_old_members_are_told_by_heartbeat():
    coordinator, clock, _ = make()
    [a] = first_generation(coordinator, clock)
    sync_all(coordinator, [a], 1)
    b = join(coordinator).one.member_id
    b_join = join(coordinator, member_id=b)
    assert coordinator.groups["g"].state == GroupState.PREPARING_REBALANCE
    assert coordinator.heartbeat("g", 1, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
    a_join = join(coordinator, member_id=a)  # everyone is back: no delay outside an empty group
    assert a_join.one.generation == b_join.one.generation == 2
    assert coordinator.heartbeat("g", 1, a, None) == ErrorCode.ILLEGAL_GENERATION
    assert coordinator.heartbeat("g", 2, "nobody", None) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_that_stops_heartbeating_is_removed_and_the_group_rebalances():
    coordinator, clock, _ = make()
    a, b = first_generation(coordinator, clock, count=2)
    sync_all(coordinator, [a, b], 1)
    advance(coordinator, clock, SESSION - 1)
    assert coordinator.heartbeat("g", 1, a, None) == ErrorCode.NONE
    advance(coordinator, clock, 2)  # b's session is over
    group = coordinator.groups["g"]
    assert b not in group.members and group.state == GroupState.PREPARING_REBALANCE
    assert join(coordinator, member_id=a).one.generation == 2


def test_members_that_do_not_rejoin_are_dropped_at_the_rebalance_timeout():
    coordinator, clock, _ = make()
    a, b = first_generation(coordinator, clock, count=2)
    sync_all(coordinator, [a, b], 1)
    c = join(coordinator).one.member_id
    c_join = join(coordinator, member_id=c)
    a_join = join(coordinator, member_id=a)
    for _ in range(REBALANCE // (SESSION // 2)):  # a and c wait; b is alive (heartbeats) but never rejoins
        assert coordinator.heartbeat("g", 1, b, None) == ErrorCode.REBALANCE_IN_PROGRESS
        advance(coordinator, clock, SESSION // 2)
    assert a_join.one.generation == c_join.one.generation == 2
    assert set(coordinator.groups["g"].members) == {a, c}


def test_bad_joins_are_refused_with_kafkas_codes():
    coordinator, clock, _ = make(
        GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=1000, max_size=2, offsets_topic_partitions=1)
    )
    assert join(coordinator, session=999).one.error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert join(coordinator, group="").one.error == ErrorCode.INVALID_GROUP_ID
    assert (
        join(coordinator, protocols=[("range", b"x" * MAX_MEMBER_METADATA_BYTES)]).one.error
        == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert join(coordinator, protocols=[]).one.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert join(coordinator, member_id="made-up").one.error == ErrorCode.UNKNOWN_MEMBER_ID
    first = join(coordinator, v4=False, protocols=[("range", b"")]).one
    assert first.error == ErrorCode.NONE
    assert join(coordinator, protocols=[("roundrobin", b"")]).one.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert join(coordinator, protocol_type="connect").one.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert join(coordinator).one.error == ErrorCode.MEMBER_ID_REQUIRED
    for _ in range(1000):  # a hostile client asking for many members: bounded by group.max.size
        assert join(coordinator).one.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert coordinator.groups["g"].size == 2


def test_a_group_holds_at_most_group_max_metadata_bytes_of_member_metadata():
    coordinator, clock, _ = make(
        GroupConfig(
            initial_rebalance_delay_ms=0,
            min_session_timeout_ms=1000,
            max_metadata_bytes=3 * 1000,
            offsets_topic_partitions=1,
        )
    )
    for n in range(3):  # 3 x (5 + 995) bytes: exactly the bound
        join(coordinator, v4=False, instance=f"i{n}", protocols=[("range", b"x" * 995)])
    group = coordinator.groups["g"]
    assert len(group.members) == 3
    assert join(coordinator, v4=False, protocols=[("range", b"")]).one.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    first = group.static_members["i0"]
    grown = join(coordinator, member_id=first, instance="i0", protocols=[("range", b"x" * 996)])
    assert grown.one.error == ErrorCode.GROUP_MAX_SIZE_REACHED  # a member may not grow past it either
    assert len(group.members) == 3 and group.members[first].metadata_bytes == 1000
    join(coordinator, member_id=first, instance="i0", protocols=[("range", b"x")])  # smaller: accepted
    assert group.members[first].metadata_bytes == 6
    join(coordinator, v4=False, instance="i3", protocols=[("range", b"x" * 989)])  # and room for another
    assert len(group.members) == 4


def test_pending_members_that_never_come_back_expire():
    coordinator, clock, _ = make()
    for _ in range(5):
        join(coordinator)
    assert coordinator.groups["g"].size == 5
    advance(coordinator, clock, SESSION)
    assert coordinator.groups["g"].size == 0


def test_the_protocol_is_one_every_member_supports_by_vote():
    coordinator, clock, _ = make()
    ids = [join(coordinator).one.member_id for _ in range(3)]
    preferences = [
        [("roundrobin", b""), ("range", b"")],
        [("range", b""), ("roundrobin", b"")],
        [("range", b""), ("sticky", b""), ("roundrobin", b"")],
    ]
    answers = [join(coordinator, member_id=i, protocols=p) for i, p in zip(ids, preferences, strict=True)]
    delays(coordinator, clock, 3)
    assert {a.one.protocol for a in answers} == {"range"}


def test_static_member_restart_gets_its_assignment_back_without_a_rebalance_and_fences_the_old_id():
    coordinator, clock, store = make()
    a_join = join(coordinator, instance="host-a")  # static members are not asked for a member id first
    b_id = join(coordinator).one.member_id
    b_join = join(coordinator, member_id=b_id)
    delays(coordinator, clock, 3)
    a, b = a_join.one, b_join.one
    assert a.error == b.error == ErrorCode.NONE
    sync_all(coordinator, [a.leader] + [i for i in (a.member_id, b_id) if i != a.leader], 1)
    restarted = join(coordinator, instance="host-a").one
    assert restarted.error == ErrorCode.NONE and restarted.generation == 1
    assert restarted.member_id != a.member_id
    assert coordinator.groups["g"].state == GroupState.STABLE
    synced = Answer()
    coordinator.sync("g", 1, restarted.member_id, "host-a", [], synced)
    assert synced.one.assignment == f"for-{a.member_id}".encode()
    assert coordinator.heartbeat("g", 1, a.member_id, "host-a") == ErrorCode.FENCED_INSTANCE_ID
    assert coordinator.heartbeat("g", 1, restarted.member_id, "host-a") == ErrorCode.NONE
    stored = [v for k, v in store.decoded() if isinstance(k, GroupKey)][-1]
    assert {m.group_instance_id: m.member_id for m in stored.members}["host-a"] == restarted.member_id


def test_leave_group_batches_answer_per_member():
    coordinator, clock, _ = make()
    a, b, c = first_generation(coordinator, clock, count=3)
    sync_all(coordinator, [a, b, c], 1)
    error, errors = coordinator.leave("g", [(a, None), ("ghost", None), ("", "no-such-instance")])
    assert error == ErrorCode.NONE
    assert errors == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]
    assert set(coordinator.groups["g"].members) == {b, c}
    assert coordinator.groups["g"].state == GroupState.PREPARING_REBALANCE


def commit(coordinator, group="g", generation=-1, member="", offsets=((("t", 0), 5),), metadata="m"):
    answer = Answer()
    coordinator.commit_offsets(
        group, generation, member, None, -1, [OffsetCommit(t, p, o, 3, metadata) for (t, p), o in offsets], answer
    )
    return answer.one


def test_assign_users_commit_while_the_group_has_no_members_and_members_commit_in_their_generation():
    coordinator, clock, store = make()
    assert commit(coordinator) == {("t", 0): ErrorCode.NONE}
    error, fetched = coordinator.fetch_offsets("g", [("t", 0), ("t", 1)])
    assert fetched[("t", 0)].offset == 5 and fetched[("t", 0)].metadata == "m"
    assert fetched[("t", 0)].leader_epoch == 3 and fetched[("t", 1)] is None
    [a] = first_generation(coordinator, clock)
    assert commit(coordinator) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    sync_all(coordinator, [a], 1)
    assert commit(coordinator) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(coordinator, generation=0, member=a) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert commit(coordinator, generation=1, member=a, offsets=((("t", 0), 9),)) == {("t", 0): ErrorCode.NONE}
    assert coordinator.fetch_offsets("g", None)[1][("t", 0)].offset == 9
    assert commit(coordinator, "other", generation=4, member="x") == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert commit(coordinator, metadata="x" * 5000) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(coordinator, "g2", metadata="x" * 5000) == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    offsets = [v.offset for k, v in store.decoded() if isinstance(k, OffsetKey)]
    assert offsets == [5, 9]


def test_a_commit_is_in_the_cache_only_after_its_append_and_never_when_it_fails():
    coordinator, _, store = make()
    store.hold = True
    answer = Answer()
    coordinator.commit_offsets("g", -1, "", None, -1, [OffsetCommit("t", 0, 7, -1, None)], answer)
    assert answer.values == [] and coordinator.fetch_offsets("g", [("t", 0)])[1][("t", 0)] is None
    partition, records, done = store.held.pop()
    done(None)
    assert answer.one == {("t", 0): ErrorCode.NONE}
    assert coordinator.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 7
    store.hold, store.fail = False, StoreError(ErrorCode.KAFKA_STORAGE_ERROR, "disk full")
    assert commit(coordinator, offsets=((("t", 0), 8),)) == {("t", 0): ErrorCode.NOT_COORDINATOR}  # as Kafka
    store.fail = StoreError(ErrorCode.MESSAGE_TOO_LARGE, "too many offsets")
    assert commit(coordinator, offsets=((("t", 0), 8),)) == {("t", 0): ErrorCode.INVALID_COMMIT_OFFSET_SIZE}
    assert coordinator.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 7


def test_groups_are_loading_until_their_partition_is_replayed_and_then_come_back_whole():
    coordinator, clock, store = make()
    a_join = join(coordinator, instance="static-a")
    delays(coordinator, clock, 1)
    a = a_join.one.member_id
    sync_all(coordinator, [a], 1)
    commit(coordinator, generation=1, member=a, offsets=((("t", 0), 11), (("t", 1), 12)))
    commit(coordinator, "gone")
    assert coordinator.delete_group("gone", Answer()) is None
    config = coordinator.config
    restarted = GroupCoordinator(config, Store(), clock)
    assert join(restarted).one.error == ErrorCode.NOT_COORDINATOR  # leads no partition yet
    for partition in range(config.offsets_topic_partitions):
        restarted.begin_loading(partition)
    assert join(restarted).one.error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert restarted.fetch_offsets("g", None)[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    for partition in range(config.offsets_topic_partitions):
        restarted.install(partition, replay(store.records.get(partition, [])))
    group = restarted.groups["g"]
    assert group.state == GroupState.STABLE and group.generation == 1 and list(group.members) == [a]
    assert {p: v.offset for p, v in group.offsets.items()} == {("t", 0): 11, ("t", 1): 12}
    assert "gone" not in restarted.groups
    assert restarted.heartbeat("g", 1, a, "static-a") == ErrorCode.NONE
    advance(restarted, clock, SESSION + 1)  # a loaded member must still heartbeat
    assert restarted.groups["g"].members == {}


def test_offsets_of_an_empty_group_expire_after_the_retention_as_tombstones():
    config = GroupConfig(
        initial_rebalance_delay_ms=0,
        min_session_timeout_ms=1000,
        offsets_topic_partitions=1,
        offsets_retention_ms=60_000,
        offsets_retention_check_interval_ms=1_000,
    )
    coordinator, clock, store = make(config)
    commit(coordinator, offsets=((("t", 0), 1),))
    advance(coordinator, clock, 30_000)
    commit(coordinator, offsets=((("t", 1), 2),))
    advance(coordinator, clock, 31_000)  # ("t", 0) is 61 s old
    assert set(coordinator.groups["g"].offsets) == {("t", 1)}
    advance(coordinator, clock, 30_000)
    assert "g" not in coordinator.groups
    tombstones = [k for k, v in store.decoded() if v is None]
    assert tombstones == [OffsetKey("g", "t", 0), OffsetKey("g", "t", 1), GroupKey("g")]


def test_a_deleted_topic_takes_every_groups_offsets_of_it_and_an_empty_group_left_without_any():
    coordinator, clock, store = make()
    [a] = first_generation(coordinator, clock)
    sync_all(coordinator, [a], 1)
    commit(coordinator, generation=1, member=a, offsets=((("gone", 0), 4), (("gone", 1), 5)))
    commit(coordinator, "mixed", offsets=((("gone", 0), 1), (("kept", 0), 2)))
    commit(coordinator, "only", offsets=((("gone", 2), 3),))
    coordinator.remove_topics({"gone"})
    assert coordinator.groups["g"].offsets == {} and coordinator.groups["g"].state == GroupState.STABLE
    assert set(coordinator.groups["mixed"].offsets) == {("kept", 0)}
    assert "only" not in coordinator.groups  # Empty and nothing left: deleted, as Kafka's cleanup does
    tombstones = {k for k, v in store.decoded() if v is None}
    assert tombstones == {
        OffsetKey("g", "gone", 0),
        OffsetKey("g", "gone", 1),
        OffsetKey("mixed", "gone", 0),
        OffsetKey("only", "gone", 2),
        GroupKey("only"),
    }


def test_delete_group_and_offset_delete():
    coordinator, clock, store = make()
    answer = Answer()
    coordinator.delete_group("nobody", answer)
    assert answer.one == ErrorCode.GROUP_ID_NOT_FOUND
    [a] = first_generation(coordinator, clock)
    answer = Answer()
    coordinator.delete_group("g", answer)
    assert answer.one == ErrorCode.NON_EMPTY_GROUP
    commit(coordinator, "simple", offsets=((("t", 0), 1), (("u", 0), 2)))
    answer = Answer()
    coordinator.delete_offsets("simple", [("t", 0), ("t", 9)], answer)
    assert answer.one == (ErrorCode.NONE, {("t", 0): ErrorCode.NONE, ("t", 9): ErrorCode.NONE})
    assert set(coordinator.groups["simple"].offsets) == {("u", 0)}
    answer = Answer()
    coordinator.delete_group("simple", answer)
    assert answer.one == ErrorCode.NONE and "simple" not in coordinator.groups
    assert [k for k, v in store.decoded() if v is None][-1] == GroupKey("simple")


def test_group_state_changes_follow_kafkas_rules():
    group = Group("g")
    try:
        group.transition(GroupState.STABLE, 0)
    except AssertionError as exc:
        assert "Empty -> Stable" in str(exc)
    else:
        raise AssertionError("Empty -> Stable was allowed")


def test_groups_of_a_partition_led_elsewhere_now_are_unloaded_and_their_waiting_members_told_not_coordinator():
    coordinator, clock, store = make()
    first = join(coordinator, group="moving").one  # MEMBER_ID_REQUIRED, with the id to join with
    waiting = join(coordinator, member_id=first.member_id, group="moving")
    assert waiting.values == []  # waits for the initial rebalance delay
    partition = coordinator.offsets.partition_of("moving")
    coordinator.unload(partition)
    assert waiting.one.error == ErrorCode.NOT_COORDINATOR
    assert "moving" not in coordinator.groups
    assert coordinator.heartbeat("moving", 1, first.member_id, None) == ErrorCode.NOT_COORDINATOR
    assert coordinator.fetch_offsets("moving", None)[0] == ErrorCode.NOT_COORDINATOR
    other = next(g for g in "abcdefgh" if coordinator.offsets.partition_of(g) != partition)
    assert join(coordinator, group=other).one.error == ErrorCode.MEMBER_ID_REQUIRED  # still coordinated here


# -- offsets committed in a transaction ------------------------------------------------------


def test_transactional_offsets_wait_for_the_commit_marker():
    coordinator, _, store = make()
    partition = coordinator.offsets.partition_of("g")
    results = coordinator.txn_commit_offsets("g", 7, [OffsetCommit("t", 0, 42, -1, "m")])
    assert results == {("t", 0): ErrorCode.NONE}
    assert coordinator.fetch_offsets("g", [("t", 0)]) == (ErrorCode.NONE, {("t", 0): None})
    assert coordinator.has_pending_txn_offsets("g")
    coordinator.complete_txn_offsets(partition + 1, 7, True)  # another partition's marker: still pending
    assert coordinator.has_pending_txn_offsets("g")
    coordinator.complete_txn_offsets(partition, 7, True)
    _, offsets = coordinator.fetch_offsets("g", [("t", 0)])
    assert (offsets[("t", 0)].offset, offsets[("t", 0)].metadata) == (42, "m")
    assert not coordinator.has_pending_txn_offsets("g") and coordinator.pending_txn_offsets == {}


def test_transactional_offsets_are_dropped_on_abort():
    coordinator, _, store = make()
    coordinator.txn_commit_offsets("g", 7, [OffsetCommit("t", 0, 42, -1, None)])
    coordinator.complete_txn_offsets(coordinator.offsets.partition_of("g"), 7, False)
    assert coordinator.fetch_offsets("g", [("t", 0)]) == (ErrorCode.NONE, {("t", 0): None})
    assert store.records == {}


def test_transactional_offsets_refused():
    coordinator, _, _ = make()
    too_long = "x" * (coordinator.config.offset_metadata_max_bytes + 1)
    results = coordinator.txn_commit_offsets("g", 7, [OffsetCommit("t", 0, 1, -1, too_long)])
    assert results == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert not coordinator.has_pending_txn_offsets("g")
    assert coordinator.txn_commit_offsets("", 7, [OffsetCommit("t", 0, 1, -1, None)]) == {
        ("t", 0): ErrorCode.INVALID_GROUP_ID
    }
    coordinator.unload(coordinator.offsets.partition_of("g"))
    assert coordinator.txn_commit_offsets("g", 7, [OffsetCommit("t", 0, 1, -1, None)]) == {
        ("t", 0): ErrorCode.NOT_COORDINATOR
    }
