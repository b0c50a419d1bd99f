"""The on-disk log, in Kafka's format: segments with sparse indexes, partition logs, the log manager.

Layering inside: ``index`` and ``file_records`` (files of entries) < ``segment`` < ``loader``
(recovery) < ``partition_log`` < ``manager`` (a whole log directory). It knows files, not sockets.
"""
