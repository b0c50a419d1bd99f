"""AlterConfigs (v0-1) and IncrementalAlterConfigs (v0): change a topic's settings or the broker's
dynamic log settings, persisted and applied to the running logs (``TopicRegistry``).

AlterConfigs replaces the whole set of a resource's dynamic settings with the ones given (a
setting left out goes back to its default); IncrementalAlterConfigs sets, deletes, appends to or
subtracts from single settings (append and subtract only for list settings), as Kafka does. The
broker's settings other than its log settings are read-only while it runs (INVALID_REQUEST), a
resource named twice in one request is refused, and so is a setting named twice for one resource,
in both APIs, as Kafka since 3.2 (INVALID_REQUEST); every value is checked with Kafka's rules
before anything changes. Saving and applying a change run on the I/O pool, off the event loop.
"""

import enum
from collections import Counter

from broker.log.config import BROKER_SETTINGS, TOPIC_SETTINGS, format_value
from broker.protocol.errors import ErrorCode
from broker.security.acls import Operation as AclOperation

from ..config_resources import STATIC_BROKER_KEYS, ResourceType, authorize_resource, check_resource
from ..context import error_text
from ..topics import TopicError


class Operation(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def _setting(resource_type: int, key: str):
    """The Setting behind ``key`` for this kind of resource (TopicError if it is not one to alter)."""
    if resource_type == ResourceType.BROKER:
        if key in STATIC_BROKER_KEYS:
            raise TopicError(
                ErrorCode.INVALID_REQUEST,
                f"{key}: cannot be updated while the broker runs (give it to `kafkalog broker --set` at start-up)",
            )
        setting = BROKER_SETTINGS.get(key)
    else:
        setting = TOPIC_SETTINGS.get(key)
    if setting is None:
        kind = "broker" if resource_type == ResourceType.BROKER else "topic"
        raise TopicError(ErrorCode.INVALID_CONFIG, f"{key}: unknown {kind} setting")
    return setting


def _current(ctx, resource_type: int, name: str) -> dict[str, str]:
    if resource_type == ResourceType.TOPIC:
        return ctx.topics.overrides(name)
    return ctx.topics.broker_overrides(name)


async def _replace(ctx, resource_type: int, name: str, configs: dict[str, str], validate_only: bool) -> None:
    if resource_type == ResourceType.TOPIC:
        await ctx.io.run(ctx.topics.alter_topic_configs, name, configs, validate_only)
    else:
        await ctx.io.run(ctx.topics.alter_broker_configs, name, configs, validate_only)


def _unique_names(configs: list[dict]) -> None:
    duplicate = next((name for name, count in Counter(c["name"] for c in configs).items() if count > 1), None)
    if duplicate is not None:
        raise TopicError(ErrorCode.INVALID_REQUEST, f"{duplicate}: named twice in one request")


def _non_null(config: dict) -> str:
    if config["value"] is None:
        raise TopicError(ErrorCode.INVALID_REQUEST, f"{config['name']}: a null value cannot be set")
    return config["value"]


def _altered(ctx, resource: dict) -> dict[str, str]:
    """AlterConfigs: the resource's new dynamic settings are exactly the ones given."""
    _unique_names(resource["configs"])
    for config in resource["configs"]:
        _setting(resource["resource_type"], config["name"])
    return {c["name"]: _non_null(c) for c in resource["configs"]}


def _list_value(ctx, resource_type: int, name: str, setting, current: dict) -> list[str]:
    key = setting.broker_key if resource_type == ResourceType.BROKER else setting.topic_key
    if key in current:
        text = current[key]
    else:
        base = ctx.topics.defaults if resource_type == ResourceType.BROKER else ctx.topics.config_for(name)
        text = format_value(getattr(base, setting.field))
    return [item.strip() for item in text.split(",") if item.strip()]


def _incrementally_altered(ctx, resource: dict) -> dict[str, str]:
    """IncrementalAlterConfigs: the resource's dynamic settings with each operation applied."""
    resource_type, name = resource["resource_type"], resource["resource_name"]
    _unique_names(resource["configs"])
    current = _current(ctx, resource_type, name)
    changed = dict(current)
    for config in resource["configs"]:
        key, operation = config["name"], config["config_operation"]
        setting = _setting(resource_type, key)
        if operation == Operation.SET:
            changed[key] = _non_null(config)
        elif operation == Operation.DELETE:
            changed.pop(key, None)
        elif operation in (Operation.APPEND, Operation.SUBTRACT):
            if setting.config_type != "LIST":
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"{key}: is not a list, so it cannot be {Operation(operation).name.lower()}ed to",
                )
            items = _list_value(ctx, resource_type, name, setting, current)
            given = [item.strip() for item in _non_null(config).split(",") if item.strip()]
            if operation == Operation.APPEND:
                present = set(items)
                items += [item for item in dict.fromkeys(given) if item not in present]
            else:
                removed = set(given)
                items = [item for item in items if item not in removed]
            changed[key] = ",".join(items)
        else:
            raise TopicError(
                ErrorCode.INVALID_REQUEST,
                f"{key}: config operation {operation} is not 0 (set), 1 (delete), 2 (append) or 3 (subtract)",
            )
    return changed


async def _answer(ctx, request: dict, new_configs) -> dict:
    keys = Counter((r["resource_type"], r["resource_name"]) for r in request["resources"])
    responses = []
    for resource in request["resources"]:
        response = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": resource["resource_type"],
            "resource_name": resource["resource_name"],
        }
        try:
            if keys[(resource["resource_type"], resource["resource_name"])] > 1:
                raise TopicError(ErrorCode.INVALID_REQUEST, f"resource {resource['resource_name']!r} is named twice")
            authorize_resource(ctx, resource["resource_type"], resource["resource_name"], AclOperation.ALTER_CONFIGS)
            check_resource(ctx, resource["resource_type"], resource["resource_name"])
            configs = new_configs(ctx, resource)
            await _replace(ctx, resource["resource_type"], resource["resource_name"], configs, request["validate_only"])
        except TopicError as exc:
            response.update(error_code=exc.code, error_message=error_text(exc))
        except OSError as exc:
            response.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, error_message=error_text(exc))
        responses.append(response)
    return {"throttle_time_ms": 0, "responses": responses}


async def handle_alter(ctx, header, request) -> dict:
    return await _answer(ctx, request, _altered)


async def handle_incremental_alter(ctx, header, request) -> dict:
    return await _answer(ctx, request, _incrementally_altered)
