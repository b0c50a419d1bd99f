"""``python -m broker.cli ...``: the same as ``kafkalog ...``."""

import sys

from broker.cli import main

sys.exit(main())
