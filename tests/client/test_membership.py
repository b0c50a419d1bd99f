"""``GroupMember`` against librdkafka's mock cluster (a real group coordinator): a member that stops
heartbeating for longer than its session timeout is dropped, its late commit is refused (so it
cannot overwrite what the partitions' next owner commits), and it joins again as a new member."""

import time

import confluent_kafka
import pytest

from broker.client import GroupMember, KafkaClient
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(120)

SESSION_MS = 6000


def test_a_member_silent_past_its_session_is_dropped_and_its_late_commit_refused(mock_cluster, request):
    topic, group = f"membership-{request.node.name}"[:60], f"group-{request.node.name}"[:60]
    producer = confluent_kafka.Producer({"bootstrap.servers": mock_cluster.bootstrap})
    producer.produce(topic, b"v", partition=0)
    assert producer.flush(20) == 0
    del producer  # gone before the module's mock cluster is (or it logs the refused reconnections)
    with KafkaClient(mock_cluster.bootstrap, timeout=20) as client:
        member = GroupMember(client, group, [topic], session_timeout_ms=SESSION_MS)
        assigned = member.join()
        assert assigned == {topic: [0, 1, 2, 3]} and member.leader and member.protocol == "range"
        first_id = member.member_id
        assert member.commit({(topic, 0): 1}) and member.committed({topic: [0]}) == {(topic, 0): 1}

        time.sleep(SESSION_MS / 1000 + 3)  # no heartbeat: the coordinator expires the member
        assert not member.commit({(topic, 0): 2})  # refused: the member is gone
        assert member.committed({topic: [0]}) == {(topic, 0): 1}
        assert member.member_id == ""  # forgotten, so the next join asks for a new id
        wait_for(lambda: not member.alive(), 10, what="the heartbeat that says the member must rejoin")

        assert member.join() == {topic: [0, 1, 2, 3]}
        assert member.member_id not in ("", first_id)
        assert member.commit({(topic, 0): 2}) and member.committed({topic: [0]}) == {(topic, 0): 2}
        member.leave()
        assert member.member_id == ""
