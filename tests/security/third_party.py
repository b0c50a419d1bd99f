"""A produce-then-consume round trip through each third-party client, with its own spelling of
the security settings: ``Security(protocol, ca, mechanism, username, password)``. A failure is the
client's own exception (or a timeout error): tests check it names the problem. ``kcat`` runs
Debian's kcat the same way, when it is installed."""

import asyncio
import shutil
import ssl
import subprocess
import time
import uuid
from typing import NamedTuple

WAIT_SECONDS = 20


class Security(NamedTuple):
    protocol: str = "PLAINTEXT"
    ca: str | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None


def confluent(bootstrap: str, topic: str, security: Security, wait: float = WAIT_SECONDS) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    settings = {"bootstrap.servers": bootstrap, "security.protocol": security.protocol, "log_level": 0}
    if security.ca:
        settings["ssl.ca.location"] = security.ca
    if security.mechanism:
        settings.update(
            {
                "sasl.mechanisms": security.mechanism,
                "sasl.username": security.username,
                "sasl.password": security.password,
            }
        )
    errors, reports = [], []
    producer = Producer({**settings, "message.timeout.ms": int(wait * 1000), "error_cb": errors.append})
    producer.produce(topic, b"value-confluent", on_delivery=lambda err, msg: reports.append(err))
    deadline = time.monotonic() + wait
    while not reports and not errors and time.monotonic() < deadline:
        producer.poll(0.05)
    if errors and not reports:
        raise KafkaException(errors[0])  # the first connection error, e.g. a failed handshake
    if not reports or reports[0] is not None:
        raise TimeoutError(f"not delivered: {reports}")
    consumer = Consumer({**settings, "group.id": "security", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        message = consumer.poll(wait)
        if message is None or message.error():
            raise TimeoutError(f"nothing consumed: {message and message.error()}")
        return [message.value()]
    finally:
        consumer.close()


def kafka_python(bootstrap: str, topic: str, security: Security, wait: float = WAIT_SECONDS) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    settings = {
        "bootstrap_servers": bootstrap,
        "security_protocol": security.protocol,
        "request_timeout_ms": int(wait * 1000),
        "bootstrap_timeout_ms": int(wait * 1000),
    }
    if security.ca:
        settings["ssl_cafile"] = security.ca
    if security.mechanism:
        settings.update(
            {
                "sasl_mechanism": security.mechanism,
                "sasl_plain_username": security.username,
                "sasl_plain_password": security.password,
            }
        )
    producer = KafkaProducer(**settings, max_block_ms=int(wait * 1000))
    try:
        producer.send(topic, b"value-kafka-python", partition=0).get(wait)
    finally:
        producer.close(5)
    consumer = KafkaConsumer(**settings, consumer_timeout_ms=WAIT_SECONDS * 1000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        return [next(iter(consumer)).value]
    finally:
        consumer.close()


def aiokafka(bootstrap: str, topic: str, security: Security, wait: float = WAIT_SECONDS) -> list[bytes]:
    return asyncio.run(asyncio.wait_for(_aiokafka(bootstrap, topic, security), wait * 2))


async def _aiokafka(bootstrap: str, topic: str, security: Security) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    settings = {
        "bootstrap_servers": bootstrap,
        "security_protocol": security.protocol,
        "request_timeout_ms": WAIT_SECONDS * 1000,
    }
    if security.ca:
        settings["ssl_context"] = ssl.create_default_context(cafile=security.ca)
    if security.mechanism:
        settings.update(
            {
                "sasl_mechanism": security.mechanism,
                "sasl_plain_username": security.username,
                "sasl_plain_password": security.password,
            }
        )
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"value-aiokafka", partition=0)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(**settings, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        return [(await consumer.getone()).value]
    finally:
        await consumer.stop()


KCAT = shutil.which("kcat")  # Debian's kcat links the system librdkafka (2.0 on bookworm); .ci/run installs it


def kcat(bootstrap: str, topic: str, security: Security, wait: float = WAIT_SECONDS) -> list[bytes]:
    """Produce one record with ``kcat -P`` then read it back with ``kcat -C``; a failure raises with kcat's stderr."""
    settings = ["-b", bootstrap, "-X", f"security.protocol={security.protocol}", "-m", str(int(wait))]
    if security.ca:
        settings += ["-X", f"ssl.ca.location={security.ca}"]
    if security.mechanism:
        settings += [
            "-X",
            f"sasl.mechanisms={security.mechanism}",
            "-X",
            f"sasl.username={security.username}",
            "-X",
            f"sasl.password={security.password}",
        ]
    produce, consume = ["-P", "-p", "0"], ["-C", "-p", "0", "-o", "beginning", "-c", "1", "-e"]
    for command, given in ((produce, b"value-kcat\n"), (consume, None)):
        done = subprocess.run(
            [KCAT, *settings, "-t", topic, *command], input=given, capture_output=True, timeout=wait * 3
        )
        if done.returncode != 0:
            raise RuntimeError(f"kcat {command[0]} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.splitlines()


CLIENTS = {"confluent": confluent, "kafka-python": kafka_python, "aiokafka": aiokafka}


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
