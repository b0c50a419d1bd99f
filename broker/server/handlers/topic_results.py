"""One result per topic for the topic admin APIs (CreateTopics, CreatePartitions, DeleteTopics): each topic succeeds
or fails on its own, a name given twice in one request is refused for both (as Kafka does), and a
``TopicError`` or a storage failure (``OSError``) becomes that topic's error code and message."""

from collections import Counter

from broker.protocol.errors import ErrorCode

from ..context import error_text
from ..topics import TopicError


async def per_topic(topics: list[dict], action) -> list[dict]:
    """Await ``action(topic)`` for each topic of the request; return their results in order."""
    names = Counter(t["name"] for t in topics)  # not list.count: quadratic on hostile requests
    results = []
    for topic in topics:
        result = {"name": topic["name"], "error_code": ErrorCode.NONE, "error_message": None}
        try:
            if names[topic["name"]] > 1:
                raise TopicError(ErrorCode.INVALID_REQUEST, f"topic {topic['name']!r} appears twice in the request")
            await action(topic)
        except TopicError as exc:
            result.update(error_code=exc.code, error_message=error_text(exc))
        except OSError as exc:
            result.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, error_message=error_text(exc))
        results.append(result)
    return results
