"""The adapters the interop matrix runs every test against, and ``clients()`` to narrow a test
down to the adapters that can do what it checks."""

import pytest

from .client_aiokafka import AiokafkaClient
from .client_confluent import ConfluentClient
from .client_kafka_python import KafkaPythonClient

ADAPTERS = {kind.name: kind for kind in (ConfluentClient, KafkaPythonClient, AiokafkaClient)}


def clients(where=lambda kind: True):
    """Parametrize the ``client`` fixture over the adapter classes for which ``where`` holds."""
    return pytest.mark.parametrize("client", [name for name, kind in ADAPTERS.items() if where(kind)], indirect=True)
