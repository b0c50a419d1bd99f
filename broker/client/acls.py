"""ACL calls of the project's client, for ``kafkalog acls``: list, create and delete ACLs
(DescribeAcls, CreateAcls, DeleteAcls, v1: prefixed patterns) on any Kafka cluster with an
authorizer, sent to the controller as Kafka's admin client sends them. ACLs and filters are
``broker.security.acls``' values, so what the client sends is checked by the same rules the
broker applies; a refusal (SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED,
INVALID_REQUEST) is a ``KafkaError`` naming the ACL or filter and the broker's reason.
"""

from broker.protocol.apis import ApiKey
from broker.security.acls import Acl, AclFilter, Operation, PatternType, Permission, ResourceType

from .client import KafkaClient
from .connection import Body
from .errors import error_for


def describe_text(acl: Acl) -> str:
    """One ACL as a line says it: ``ALLOW User:etl from * to READ TOPIC orders (LITERAL)``."""
    return (
        f"{acl.permission.name} {acl.principal} from {acl.host} to {acl.operation.name} "
        f"{acl.resource_type.name} {acl.name} ({acl.pattern_type.name})"
    )


def _filter_fields(acl_filter: AclFilter) -> Body:
    return {
        "resource_type_filter": acl_filter.resource_type,
        "resource_name_filter": acl_filter.name,
        "pattern_type_filter": acl_filter.pattern_type,
        "principal_filter": acl_filter.principal,
        "host_filter": acl_filter.host,
        "operation": acl_filter.operation,
        "permission_type": acl_filter.permission,
    }


def _acl(fields: Body, pattern_key: str = "pattern_type") -> Acl:
    return Acl(
        ResourceType(fields["resource_type"]),
        fields["resource_name"],
        PatternType(fields[pattern_key]),
        fields["principal"],
        fields["host"],
        Operation(fields["operation"]),
        Permission(fields["permission_type"]),
    )


class AclClient:
    def __init__(self, client: KafkaClient):
        self._client = client

    def describe(self, acl_filter: AclFilter) -> list[Acl]:
        """The ACLs the filter matches."""
        response = self._client.admin_request(ApiKey.DESCRIBE_ACLS, _filter_fields(acl_filter))
        error = error_for(
            response["error_code"],
            "describe ACLs",
            response["error_message"],
            principal=self._client.security.principal,
            needs="DESCRIBE",
        )
        if error is not None:
            raise error
        return [_acl({**resource, **entry}) for resource in response["resources"] for entry in resource["acls"]]

    def create(self, acls: list[Acl]) -> None:
        """Create the ACLs (KafkaError for the first one refused; the others may be created)."""
        response = self._client.admin_request(
            ApiKey.CREATE_ACLS,
            {
                "creations": [
                    {
                        "resource_type": acl.resource_type,
                        "resource_name": acl.name,
                        "resource_pattern_type": acl.pattern_type,
                        "principal": acl.principal,
                        "host": acl.host,
                        "operation": acl.operation,
                        "permission_type": acl.permission,
                    }
                    for acl in acls
                ]
            },
        )
        for acl, result in zip(acls, response["results"], strict=False):
            error = error_for(
                result["error_code"],
                f"ACL {describe_text(acl)}",
                result["error_message"],
                principal=self._client.security.principal,
                needs="ALTER",
            )
            if error is not None:
                raise error

    def delete(self, filters: list[AclFilter]) -> list[Acl]:
        """Delete the ACLs the filters match; those deleted."""
        response = self._client.admin_request(ApiKey.DELETE_ACLS, {"filters": [_filter_fields(f) for f in filters]})
        deleted = []
        for result in response["filter_results"]:
            error = error_for(
                result["error_code"],
                "delete ACLs",
                result["error_message"],
                principal=self._client.security.principal,
                needs="ALTER",
            )
            if error is not None:
                raise error
            for matching in result["matching_acls"]:
                error = error_for(
                    matching["error_code"], f"ACL {describe_text(_acl(matching))}", matching["error_message"]
                )
                if error is not None:
                    raise error
                deleted.append(_acl(matching))
        return deleted
