"""Run every benchmark with its default settings (those docs/benchmarks.md reports): ``make bench``."""

from benchmarks import (
    broker_concurrency,
    broker_throughput,
    cli_produce,
    cluster_spark_read,
    cluster_throughput,
    consume_group,
    decode_records,
    decompression_stall,
    group_coordinator,
    load_check,
    load_job,
    log_append,
    log_cleaning,
    log_lookup,
    log_partitions,
    log_recovery,
    replication_throughput,
    sendfile_threshold,
    sink_write,
    spark_read,
    spark_stream,
    tls_throughput,
    topic_compression,
)


def main() -> None:
    for benchmark in (
        log_append,
        log_lookup,
        log_partitions,
        log_recovery,
        log_cleaning,
        broker_throughput,
        broker_concurrency,
        topic_compression,
        sendfile_threshold,
        decode_records,
        decompression_stall,
        spark_read,
        spark_stream,
        load_job,
        load_check,
        cli_produce,
        sink_write,
        group_coordinator,
        consume_group,
        tls_throughput,
        cluster_throughput,
        replication_throughput,
        cluster_spark_read,
    ):
        print(f"== {benchmark.__name__}")
        benchmark.main([])
        print()


if __name__ == "__main__":
    main()
