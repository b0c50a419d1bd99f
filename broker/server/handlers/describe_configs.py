"""DescribeConfigs (v0-3): the settings of a topic or of this broker, as ``kafka-configs --describe``
expects them (see ``broker.server.config_resources``).

Each setting says where its value comes from, as Kafka does: the topic's own override, this
broker's or the cluster default's dynamic setting, the broker's configuration, or Kafka's default
(v0 reports only ``is_default``). With ``include_synonyms`` (v1+) each setting lists those sources
from the highest precedence down. With ``include_documentation`` (v3) a setting this broker
accepts but does not act on says why. A resource named more than once (with the same keys) is
answered once: every mention would add all its settings to the answer.
"""

from broker.protocol.errors import ErrorCode
from broker.security.acls import Operation

from ..config_resources import ResourceType, authorize_resource, broker_configs, check_resource, topic_configs
from ..context import error_text
from ..topics import TopicError


def _describe(ctx, resource: dict, include_synonyms: bool, include_documentation: bool) -> dict:
    result = {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
        "configs": [],
    }
    name, keys = resource["resource_name"], resource["configuration_keys"]
    try:
        authorize_resource(ctx, resource["resource_type"], name, Operation.DESCRIBE_CONFIGS)
        check_resource(ctx, resource["resource_type"], name)
        if resource["resource_type"] == ResourceType.TOPIC:
            configs = topic_configs(ctx, name)
        else:
            configs = broker_configs(ctx, name)
    except TopicError as exc:
        result.update(error_code=exc.code, error_message=error_text(exc))
        return result
    for config in configs:
        if keys is None or config["name"] in keys:
            result["configs"].append(
                config
                | {
                    "synonyms": config["synonyms"] if include_synonyms else [],
                    "documentation": config["documentation"] if include_documentation else None,
                }
            )
    return result


def _distinct(resources: list[dict]) -> list[dict]:
    """The resources, each (type, name, keys) once, in request order."""
    distinct: dict[tuple, dict] = {}
    for r in resources:
        keys = r["configuration_keys"]
        distinct.setdefault((r["resource_type"], r["resource_name"], keys if keys is None else tuple(keys)), r)
    return list(distinct.values())


async def handle(ctx, header, request) -> dict:
    return {
        "throttle_time_ms": 0,
        "results": [
            _describe(ctx, resource, request["include_synonyms"], request["include_documentation"])
            for resource in _distinct(request["resources"])
        ],
    }
