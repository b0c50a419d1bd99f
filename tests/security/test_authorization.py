"""Authorization on a real broker process with ``authorizer.class.name`` set: the three
third-party clients refused a produce, a fetch, a group join, a topic creation and a describe,
each with Kafka's error; prefixed ACLs, deny beating allow, super users,
``allow.everyone.if.no.acl.found`` both ways, ACLs surviving a restart, Metadata v8's authorized
operations; the ACL APIs through confluent-kafka's and kafka-python's admin clients; WriteTxnMarkers
refused without ClusterAction; over
SASL_SSL with a SCRAM user; a client certificate's subject as a super user; idempotent producers'
InitProducerId; ``kafkalog acls`` end to end; and the project's commands saying that access was
denied, naming the principal and the operation, never that a topic it may not describe is missing.

Principals: PLAIN users ``admin`` (a super user), ``alice`` and ``bob`` on the SASL_PLAINTEXT
listener, the SCRAM user ``carol`` on SASL_SSL, and ``User:ANONYMOUS`` on PLAINTEXT. Each test
uses its own topic and group names, so the module's ACLs do not interfere.
"""

import asyncio
import json
import time
import uuid

import pytest

from broker.client import AclClient, KafkaClient, KafkaError, NewTopic, from_settings
from broker.protocol.apis import ApiKey
from broker.security.acls import Acl, AclFilter, Operation, PatternType, Permission, ResourceType, operations_bits

from ..conftest import FAST_GROUPS
from ..server.wire import connect
from ..transactions import write_txn_marker
from .conftest import kafkalog_users

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:admin"}
PLAIN_USERS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";'
)
PLAINTEXT, SASL_PLAINTEXT, SASL_SSL = 0, 1, 2
WAIT = 20
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED = 31, 54
CLIENT_NAMES = ["confluent", "kafka-python", "aiokafka"]
ASSIGN_ONLY_GROUP = "assign-only"


def _settings(certificates=None) -> dict:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.jaas.config": PLAIN_USERS,
        "ssl.keystore.location": certificates.server_pem,
        "num.partitions": "1",
        **AUTHORIZER,
        **FAST_GROUPS,
    }


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certificates):
    from broker.embedded import EmbeddedBroker

    log_dir = tmp_path_factory.mktemp("authorization") / "log"
    added = kafkalog_users(
        "add", "carol", "--mechanism", "SCRAM-SHA-512", "--password", "carol-secret", "--log-dir", str(log_dir)
    )
    assert added.returncode == 0, added.stderr
    broker = EmbeddedBroker(log_dir, _settings(certificates)).start()
    readers_group(broker)
    yield broker
    broker.kill()


def user(name: str) -> dict:
    """librdkafka's settings for a PLAIN user on the SASL_PLAINTEXT listener."""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": name,
        "sasl.password": f"{name}-secret",
    }


def readers_group(broker) -> None:
    """The group the confluent helper's assign()-only consumers name (librdkafka looks up the
    coordinator of its group.id even then): open to everyone."""
    grant(broker, acl(ResourceType.GROUP, ASSIGN_ONLY_GROUP, Operation.READ, principal="User:*"))


def project_client(broker, name: str = "admin") -> KafkaClient:
    return KafkaClient(broker.bootstrap_of(SASL_PLAINTEXT), timeout=WAIT, security=from_settings(user(name)))


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def grant(broker, *acls: Acl) -> None:
    with project_client(broker) as admin:
        AclClient(admin).create(list(acls))


def acl(kind, name, operation, principal="User:alice", permission=Permission.ALLOW, pattern=PatternType.LITERAL):
    return Acl.checked(kind, name, pattern, principal, "*", operation, permission)


def topic_with_a_record(broker, topic: str) -> None:
    with project_client(broker) as admin:
        assert admin.create_topics([NewTopic(topic, 1)]) == {topic: None}
        admin.produce(topic, 0, [(b"k", b"stored")])


# --- each client's produce, fetch and group join, returning the error code it reports ---------------


def produce_error(client: str, bootstrap: str, settings: dict, topic: str) -> int | None:
    """The error code the client reports for one produce (None: delivered)."""
    if client == "confluent":
        from confluent_kafka import Producer

        reports = []
        producer = Producer(
            {"bootstrap.servers": bootstrap, **settings, "message.timeout.ms": WAIT * 1000, "log_level": 0}
        )
        producer.produce(topic, b"v", partition=0, on_delivery=lambda err, msg: reports.append(err))
        producer.flush(WAIT)
        assert reports, "no delivery report"
        return None if reports[0] is None else reports[0].code()
    if client == "kafka-python":
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        producer = KafkaProducer(
            bootstrap_servers=bootstrap, **_kafka_python(settings), max_block_ms=WAIT * 1000, retries=0
        )
        try:
            producer.send(topic, b"v", partition=0).get(WAIT)
            return None
        except KafkaError as exc:
            return exc.errno
        finally:
            producer.close(5)
    return asyncio.run(asyncio.wait_for(_aiokafka_produce(bootstrap, settings, topic), WAIT * 2))


async def _aiokafka_produce(bootstrap, settings, topic):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **_kafka_python(settings))
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"v", partition=0)
        return None
    except KafkaError as exc:
        return exc.errno
    finally:
        await producer.stop()


def fetch_error(client: str, bootstrap: str, settings: dict, topic: str) -> int | None:
    """The error code the client reports reading partition 0 from offset 0 (None: a record came)."""
    if client == "confluent":
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": bootstrap, **settings, "group.id": ASSIGN_ONLY_GROUP, "log_level": 0})
        consumer.assign([TopicPartition(topic, 0, 0)])
        return _confluent_outcome(consumer)
    if client == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, **_kafka_python(settings))
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        return _kafka_python_outcome(consumer)
    return asyncio.run(asyncio.wait_for(_aiokafka_fetch(bootstrap, settings, topic), WAIT * 2))


async def _aiokafka_fetch(bootstrap, settings, topic):
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, **_kafka_python(settings))
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        await consumer.getone()
        return None
    except KafkaError as exc:
        return exc.errno
    finally:
        await consumer.stop()


def join_error(client: str, bootstrap: str, settings: dict, topic: str, group: str) -> int | None:
    """The error code the client reports subscribing to the topic in the group."""
    if client == "confluent":
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                **settings,
                "group.id": group,
                "log_level": 0,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        return _confluent_outcome(consumer)
    if client == "kafka-python":
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest", **_kafka_python(settings)
        )
        return _kafka_python_outcome(consumer)
    return asyncio.run(asyncio.wait_for(_aiokafka_join(bootstrap, settings, topic, group), WAIT * 2))


async def _aiokafka_join(bootstrap, settings, topic, group):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest", **_kafka_python(settings)
    )
    try:
        await consumer.start()
        await consumer.getone()
        return None
    except KafkaError as exc:
        return exc.errno
    finally:
        await consumer.stop()


def _confluent_outcome(consumer) -> int | None:
    """The error code of the consumer's first event, None for a record (the consumer is closed)."""
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                return message.error().code() if message.error() else None
        raise TimeoutError("neither a record nor an error")
    finally:
        consumer.close()


def _kafka_python_outcome(consumer) -> int | None:
    """The same for a kafka-python consumer, whose errors are raised by ``poll``."""
    from kafka.errors import KafkaError

    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if consumer.poll(500):
                return None
        raise TimeoutError("neither a record nor an error")
    except KafkaError as exc:
        return exc.errno
    finally:
        consumer.close()


def _kafka_python(settings: dict) -> dict:
    """kafka-python's and aiokafka's spelling of librdkafka's settings."""
    spelled = {"security_protocol": settings.get("security.protocol", "PLAINTEXT")}
    if "sasl.mechanism" in settings:
        spelled.update(
            sasl_mechanism=settings["sasl.mechanism"],
            sasl_plain_username=settings["sasl.username"],
            sasl_plain_password=settings["sasl.password"],
        )
    return spelled


# --- the tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_a_denied_produce_is_topic_authorization_failed(secured, client):
    topic = unique("no-write")
    topic_with_a_record(secured, topic)
    grant(secured, acl(ResourceType.TOPIC, topic, Operation.READ))  # may describe and read, not write
    assert (
        produce_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("alice"), topic) == TOPIC_AUTHORIZATION_FAILED
    )
    grant(secured, acl(ResourceType.TOPIC, topic, Operation.WRITE))  # seen at once, no restart
    assert produce_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("alice"), topic) is None


@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_a_denied_fetch_is_topic_authorization_failed(secured, client):
    topic = unique("no-read")
    topic_with_a_record(secured, topic)
    grant(secured, acl(ResourceType.TOPIC, topic, Operation.WRITE))
    assert fetch_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("alice"), topic) == TOPIC_AUTHORIZATION_FAILED
    grant(secured, acl(ResourceType.TOPIC, topic, Operation.READ))
    assert fetch_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("alice"), topic) is None


@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_a_denied_group_join_is_group_authorization_failed(secured, client):
    topic, group = unique("joined"), unique("group")
    topic_with_a_record(secured, topic)
    # Describe on the group finds the coordinator; joining needs Read on it
    grant(secured, acl(ResourceType.TOPIC, topic, Operation.READ), acl(ResourceType.GROUP, group, Operation.DESCRIBE))
    assert (
        join_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("alice"), topic, group)
        == GROUP_AUTHORIZATION_FAILED
    )
    grant(secured, acl(ResourceType.GROUP, group, Operation.READ))
    assert join_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("alice"), topic, group) is None


def test_a_denied_topic_creation(secured):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import NewTopic as ConfluentTopic
    from kafka.admin import KafkaAdminClient
    from kafka.errors import TopicAuthorizationFailedError

    refused = unique("refused")
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_of(SASL_PLAINTEXT), **user("alice")})
    with pytest.raises(KafkaException) as failure:
        admin.create_topics([ConfluentTopic(refused, 1)])[refused].result(WAIT)
    assert failure.value.args[0].code() == TOPIC_AUTHORIZATION_FAILED
    kp_admin = KafkaAdminClient(bootstrap_servers=secured.bootstrap_of(SASL_PLAINTEXT), **_kafka_python(user("alice")))
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            kp_admin.create_topics({refused: {"num_partitions": 1}})
    finally:
        kp_admin.close()
    allowed = unique("mine")  # a prefixed Create on the topic (not the cluster) is enough
    grant(secured, acl(ResourceType.TOPIC, allowed[:-4], Operation.CREATE, pattern=PatternType.PREFIXED))
    admin.create_topics([ConfluentTopic(allowed, 1)])[allowed].result(WAIT)
    with project_client(secured) as super_user:
        assert allowed in super_user.topics() and refused not in super_user.topics()


def test_metadata_hides_the_topics_a_principal_may_not_describe(secured):
    from confluent_kafka.admin import AdminClient

    visible, hidden = unique("visible"), unique("hidden")
    for topic in (visible, hidden):
        topic_with_a_record(secured, topic)
    grant(secured, acl(ResourceType.TOPIC, visible, Operation.DESCRIBE))
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_of(SASL_PLAINTEXT), **user("alice")})
    listed = admin.list_topics(timeout=WAIT).topics
    assert visible in listed and hidden not in listed
    named = admin.list_topics(hidden, timeout=WAIT).topics[hidden]
    assert named.error is not None and named.error.code() == TOPIC_AUTHORIZATION_FAILED
    anonymous = AdminClient({"bootstrap.servers": secured.bootstrap_of(PLAINTEXT)}).list_topics(timeout=WAIT)
    assert visible not in anonymous.topics and hidden not in anonymous.topics  # allow.everyone... is false


def test_metadata_v8_and_describe_groups_v3_answer_the_principals_authorized_operations(secured):
    topic = unique("operations")
    topic_with_a_record(secured, topic)
    grant(
        secured,
        acl(ResourceType.TOPIC, topic, Operation.WRITE),
        acl(ResourceType.CLUSTER, "kafka-cluster", Operation.IDEMPOTENT_WRITE),
    )
    with project_client(secured, "alice") as alice:
        [broker_id] = alice.metadata([topic]).brokers
        response = alice.request(
            broker_id,
            ApiKey.METADATA,
            {
                "topics": [{"name": topic}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": True,
                "include_topic_authorized_operations": True,
            },
        )
        group = unique("described")
        grant(secured, acl(ResourceType.GROUP, group, Operation.DELETE))
        described = alice.request(
            broker_id, ApiKey.DESCRIBE_GROUPS, {"groups": [group], "include_authorized_operations": True}
        )
    [answered] = response["topics"]
    assert answered["topic_authorized_operations"] == operations_bits({Operation.WRITE, Operation.DESCRIBE})
    assert response["cluster_authorized_operations"] == operations_bits({Operation.IDEMPOTENT_WRITE})
    [group_answer] = described["groups"]
    assert group_answer["error_code"] == 0
    assert group_answer["authorized_operations"] == operations_bits({Operation.DELETE, Operation.DESCRIBE})


def test_prefixed_acls_and_deny_beating_allow(secured):
    prefix = unique("etl") + "."
    inside, outside, denied = prefix + "orders", unique("elsewhere"), prefix + "secret"
    for topic in (inside, outside, denied):
        topic_with_a_record(secured, topic)
    grant(
        secured,
        acl(ResourceType.TOPIC, prefix, Operation.ALL, principal="User:*", pattern=PatternType.PREFIXED),
        acl(ResourceType.TOPIC, denied, Operation.WRITE, permission=Permission.DENY),
    )
    bootstrap = secured.bootstrap_of(SASL_PLAINTEXT)
    assert produce_error("confluent", bootstrap, user("alice"), inside) is None
    assert produce_error("confluent", bootstrap, user("alice"), outside) == TOPIC_AUTHORIZATION_FAILED
    assert produce_error("confluent", bootstrap, user("alice"), denied) == TOPIC_AUTHORIZATION_FAILED
    assert produce_error("confluent", bootstrap, user("bob"), denied) is None  # the deny is alice's alone
    assert fetch_error("confluent", bootstrap, user("alice"), denied) is None  # only Write is denied


@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_a_super_user_needs_no_acl(secured, client):
    topic = unique("super")
    topic_with_a_record(secured, topic)
    assert produce_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("admin"), topic) is None
    assert fetch_error(client, secured.bootstrap_of(SASL_PLAINTEXT), user("admin"), topic) is None


def test_the_acl_apis_through_confluent_kafkas_admin_client(secured):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
    )
    from confluent_kafka.admin import ResourceType as ConfluentResource

    topic = unique("confluent-acl")
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_of(SASL_PLAINTEXT), **user("admin")})
    bindings = [
        AclBinding(
            ConfluentResource.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ConfluentResource.TOPIC,
            topic,
            ResourcePatternType.PREFIXED,
            "User:bob",
            "127.0.0.1",
            AclOperation.WRITE,
            AclPermissionType.DENY,
        ),
    ]
    for future in admin.create_acls(bindings).values():
        assert future.result(WAIT) is None
    every = AclBindingFilter(
        ConfluentResource.TOPIC, topic, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert sorted(admin.describe_acls(every).result(WAIT)) == sorted(bindings)
    literal = AclBindingFilter(
        ConfluentResource.TOPIC, topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert admin.delete_acls([literal])[literal].result(WAIT) == [bindings[0]]
    assert admin.describe_acls(every).result(WAIT) == [bindings[1]]
    refused = AdminClient({"bootstrap.servers": secured.bootstrap_of(SASL_PLAINTEXT), **user("alice")})
    # (librdkafka 2.16 gives DescribeAcls' top-level error as an empty list: kafka-python's test checks it)
    with pytest.raises(KafkaException) as failure:
        list(refused.create_acls(bindings[:1]).values())[0].result(WAIT)
    assert failure.value.args[0].code() == CLUSTER_AUTHORIZATION_FAILED


def test_the_acl_apis_through_kafka_pythons_admin_client(secured):
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KafkaPythonResource
    from kafka.errors import ClusterAuthorizationFailedError

    group = unique("kp-group")
    admin = KafkaAdminClient(bootstrap_servers=secured.bootstrap_of(SASL_PLAINTEXT), **_kafka_python(user("admin")))
    try:
        created = ACL(
            "User:alice",
            "*",
            ACLOperation.READ,
            ACLPermissionType.ALLOW,
            ResourcePattern(KafkaPythonResource.GROUP, group, ACLResourcePatternType.PREFIXED),
        )
        result = admin.create_acls([created])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        wanted = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KafkaPythonResource.GROUP, group, ACLResourcePatternType.MATCH),
        )
        acls, error = admin.describe_acls(wanted)
        assert [(a.principal, a.operation, a.resource_pattern.resource_name) for a in acls] == [
            ("User:alice", ACLOperation.READ, group)
        ]
        [(_, deleted, error)] = admin.delete_acls([wanted])
        assert len(deleted) == 1 and error.errno == 0
        assert admin.describe_acls(wanted)[0] == []
    finally:
        admin.close()
    refused = KafkaAdminClient(bootstrap_servers=secured.bootstrap_of(SASL_PLAINTEXT), **_kafka_python(user("alice")))
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            refused.describe_acls(wanted)
    finally:
        refused.close()


def test_the_acl_apis_are_security_disabled_without_an_authorizer(broker):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType
    from confluent_kafka.admin import ResourceType as ConfluentResource
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KafkaPythonResource
    from kafka.errors import SecurityDisabledError

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    binding = AclBinding(
        ConfluentResource.TOPIC,
        "t",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as failure:
        admin.create_acls([binding])[binding].result(WAIT)
    assert failure.value.args[0].code() == SECURITY_DISABLED
    kp_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(SecurityDisabledError):
            kp_admin.describe_acls(
                ACLFilter(
                    None,
                    None,
                    ACLOperation.ANY,
                    ACLPermissionType.ANY,
                    ResourcePatternFilter(KafkaPythonResource.ANY, None, ACLResourcePatternType.ANY),
                )
            )
    finally:
        kp_admin.close()


def test_authorization_over_sasl_ssl_with_a_scram_user(secured, certificates):
    topic = unique("scram")
    topic_with_a_record(secured, topic)
    grant(secured, acl(ResourceType.TOPIC, topic, Operation.READ, principal="User:carol"))
    carol = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "carol",
        "sasl.password": "carol-secret",
        "ssl.ca.location": certificates.ca_pem,
    }
    bootstrap = secured.bootstrap_of(SASL_SSL)
    assert fetch_error("confluent", bootstrap, carol, topic) is None
    assert produce_error("confluent", bootstrap, carol, topic) == TOPIC_AUTHORIZATION_FAILED


def test_allow_everyone_if_no_acl_found_both_ways(start_broker):
    broker = start_broker({**AUTHORIZER, "allow.everyone.if.no.acl.found": "true", "num.partitions": "1"})
    open_topic, named_topic = unique("open"), unique("named")
    # on PLAINTEXT everyone is User:ANONYMOUS: with no ACL on a topic, it may do everything there
    assert produce_error("confluent", broker.bootstrap, {}, open_topic) is None  # auto-created, then written
    assert fetch_error("confluent", broker.bootstrap, {}, open_topic) is None
    with KafkaClient(broker.bootstrap, timeout=WAIT) as anonymous:  # may alter the cluster's ACLs: none name it
        AclClient(anonymous).create([acl(ResourceType.TOPIC, named_topic, Operation.ALL, principal="User:bob")])
        anonymous.create_topics([NewTopic(named_topic, 1)])
    assert produce_error("confluent", broker.bootstrap, {}, named_topic) == TOPIC_AUTHORIZATION_FAILED


def test_acls_survive_a_restart(start_broker, tmp_path, certificates):
    settings = _settings(certificates)
    broker = start_broker(settings, log_dir=tmp_path / "kept")
    readers_group(broker)
    topic = unique("kept")
    topic_with_a_record(broker, topic)
    grant(
        broker,
        acl(ResourceType.TOPIC, topic, Operation.READ),
        acl(ResourceType.TOPIC, topic, Operation.WRITE, principal="User:*", permission=Permission.DENY),
    )
    assert broker.stop() == 0
    restarted = start_broker(settings, log_dir=tmp_path / "kept")
    bootstrap = restarted.bootstrap_of(SASL_PLAINTEXT)
    assert fetch_error("confluent", bootstrap, user("alice"), topic) is None
    assert produce_error("confluent", bootstrap, user("alice"), topic) == TOPIC_AUTHORIZATION_FAILED
    with project_client(restarted) as admin:
        assert (
            len(
                AclClient(admin).describe(
                    AclFilter.checked(
                        ResourceType.TOPIC, topic, PatternType.ANY, None, None, Operation.ANY, Permission.ANY
                    )
                )
            )
            == 2
        )


def command_config(tmp_path, name: str) -> str:
    path = tmp_path / f"{name}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{name}" password="{name}-secret";\n'
    )
    return str(path)


def test_kafkalog_acls_add_list_remove(secured, tmp_path):
    from confluent_kafka.admin import AdminClient

    from ..cli.support import kafkalog, one_line_error

    topic, group = unique("cli"), unique("cli-group")
    topic_with_a_record(secured, topic)
    connect = [
        "--bootstrap-server",
        secured.bootstrap_of(SASL_PLAINTEXT),
        "--command-config",
        command_config(tmp_path, "admin"),
    ]
    added = kafkalog(
        "acls",
        "add",
        *connect,
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Write",
        "--topic",
        topic,
        "--group",
        group,
        "--resource-pattern-type",
        "prefixed",
    )  # all checked before anything is sent: a group knows no Write
    one_line_error(added, 2, "kafkalog acls add: operation WRITE does not apply to a GROUP")
    added = kafkalog(
        "acls",
        "add",
        *connect,
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--topic",
        topic,
        "--group",
        group,
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines() == [
        f"added ALLOW User:alice from * to READ TOPIC {topic} (LITERAL)",
        f"added ALLOW User:alice from * to READ GROUP {group} (LITERAL)",
    ]
    added = kafkalog(
        "acls",
        "add",
        *connect,
        "--deny-principal",
        "User:bob",
        "--operation",
        "Read",
        "--topic",
        topic,
        "--host",
        "127.0.0.1",
    )
    assert added.stdout == f"added DENY User:bob from 127.0.0.1 to READ TOPIC {topic} (LITERAL)\n", added.stderr
    assert fetch_error("confluent", secured.bootstrap_of(SASL_PLAINTEXT), user("alice"), topic) is None
    listed = kafkalog("acls", "list", *connect, "--topic", topic)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert sorted(rows) == sorted(
        [
            ["TOPIC", topic, "LITERAL", "User:alice", "*", "READ", "ALLOW"],
            ["TOPIC", topic, "LITERAL", "User:bob", "127.0.0.1", "READ", "DENY"],
        ]
    )
    listed = kafkalog("acls", "list", *connect, "--topic", topic, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(listed.stdout.splitlines()) == sorted(
        json.dumps(
            {
                "resourceType": "TOPIC",
                "name": topic,
                "patternType": "LITERAL",
                "principal": principal,
                "host": host,
                "operation": "READ",
                "permission": permission,
            }
        )
        for principal, host, permission in (("User:alice", "*", "ALLOW"), ("User:bob", "127.0.0.1", "DENY"))
    )
    removed = kafkalog("acls", "remove", *connect, "--topic", topic, "--allow-principal", "User:alice")
    assert removed.returncode == 0 and removed.stdout.splitlines() == [
        f"removed ALLOW User:alice from * to READ TOPIC {topic} (LITERAL)"
    ], removed.stderr
    named = (
        AdminClient({"bootstrap.servers": secured.bootstrap_of(SASL_PLAINTEXT), **user("alice")})
        .list_topics(topic, timeout=WAIT)
        .topics[topic]
    )  # without Read, no Describe: the topic is hidden from alice again
    assert named.error is not None and named.error.code() == TOPIC_AUTHORIZATION_FAILED
    as_alice = [
        "--bootstrap-server",
        secured.bootstrap_of(SASL_PLAINTEXT),
        "--command-config",
        command_config(tmp_path, "alice"),
    ]
    refused = kafkalog(
        "acls", "add", *as_alice, "--allow-principal", "User:alice", "--operation", "All", "--topic", "*"
    )
    assert "CLUSTER_AUTHORIZATION_FAILED" in one_line_error(refused, 1, "kafkalog acls add: ")
    bad = kafkalog("acls", "add", *connect, "--allow-principal", "alice", "--operation", "Read", "--topic", topic)
    assert "User:<name>" in one_line_error(bad, 2, "kafkalog acls add: principal 'alice'")
    bad = kafkalog("acls", "add", *connect, "--allow-principal", "User:alice", "--operation", "Reed", "--topic", topic)
    assert "is not an operation" in one_line_error(bad, 2, "kafkalog acls add: argument --operation: ")


def test_kafkalog_commands_say_access_was_denied_naming_the_principal(secured, tmp_path):
    """A topic alice may not describe is denied to her, not missing (Kafka's Metadata answers
    TOPIC_AUTHORIZATION_FAILED for it, existing or not); with Describe only, each command names the
    operation it lacks; a group she may not describe is denied too."""
    from ..cli.support import kafkalog, one_line_error

    topic, group = unique("denied"), unique("denied-group")
    topic_with_a_record(secured, topic)
    as_alice = [
        "--bootstrap-server",
        secured.bootstrap_of(SASL_PLAINTEXT),
        "--command-config",
        command_config(tmp_path, "alice"),
    ]
    commands = {
        "produce": ["produce", topic],
        "consume": ["consume", topic],
        "topics describe": ["topics", "describe", topic],
        "delete-records": ["delete-records", topic, "--before", "0:1"],
        "cluster describe": ["cluster", "describe", "--topic", topic],
    }
    denied = f"access to topic {topic!r} denied for User:alice"
    for name, args in commands.items():
        one_line_error(
            kafkalog(*args, *as_alice, input="x\n"),
            1,
            f"kafkalog {name}: {denied} (needs DESCRIBE; TOPIC_AUTHORIZATION_FAILED)",
        )
    grant(secured, acl(ResourceType.TOPIC, topic, Operation.DESCRIBE))
    for name, needs in (
        ("produce", "WRITE"),
        ("consume", "READ"),
        ("topics describe", "DESCRIBE_CONFIGS"),
        ("delete-records", "DELETE"),
    ):
        one_line_error(
            kafkalog(*commands[name], *as_alice, input="x\n"),
            1,
            f"kafkalog {name}: {denied} (needs {needs}; TOPIC_AUTHORIZATION_FAILED)",
        )
    assert kafkalog(*commands["cluster describe"], *as_alice).returncode == 0
    one_line_error(
        kafkalog("consume", topic, "--group", group, *as_alice),
        1,
        f"kafkalog consume: access to group {group!r} denied for User:alice (GROUP_AUTHORIZATION_FAILED)",
    )


def test_kafkalog_acls_against_a_broker_without_an_authorizer(broker):
    from ..cli.support import kafkalog, one_line_error

    done = kafkalog("acls", "list", "--bootstrap-server", broker.bootstrap)
    assert "no authorizer is configured on this broker (authorizer.class.name) (SECURITY_DISABLED)" in one_line_error(
        done, 1, "kafkalog acls list: "
    )


def test_a_client_certificates_principal_and_idempotent_producers(start_broker, certificates):
    certificate_user = "User:CN=alice,OU=loads,O=data"  # the subject of the client certificate, as Kafka writes it
    broker = start_broker(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "num.partitions": "1",
            "ssl.keystore.location": certificates.server_pem,
            "ssl.client.auth": "required",
            "ssl.truststore.location": certificates.ca_pem,
            **AUTHORIZER,
            "super.users": f"User:admin;{certificate_user}",
        }
    )
    mtls = from_settings(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": certificates.ca_pem,
            "ssl.keystore.location": certificates.client_pem,
        }
    )
    topic = unique("mtls")
    with KafkaClient(broker.bootstrap_of(1), timeout=WAIT, security=mtls) as super_user:  # a super user by its subject
        super_user.create_topics([NewTopic(topic, 1)])
        assert super_user.init_producer_id().producer_id >= 0
        with KafkaClient(broker.bootstrap, timeout=WAIT) as anonymous:
            with pytest.raises(KafkaError) as failure:  # IdempotentWrite on the cluster, or Write on some topic
                anonymous.init_producer_id()
            assert failure.value.code == CLUSTER_AUTHORIZATION_FAILED
            assert str(failure.value) == (
                "access to the cluster denied for User:ANONYMOUS (needs IDEMPOTENT_WRITE on "
                "the cluster, or WRITE on a topic; CLUSTER_AUTHORIZATION_FAILED)"
            )
            AclClient(super_user).create([acl(ResourceType.TOPIC, topic, Operation.WRITE, principal="User:ANONYMOUS")])
            assert anonymous.init_producer_id().producer_id >= 0


def test_group_offsets_need_the_group_and_the_topic(secured):
    from broker.client import GroupClient

    readable, unreadable, group, other_group = unique("offsets"), unique("hidden"), unique("group"), unique("other")
    for topic in (readable, unreadable):
        topic_with_a_record(secured, topic)
    with project_client(secured) as admin:  # the super user commits to both topics, in two groups
        GroupClient(admin).commit(group, {(readable, 0): 1, (unreadable, 0): 1})
        GroupClient(admin).commit(other_group, {(readable, 0): 1})
    with project_client(secured, "alice") as alice:
        groups = GroupClient(alice)
        with pytest.raises(KafkaError) as failure:
            groups.committed(group, {readable: [0]})  # no Describe on the group: FindCoordinator is refused
        assert failure.value.code == GROUP_AUTHORIZATION_FAILED
        grant(
            secured,
            acl(ResourceType.GROUP, group, Operation.DESCRIBE),
            acl(ResourceType.TOPIC, readable, Operation.READ),
        )
        with pytest.raises(KafkaError) as failure:
            groups.commit(group, {(readable, 0): 2})  # it finds the coordinator, but may not Read the group
        assert failure.value.code == GROUP_AUTHORIZATION_FAILED
        grant(secured, acl(ResourceType.GROUP, group, Operation.READ))
        assert set(groups.committed(group)) == {(readable, 0)}  # all offsets: the hidden topic is left out
        with pytest.raises(KafkaError) as failure:
            groups.committed(group, {unreadable: [0]})
        assert failure.value.code == TOPIC_AUTHORIZATION_FAILED
        groups.commit(group, {(readable, 0): 2})
        with pytest.raises(KafkaError) as failure:
            groups.commit(group, {(unreadable, 0): 2})
        assert failure.value.code == TOPIC_AUTHORIZATION_FAILED
        listed = groups.list_groups()  # only the groups it may Describe (Read implies it)
        assert group in listed and other_group not in listed


def test_write_txn_markers_needs_cluster_action(secured):
    """A transaction marker is an inter-broker write: without ClusterAction (or Alter) on the
    cluster every partition is refused and nothing is written."""
    host, _, port = secured.bootstrap_of(PLAINTEXT).rpartition(":")
    with connect(host, int(port)) as anonymous:
        assert write_txn_marker(anonymous, unique("markers"), 0, 1000, 0, True) == CLUSTER_AUTHORIZATION_FAILED
