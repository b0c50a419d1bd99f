"""Spark commands stop with one clear line when Java 17+ is missing (not a JVM stack trace)."""

import os
import subprocess
import sys


def run_check(env_changes: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env.update(env_changes)
    return subprocess.run(
        [sys.executable, "-m", "spark_kafka_source.java"], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_java_on_this_machine_passes():
    assert run_check({}).returncode == 0


def test_no_java_at_all_is_one_line(tmp_path):
    result = run_check({"PATH": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "Spark needs Java 17 or newer" in result.stderr and "no java was found on PATH" in result.stderr


def test_an_old_java_is_named(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "java"
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.21\" 2023-10-17' >&2\n")
    fake.chmod(0o755)
    result = run_check({"JAVA_HOME": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "is Java 11" in result.stderr
    fake.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    assert "is Java 8" in run_check({"JAVA_HOME": str(tmp_path)}).stderr
