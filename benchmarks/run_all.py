"""Run every benchmark with its default (README) settings: ``make bench``."""

from benchmarks import (broker_throughput, decode_records, load_check, load_job, log_append, log_lookup,
                        sendfile_threshold, spark_read)


def main() -> None:
    for benchmark in (log_append, log_lookup, broker_throughput, sendfile_threshold, decode_records, spark_read,
                      load_job, load_check):
        print(f"== {benchmark.__name__}")
        benchmark.main([])
        print()


if __name__ == "__main__":
    main()
