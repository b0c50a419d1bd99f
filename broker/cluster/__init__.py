"""What a broker knows of its cluster: the metadata cache (brokers, controller, every partition's
leader and replicas), where that metadata comes from, and how partitions are placed on brokers."""
