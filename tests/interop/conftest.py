"""Fixtures of the interop matrix: ``client`` (each adapter in ``clients.ADAPTERS``, connected to
the module's broker), a distinct ``topic`` per test, and a check that the broker logged no warning
or error during any test."""

import pytest

from .clients import ADAPTERS
from .common import broker_log_checked, topic_name


@pytest.fixture(params=list(ADAPTERS))
def client(request, broker):
    return ADAPTERS[request.param](broker.bootstrap)


@pytest.fixture
def topic(request):
    return topic_name(request)


@pytest.fixture(autouse=True)
def no_broker_warnings(broker):
    with broker_log_checked(broker):
        yield
