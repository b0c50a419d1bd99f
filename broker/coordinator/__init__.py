"""Consumer groups: the group coordinator and the offset manager, sans I/O (bytes and requests in,
values, answers and records out; time is a clock passed in).

``group`` holds one group (state, members, protocol vote), ``group_coordinator`` runs Kafka's
classic membership protocol and the offset calls on it, ``offset_manager`` keeps the groups' cache
and writes every change as ``__consumer_offsets`` records (``offsets_records``, Kafka's formats) in
the group's partition (``group_partition``); ``timers`` holds their deadlines, ``config`` their
settings; ``consumer_protocol`` decodes members' subscriptions and assignments. Like ``replica``
and ``cluster`` this layer knows logs, not sockets: ``broker.server.group_runtime`` runs it.
"""
