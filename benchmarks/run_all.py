"""Run every benchmark with its default (README) settings: ``make bench``."""

from benchmarks import broker_throughput, log_append, log_lookup


def main() -> None:
    for benchmark in (log_append, log_lookup, broker_throughput):
        print(f"== {benchmark.__name__}")
        benchmark.main([])
        print()


if __name__ == "__main__":
    main()
