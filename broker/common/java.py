"""The ``java`` a JVM process is started with: ``$JAVA_HOME/bin/java`` if set, else the one on PATH.
The embedded ZooKeeper runs it, and Spark runs the same one."""

import os
import shutil


def java_executable() -> str | None:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` if set (None if it is not executable), else the one
    on PATH (None if there is none)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")
