"""``python -m broker ...``: the same as ``kafkalog broker ...``."""

import sys

from broker import cli

if __name__ == "__main__":
    sys.exit(cli.main(["broker", *sys.argv[1:]]))
