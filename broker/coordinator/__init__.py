"""Consumer groups: the group coordinator's building blocks.

So far only the pure, sans-I/O parts (bytes in, values out): the ``__consumer_offsets`` record
formats (``offsets_records``), the partition of a group (``group_partition``) and the consumer
protocol's subscription and assignment (``consumer_protocol``). The group state machine and the
offset manager are built on them; like ``replica`` and ``cluster`` this layer knows logs, not sockets.
"""
