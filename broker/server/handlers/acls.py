"""DescribeAcls, CreateAcls and DeleteAcls (v0-1): the broker's ACLs, as ``kafka-acls`` and admin
clients manage them (``broker.security.acls``, kept by ``broker.security.acl_store``, or in a
cluster by ``broker.cluster.zookeeper_acls``).

As in Kafka: without an authorizer (``authorizer.class.name``) the three answer SECURITY_DISABLED;
describing needs Describe on the cluster and changing needs Alter on it
(CLUSTER_AUTHORIZATION_FAILED). Version 0 knows literal patterns only (its filters mean LITERAL).
Each creation and each filter is answered on its own (an invalid one is INVALID_REQUEST); the
valid ones of a request are stored in one atomic write on the I/O pool, seen by the authorizer as
soon as they are answered.
"""

from typing import Any

from broker.protocol.errors import ErrorCode
from broker.security.acl_store import AclStoreError
from broker.security.acls import CLUSTER_NAME, Acl, AclError, AclFilter, Operation, ResourceType

from ..context import error_text


def _refusal(ctx, operation: Operation) -> dict | None:
    """The error of the whole request, or None if it may go on."""
    if not ctx.authorizer.enabled:
        return {
            "error_code": ErrorCode.SECURITY_DISABLED,
            "error_message": "no authorizer is configured on this broker (authorizer.class.name)",
        }
    if not ctx.allows(operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return {
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": f"{ctx.session.principal} may not {operation.name} the cluster's ACLs",
        }
    return None


def _filter(fields: dict) -> AclFilter:
    return AclFilter.checked(
        fields["resource_type_filter"],
        fields["resource_name_filter"],
        fields["pattern_type_filter"],
        fields["principal_filter"],
        fields["host_filter"],
        fields["operation"],
        fields["permission_type"],
    )


def _entry(acl: Acl) -> dict:
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation, "permission_type": acl.permission}


async def handle_describe(ctx, header, request) -> dict:
    response: dict[str, Any] = {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "resources": [],
    }
    refusal = _refusal(ctx, Operation.DESCRIBE)
    if refusal:
        return response | refusal
    try:
        acl_filter = _filter(request)
    except AclError as exc:
        return response | {"error_code": ErrorCode.INVALID_REQUEST, "error_message": error_text(exc)}
    resources: dict[tuple, list] = {}
    for acl in ctx.acls.matching(acl_filter):
        resources.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(_entry(acl))
    response["resources"] = [
        {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": acls}
        for (kind, name, pattern), acls in resources.items()
    ]
    return response


async def handle_create(ctx, header, request) -> dict:
    refusal = _refusal(ctx, Operation.ALTER)
    if refusal:
        return {"throttle_time_ms": 0, "results": [refusal for _ in request["creations"]]}
    results: list[dict[str, Any]] = []
    valid: list[Acl] = []
    for creation in request["creations"]:
        try:
            valid.append(
                Acl.checked(
                    creation["resource_type"],
                    creation["resource_name"],
                    creation["resource_pattern_type"],
                    creation["principal"],
                    creation["host"],
                    creation["operation"],
                    creation["permission_type"],
                )
            )
            results.append({"error_code": ErrorCode.NONE, "error_message": None})
        except AclError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": error_text(exc)})
    if valid:
        try:
            await ctx.io.run(ctx.acls.add, valid)
        except AclStoreError as exc:
            failed = {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "error_message": error_text(exc)}
            results = [failed if r["error_code"] == ErrorCode.NONE else r for r in results]
    return {"throttle_time_ms": 0, "results": results}


async def handle_delete(ctx, header, request) -> dict:
    refusal = _refusal(ctx, Operation.ALTER)
    if refusal:
        return {"throttle_time_ms": 0, "filter_results": [refusal | {"matching_acls": []} for _ in request["filters"]]}
    results, filters = [], []
    for fields in request["filters"]:
        result: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": []}
        try:
            filters.append((result, _filter(fields)))
        except AclError as exc:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message=error_text(exc))
        results.append(result)
    if filters:
        try:
            removed = await ctx.io.run(ctx.acls.remove, [acl_filter for _, acl_filter in filters])
        except AclStoreError as exc:
            for result, _ in filters:
                result.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, error_message=error_text(exc))
        else:
            for (result, _), acls in zip(filters, removed, strict=True):
                result["matching_acls"] = [
                    {
                        "error_code": ErrorCode.NONE,
                        "error_message": None,
                        "resource_type": acl.resource_type,
                        "resource_name": acl.name,
                        "pattern_type": acl.pattern_type,
                    }
                    | _entry(acl)
                    for acl in acls
                ]
    return {"throttle_time_ms": 0, "filter_results": results}
