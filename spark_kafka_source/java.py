"""Checking for Java 17+ before starting Spark, so a missing JVM is one clear line, not a stack trace.

``python -m spark_kafka_source.java`` runs the check and exits 1 with the explanation.
"""

import os
import re
import subprocess
import sys

from broker.common.java import java_executable

MINIMUM_JAVA = 17


class JavaNotFoundError(RuntimeError):
    """Java is missing or too old for PySpark."""


def java_major_version(executable: str) -> int | None:
    try:
        out = subprocess.run([executable, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def require_java() -> None:
    """Raise JavaNotFoundError (with a one-line message) unless Java 17 or newer is available."""
    executable = java_executable()
    where = f"JAVA_HOME={os.environ['JAVA_HOME']}" if os.environ.get("JAVA_HOME") else "PATH"
    if executable is None:
        raise JavaNotFoundError(
            f"Spark needs Java {MINIMUM_JAVA} or newer, and no java was found on {where}: "
            f"install a JDK (for example: apt-get install openjdk-17-jre-headless)"
        )
    version = java_major_version(executable)
    if version is None or version < MINIMUM_JAVA:
        found = "an unknown version" if version is None else f"Java {version}"
        raise JavaNotFoundError(
            f"Spark needs Java {MINIMUM_JAVA} or newer, but {executable} is {found}: "
            f"install a newer JDK or point JAVA_HOME at one"
        )


def main() -> int:
    try:
        require_java()
    except JavaNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
