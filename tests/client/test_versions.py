"""Version negotiation: ApiVersions on connect, then the highest version both sides implement.

Against this project's broker (which advertises exactly the client's own table) the client must
pick Fetch 11, ListOffsets 5, Metadata 8; against librdkafka's mock (which advertises more) the
client's maxima; against a fake broker, lower advertised maxima, an ApiVersions fallback, and an
API with no common version.
"""

import pytest

from broker.client import KafkaClient
from broker.client.connection import API_VERSIONS_VERSION, BrokerConnection, UnsupportedVersionError
from broker.protocol.apis import APIS, ApiKey
from broker.records import batch, record_set
from broker.records.batch import Record
from broker.server.handlers import SERVED

from .fake_servers import FakeBroker

OUR_CHOICE = {ApiKey.FETCH: 11, ApiKey.LIST_OFFSETS: 5, ApiKey.METADATA: 8, ApiKey.API_VERSIONS: 2}


def _connect(address: str) -> BrokerConnection:
    host, port = address.rsplit(":", 1)
    return BrokerConnection(host, int(port), timeout=10)


def test_our_broker_negotiates_fetch_11_list_offsets_5_metadata_8(broker):
    connection = _connect(broker.bootstrap)
    try:
        assert connection.versions == {key: (api.min_version, api.max_version) for key, api in SERVED.items()}
        for api_key, version in OUR_CHOICE.items():
            assert connection.version_for(api_key) == version, api_key.name
    finally:
        connection.close()


def test_mock_negotiates_the_highest_common_version(mock_cluster):
    for address in mock_cluster.bootstrap.split(","):
        connection = _connect(address)
        try:
            for api_key in (ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.API_VERSIONS):
                low, high = connection.versions[api_key]
                ours = APIS[api_key]
                assert high >= ours.max_version, f"the mock advertises {api_key.name} {low}-{high}"
                assert connection.version_for(api_key) == min(high, ours.max_version) == OUR_CHOICE[api_key]
            # the mock has no CreateTopics: no common version, and the error says why
            assert ApiKey.CREATE_TOPICS not in connection.versions
            with pytest.raises(UnsupportedVersionError, match="does not implement CREATE_TOPICS"):
                connection.version_for(ApiKey.CREATE_TOPICS)
        finally:
            connection.close()


def _one_batch() -> bytes:
    return batch.build([Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i) for i in range(3)])


def test_lower_advertised_maxima_are_used_for_every_request():
    advertised = {
        ApiKey.API_VERSIONS: (0, 2),
        ApiKey.METADATA: (0, 4),
        ApiKey.FETCH: (4, 7),
        ApiKey.LIST_OFFSETS: (1, 2),
    }
    with FakeBroker("t", [_one_batch()], advertised=advertised) as fake:
        with KafkaClient(fake.bootstrap, timeout=5, retries=0) as client:
            result = client.fetch("t", 0, 0, 1 << 16)
            assert [r.offset for _, r in record_set.iter_user_records(result.records)] == [0, 1, 2]
            assert client.list_offsets({("t", 0): -1}) == {("t", 0): (3, -1)}
            assert client.partitions_of("t") == [0]
        assert set(fake.versions_used(ApiKey.METADATA)) == {4}
        assert fake.versions_used(ApiKey.FETCH) == [7]
        assert fake.versions_used(ApiKey.LIST_OFFSETS) == [2]


def test_api_versions_falls_back_to_the_version_the_broker_names():
    with FakeBroker("t", [_one_batch()], api_versions_max=1) as fake:
        connection = BrokerConnection("127.0.0.1", fake.port, timeout=5)
        try:
            assert connection.version_for(ApiKey.FETCH) == 11
        finally:
            connection.close()
        assert fake.versions_used(ApiKey.API_VERSIONS) == [API_VERSIONS_VERSION, 1]


def test_no_common_fetch_version_is_a_clear_error():
    advertised = {ApiKey.API_VERSIONS: (0, 2), ApiKey.METADATA: (0, 8), ApiKey.FETCH: (0, 3)}
    with FakeBroker("t", [_one_batch()], advertised=advertised) as fake:
        with KafkaClient(fake.bootstrap, timeout=5, retries=0) as client:
            with pytest.raises(UnsupportedVersionError, match=r"FETCH versions 0-3, this client 4-11"):
                client.fetch("t", 0, 0, 1 << 16)
        assert fake.versions_used(ApiKey.FETCH) == []
