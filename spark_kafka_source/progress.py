"""How far behind the latest offsets a ``kafkalog`` stream is, from its query progress.

Spark's own Kafka source reports ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and
``avgOffsetsBehindLatest`` as source metrics; PySpark's Python data source API has no way for a
source to report metrics. What it does have is ``reportLatestOffset``, shown as the source's
``latestOffset`` next to its ``endOffset`` in every ``StreamingQueryProgress``: the same three
figures follow from those two, computed here as Spark computes them (per partition, latest minus
end).
"""

import json
from collections.abc import Mapping


def offsets_behind_latest(source: Mapping[str, object]) -> dict | None:
    """Spark's three offsets-behind figures from one source's progress (``query.lastProgress
    ["sources"][0]``, or a dict of it); None when the progress has no latest offsets."""
    end, latest = _offsets(source["endOffset"]), _offsets(source["latestOffset"])
    if not latest:
        return None
    behind = [offset - end.get(tp, offset) for tp, offset in latest.items()]
    return {
        "minOffsetsBehindLatest": min(behind),
        "maxOffsetsBehindLatest": max(behind),
        "avgOffsetsBehindLatest": sum(behind) / len(behind),
    }


def _offsets(value) -> dict:
    """``{"topic": {"0": 23}}`` (or its JSON text) as ``{(topic, partition): offset}``."""
    parsed = json.loads(value) if isinstance(value, str) else value
    return {(topic, int(p)): offset for topic, partitions in (parsed or {}).items() for p, offset in partitions.items()}
