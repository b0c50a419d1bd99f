"""The admin requests of the client, sans I/O: CreateTopics, DeleteTopics, CreatePartitions,
DescribeConfigs, IncrementalAlterConfigs, DeleteRecords and DescribeLogDirs bodies, and their
answers read into typed results (``ConfigEntry``, ``{name: error or None}``, offsets, sizes) or errors.
"""

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from broker.protocol.errors import ErrorCode

from .connection import Body
from .errors import KafkaError, error_for, internal_refusal, raise_for
from .retry import TopicPartition, raise_for_partition

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # DescribeConfigs and AlterConfigs resource types
SET_CONFIG, DELETE_CONFIG = 0, 1  # IncrementalAlterConfigs operations
DEFAULT_CONFIG, UNKNOWN_CONFIG = 5, 0  # DescribeConfigs config sources


class NewTopic(NamedTuple):
    name: str
    partitions: int = -1  # -1: the broker's num.partitions (CreateTopics v4+)
    configs: dict[str, str] | None = None  # topic settings under Kafka's names, e.g. {"retention.ms": "3600000"}
    replication_factor: int = -1  # -1: the broker's default (CreateTopics v4+)


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: int  # Kafka's ConfigSource: 1 the topic's own, 4 the broker's configuration, 5 Kafka's default, ...
    read_only: bool
    sensitive: bool
    documentation: str | None = None  # when asked for (DescribeConfigs v3): this broker says why a setting has
    # no effect here; Apache Kafka gives each setting's documentation

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG


def create_topics_body(topics: Sequence[NewTopic], timeout_ms: int, validate_only: bool) -> Body:
    return {
        "topics": [
            {
                "name": t.name,
                "num_partitions": t.partitions,
                "replication_factor": t.replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in (t.configs or {}).items()],
            }
            for t in topics
        ],
        "timeout_ms": timeout_ms,
        "validate_only": validate_only,
    }


def created_topics(response: Body, principal: str | None) -> dict[str, KafkaError | None]:
    return {
        t["name"]: error_for(
            t["error_code"], f"topic {t['name']!r}", t["error_message"], principal=principal, needs="CREATE"
        )
        for t in response["topics"]
    }


def deleted_topics(response: Body, principal: str | None) -> dict[str, KafkaError | None]:
    return {
        r["name"]: error_for(
            r["error_code"],
            f"topic {r['name']!r}",
            internal_refusal(r["error_code"], "cannot be deleted"),
            principal=principal,
            needs="DELETE",
        )
        for r in response["responses"]
    }


def check_created_partitions(response: Body, topic: str, principal: str | None) -> None:
    [result] = response["results"]
    raise_for(result["error_code"], f"topic {topic!r}", result["error_message"], principal=principal, needs="ALTER")


def describe_configs_body(name: str, resource_type: int, documentation: bool) -> Body:
    return {
        "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": False,
        "include_documentation": documentation,
    }


def config_entries(response: Body, name: str, resource_type: int, principal: str | None) -> list[ConfigEntry]:
    [result] = response["results"]
    raise_for(
        result["error_code"],
        resource_subject(resource_type, name),
        result["error_message"],
        principal=principal,
        needs="DESCRIBE_CONFIGS",
    )
    return [
        ConfigEntry(
            c["name"], c["value"], _config_source(c), c["read_only"], c["is_sensitive"], c["documentation"] or None
        )
        for c in result["configs"]
    ]


def alter_configs_body(name: str, changes: Mapping[str, str | None], resource_type: int, validate_only: bool) -> Body:
    configs = [
        {"name": key, "config_operation": DELETE_CONFIG if value is None else SET_CONFIG, "value": value}
        for key, value in changes.items()
    ]
    return {
        "resources": [{"resource_type": resource_type, "resource_name": name, "configs": configs}],
        "validate_only": validate_only,
    }


def check_altered_configs(response: Body, name: str, resource_type: int, principal: str | None) -> None:
    [result] = response["responses"]
    raise_for(
        result["error_code"],
        resource_subject(resource_type, name),
        result["error_message"],
        principal=principal,
        needs="ALTER_CONFIGS",
    )


def delete_records_body(before: Mapping[TopicPartition, int], timeout_ms: int) -> Body:
    """A DeleteRecords request for ``{(topic, partition): offset}`` (all led by one broker)."""
    topics: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), offset in before.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "offset": offset})
    return {"topics": [{"name": t, "partitions": p} for t, p in topics.items()], "timeout_ms": timeout_ms}


def low_watermarks(response: Body, principal: str | None) -> dict[TopicPartition, int]:
    """``{(topic, partition): new log start offset}`` of a DeleteRecords answer, or its first error."""
    found = {}
    for topic in response["topics"]:
        for p in topic["partitions"]:
            raise_for_partition(
                p["error_code"],
                topic["name"],
                p["partition_index"],
                internal_refusal(p["error_code"], "its records cannot be deleted"),
                principal=principal,
                needs="DELETE",
            )
            found[(topic["name"], p["partition_index"])] = p["low_watermark"]
    return found


def describe_log_dirs_body(topic: str, partitions: Sequence[int]) -> Body:
    return {"topics": [{"topic": topic, "partitions": partitions}]}


def partition_sizes(response: Body, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    """``{partition: bytes}`` of the ``partitions`` a DescribeLogDirs answer reports (a log dir in
    error, a future replica's log, are left out)."""
    sizes = {}
    for log_dir in (d for d in response["results"] if d["error_code"] == ErrorCode.NONE):
        for p in (p for t in log_dir["topics"] if t["name"] == topic for p in t["partitions"]):
            if p["partition_index"] in partitions and not p["is_future_key"]:
                sizes[p["partition_index"]] = p["partition_size"]
    return sizes


def resource_subject(resource_type: int, name: str) -> str:
    if resource_type == BROKER_RESOURCE:
        return f"broker {name}" if name else "the cluster-wide broker default"
    return f"topic {name!r}"


def _config_source(config: Body) -> int:
    """DescribeConfigs v1+ gives the source; v0 only says whether the value is Kafka's default."""
    if config["config_source"] >= 0:
        source: int = config["config_source"]
        return source
    return DEFAULT_CONFIG if config["is_default"] else UNKNOWN_CONFIG
