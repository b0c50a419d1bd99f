"""Partitions as the server sees them (leader, leader epoch, replicas, high watermark, the local
log when this broker leads), held by the replica manager, between the request handlers and the logs."""
