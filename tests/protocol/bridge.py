"""Translation between this project's schema dicts and kafka-python 3's protocol objects.

kafka-python's classes are generated from Kafka 4.x message JSON, independently of
``broker.protocol``; a few fields carry other names there (``topic_data`` for Produce's
``topics``...), and authorized-operations fields are bit sets rather than INT32s. The helpers
here only rename and convert values: all encoding and decoding is done by each library itself.
"""

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.admin.transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka.protocol.schemas.fields.codecs import BitField

from broker.protocol.apis import APIS, ApiKey
from broker.protocol.types import Array, Struct

KAFKA_PYTHON = {
    ApiKey.PRODUCE: (ProduceRequest, ProduceResponse),
    ApiKey.FETCH: (FetchRequest, FetchResponse),
    ApiKey.LIST_OFFSETS: (ListOffsetsRequest, ListOffsetsResponse),
    ApiKey.METADATA: (MetadataRequest, MetadataResponse),
    ApiKey.API_VERSIONS: (ApiVersionsRequest, ApiVersionsResponse),
    ApiKey.CREATE_TOPICS: (CreateTopicsRequest, CreateTopicsResponse),
    ApiKey.DELETE_TOPICS: (DeleteTopicsRequest, DeleteTopicsResponse),
    ApiKey.INIT_PRODUCER_ID: (InitProducerIdRequest, InitProducerIdResponse),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    ApiKey.ADD_PARTITIONS_TO_TXN: (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    ApiKey.ADD_OFFSETS_TO_TXN: (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    ApiKey.END_TXN: (EndTxnRequest, EndTxnResponse),
    ApiKey.TXN_OFFSET_COMMIT: (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    ApiKey.DESCRIBE_TRANSACTIONS: (DescribeTransactionsRequest, DescribeTransactionsResponse),
    ApiKey.LIST_TRANSACTIONS: (ListTransactionsRequest, ListTransactionsResponse),
    ApiKey.DESCRIBE_CONFIGS: (DescribeConfigsRequest, DescribeConfigsResponse),
    ApiKey.DESCRIBE_LOG_DIRS: (DescribeLogDirsRequest, DescribeLogDirsResponse),
    ApiKey.DELETE_RECORDS: (DeleteRecordsRequest, DeleteRecordsResponse),
    ApiKey.ALTER_CONFIGS: (AlterConfigsRequest, AlterConfigsResponse),
    ApiKey.CREATE_PARTITIONS: (CreatePartitionsRequest, CreatePartitionsResponse),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    ApiKey.OFFSET_COMMIT: (OffsetCommitRequest, OffsetCommitResponse),
    ApiKey.OFFSET_FETCH: (OffsetFetchRequest, OffsetFetchResponse),
    ApiKey.FIND_COORDINATOR: (FindCoordinatorRequest, FindCoordinatorResponse),
    ApiKey.DESCRIBE_GROUPS: (DescribeGroupsRequest, DescribeGroupsResponse),
    ApiKey.LIST_GROUPS: (ListGroupsRequest, ListGroupsResponse),
    ApiKey.DELETE_GROUPS: (DeleteGroupsRequest, DeleteGroupsResponse),
    ApiKey.OFFSET_DELETE: (OffsetDeleteRequest, OffsetDeleteResponse),
    ApiKey.DESCRIBE_ACLS: (DescribeAclsRequest, DescribeAclsResponse),
    ApiKey.CREATE_ACLS: (CreateAclsRequest, CreateAclsResponse),
    ApiKey.DELETE_ACLS: (DeleteAclsRequest, DeleteAclsResponse),
    ApiKey.SASL_HANDSHAKE: (SaslHandshakeRequest, SaslHandshakeResponse),
    ApiKey.SASL_AUTHENTICATE: (SaslAuthenticateRequest, SaslAuthenticateResponse),
    ApiKey.JOIN_GROUP: (JoinGroupRequest, JoinGroupResponse),
    ApiKey.SYNC_GROUP: (SyncGroupRequest, SyncGroupResponse),
    ApiKey.HEARTBEAT: (HeartbeatRequest, HeartbeatResponse),
    ApiKey.LEAVE_GROUP: (LeaveGroupRequest, LeaveGroupResponse),
    ApiKey.WRITE_TXN_MARKERS: (WriteTxnMarkersRequest, WriteTxnMarkersResponse),
}

# our field name -> kafka-python's, per (API, "request" | "response")
RENAMES = {
    (ApiKey.PRODUCE, "request"): {"topics": "topic_data", "partitions": "partition_data"},
    (ApiKey.PRODUCE, "response"): {"partitions": "partition_responses"},
    (ApiKey.ADD_PARTITIONS_TO_TXN, "request"): {
        "transactional_id": "v3_and_below_transactional_id",
        "producer_id": "v3_and_below_producer_id",
        "producer_epoch": "v3_and_below_producer_epoch",
        "topics": "v3_and_below_topics",
    },
    (ApiKey.ADD_PARTITIONS_TO_TXN, "response"): {"results_by_topic": "results_by_topic_v3_and_below"},
    (ApiKey.METADATA, "response"): {
        "topic_authorized_operations": "authorized_operations",
        "cluster_authorized_operations": "authorized_operations",
    },
}


def kafka_python_class(key: ApiKey, kind: str):
    return KAFKA_PYTHON[key][0 if kind == "request" else 1]


def schema(key: ApiKey, kind: str) -> Struct:
    api = APIS[key]
    return api.request if kind == "request" else api.response


def cross_checked_versions(key: ApiKey) -> list[int]:
    """The advertised versions of ``key`` that kafka-python's request and response classes implement."""
    api = APIS[key]
    request, response = KAFKA_PYTHON[key]
    low = max(api.min_version, request.valid_versions[0], response.valid_versions[0])
    high = min(api.max_version, request.valid_versions[1], response.valid_versions[1])
    return list(range(low, high + 1))


def hand_checked_versions(key: ApiKey) -> list[int]:
    """The advertised versions that kafka-python no longer implements (Kafka 4 dropped them)."""
    api = APIS[key]
    checked = set(cross_checked_versions(key))
    return [v for v in range(api.min_version, api.max_version + 1) if v not in checked]


def canonical(struct: Struct, value: dict, version: int) -> dict:
    """Only the fields of ``version``, with bytes-like values as bytes (decoders return memoryviews)."""
    out = {}
    for field in struct.fields:
        if field.present_in(version):
            out[field.name] = _canonical_value(field.type, value[field.name], version)
    return out


def _canonical_value(type_, value, version):
    if value is None:
        return None
    if isinstance(type_, Struct):
        return canonical(type_, value, version)
    if isinstance(type_, Array):
        return [_canonical_value(type_.item, v, version) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


def _bits(value: int) -> set:
    unsigned = value & 0xFFFFFFFF
    return {bit for bit in range(32) if unsigned >> bit & 1}


def _from_bits(bits) -> int:
    if bits is None:
        bits = {31}
    unsigned = sum(1 << bit for bit in bits)
    return unsigned - (1 << 32) if unsigned & 0x80000000 else unsigned


def to_kafka_python(key: ApiKey, kind: str, value: dict, version: int):
    """Build kafka-python's message object for ``value`` (a dict in our names) at ``version``."""
    cls = kafka_python_class(key, kind)[version]
    renames = RENAMES.get((key, kind), {})
    return cls(**_kp_kwargs(schema(key, kind), cls._struct, value, version, renames))


def _kp_kwargs(struct: Struct, kp_struct, value: dict, version: int, renames: dict) -> dict:
    kwargs = {}
    for field in struct.fields:
        if not field.present_in(version):
            continue
        kp_name = renames.get(field.name, field.name)
        kp_field = kp_struct.fields[kp_name]
        kwargs[kp_name] = _kp_value(field.type, kp_field, value[field.name], version, renames)
    return kwargs


def _kp_value(type_, kp_field, value, version, renames):
    if getattr(kp_field, "_type", None) is BitField:
        return _bits(value)
    if value is None:
        return None
    if isinstance(type_, Array) and isinstance(type_.item, Struct):
        data_class = kp_field.data_class
        return [data_class(**_kp_kwargs(type_.item, kp_field, v, version, renames)) for v in value]
    if isinstance(type_, Array):
        return list(value)
    return value


def from_kafka_python(key: ApiKey, kind: str, message, version: int) -> dict:
    """Our canonical dict for a message decoded by kafka-python."""
    return _from_kp(schema(key, kind), message._struct, message, version, RENAMES.get((key, kind), {}))


def _from_kp(struct: Struct, kp_struct, message, version: int, renames: dict) -> dict:
    out = {}
    for field in struct.fields:
        if not field.present_in(version):
            continue
        kp_name = renames.get(field.name, field.name)
        kp_field = kp_struct.fields[kp_name]
        value = getattr(message, kp_name)
        if getattr(kp_field, "_type", None) is BitField:
            value = _from_bits(value)
        elif value is not None and isinstance(field.type, Array) and isinstance(field.type.item, Struct):
            value = [_from_kp(field.type.item, kp_field, v, version, renames) for v in value]
        elif value is not None and isinstance(field.type, Array):
            value = list(value)
        elif isinstance(value, (memoryview, bytearray)):
            value = bytes(value)
        out[field.name] = value
    return out
