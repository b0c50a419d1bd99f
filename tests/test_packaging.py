"""The package installed the way users install it: a wheel built from the repository's files
(``pip wheel``), installed into a fresh virtual environment and used from another directory.

* With the C extensions: a plain ``spark.read.format("kafkalog")`` reads, with no ``register()``
  call (Spark imports ``pyspark_kafkalog`` from the wheel), and the ``kafkalog`` command works,
  its ``load`` and ``mirror`` subcommands included (entry points the wheel declares).
* Without a C compiler (``CC=/bin/false``): the wheel still builds, without the extensions, and the
  pure-Python fallbacks load and do the work: a broker stores records, the CLI consumes them, and
  the source's decoder turns a fetch into Arrow.

The fresh environment sees the test environment's third-party packages through a ``.pth`` line (as
``--system-site-packages`` would), so nothing is downloaded; the project itself comes only from the
wheel, which each test checks (the editable install's own ``.pth`` is not processed there).
"""

import json
import os
import shutil
import signal
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 240

pytestmark = pytest.mark.timeout(2 * TIMEOUT)


def run(args, **kwargs) -> subprocess.CompletedProcess:
    """Run a command in a process group of its own, failing the test with its output when it fails.
    Whatever the group still holds when the command ends or after ``TIMEOUT`` (a broker, a JVM it
    started) is killed."""
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            stdout, stderr = process.communicate()
            pytest.fail(f"{args} still running after {TIMEOUT}s, killed:\n{stdout[-3000:]}\n{stderr[-3000:]}")
        finally:
            kill_group(process.pid)
    assert process.returncode == 0, f"{args} exited {process.returncode}:\n{stdout[-3000:]}\n{stderr[-3000:]}"
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:  # nothing left in it
        pass


def repository_files(dest: Path) -> Path:
    """A copy of the repository's tracked files (what a clone holds), so builds leave the work tree alone."""
    listed = run(["git", "ls-files", "-z"], cwd=REPO).stdout.split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def build_wheel(tmp_path: Path, env: dict | None = None) -> Path:
    source = repository_files(tmp_path / "source")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(tmp_path / "wheels"),
            str(source),
        ],
        env={**os.environ, **(env or {})},
    )
    (wheel,) = (tmp_path / "wheels").glob("spark_kafka_source-*.whl")
    return wheel


def fresh_venv(path: Path, wheel: Path) -> Path:
    """A new virtual environment with ``wheel`` installed; returns its Python."""
    run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    python = path / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)])
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(purelib) / "test-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


def run_script(python: Path, script: str, cwd: Path) -> dict:
    """Run ``script`` with ``python`` in ``cwd``; it prints one JSON line last."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "PYTHON"))}
    done = run([str(python), "-c", textwrap.dedent(script)], cwd=cwd, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


START_BROKER_AND_PRODUCE = """
    import json, os, subprocess, sys, tempfile
    from pathlib import Path
    from broker.embedded import EmbeddedBroker

    broker = EmbeddedBroker(Path(tempfile.mkdtemp()) / "log").start()
    kafkalog = str(Path(sys.executable).parent / "kafkalog")
    server = ["--bootstrap-server", broker.bootstrap]
    subprocess.run([kafkalog, "topics", "create", "installed", "--partitions", "1", *server], check=True, timeout=60)
    subprocess.run([kafkalog, "produce", "installed", "--key-separator", ":", *server], check=True, timeout=60,
                   input=b"u1:first\\nu2:second\\nu1:third\\n")
"""


def test_a_wheel_installed_in_a_fresh_venv_registers_the_format(tmp_path):
    python = fresh_venv(tmp_path / "venv", build_wheel(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_script(
        python,
        START_BROKER_AND_PRODUCE
        + """
    try:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        rows = (spark.read.format("kafkalog").option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", "installed").load()
                .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value").orderBy("offset").collect())
        spark.stop()
    finally:
        broker.stop()
    import spark_kafka_source, pyspark_kafkalog
    usages = [subprocess.run([kafkalog, job, "--help"], check=True, timeout=60, capture_output=True,
                             text=True).stdout.split()[:3] for job in ("load", "mirror")]
    print(json.dumps({"rows": [[r.key, r.value] for r in rows], "usages": usages,
                      "modules": [spark_kafka_source.__file__, pyspark_kafkalog.__file__]}))
    """,
        cwd=elsewhere,
    )
    assert result["rows"] == [["u1", "first"], ["u2", "second"], ["u1", "third"]]
    assert result["usages"] == [["usage:", "kafkalog", "load"], ["usage:", "kafkalog", "mirror"]]
    assert all(module.startswith(str(tmp_path / "venv")) for module in result["modules"]), result["modules"]


def test_without_a_compiler_the_pure_python_fallbacks_load_and_work(tmp_path):
    wheel = build_wheel(tmp_path, env={"CC": "/bin/false"})
    assert not [
        name for name in run([sys.executable, "-m", "zipfile", "-l", str(wheel)]).stdout.split() if name.endswith(".so")
    ], "no extension can be built without a compiler"
    python = fresh_venv(tmp_path / "venv", wheel)
    result = run_script(
        python,
        START_BROKER_AND_PRODUCE
        + """
    try:
        consumed = subprocess.run([kafkalog, "consume", "installed", "--format", "json", *server], check=True,
                                  timeout=60, capture_output=True, text=True).stdout.splitlines()
        from broker.client import KafkaClient
        from broker.records.crc import CRC32C_IMPLEMENTATION
        from broker.records.record_check import RECORD_WALK_IMPLEMENTATION
        from spark_kafka_source import arrow_records
        with KafkaClient(broker.bootstrap) as client:
            fetched = client.fetch("installed", 0, 0, 1 << 20)
        decoded = arrow_records.decode(fetched.records, "installed", 0, 0, 3, include_headers=False)
    finally:
        broker.stop()
    print(json.dumps({"crc": CRC32C_IMPLEMENTATION, "walk": RECORD_WALK_IMPLEMENTATION,
                      "native_decode": arrow_records.native_available(), "module": arrow_records.__file__,
                      "consumed": [json.loads(line)["value"] for line in consumed],
                      "decoded": [v.decode() for v in decoded.batch.column("value").to_pylist()]}))
    """,
        cwd=tmp_path,
    )
    assert (result["crc"], result["walk"], result["native_decode"]) == ("crcmod", "python", False)
    assert result["module"].startswith(str(tmp_path / "venv")), result["module"]
    assert result["consumed"] == result["decoded"] == ["first", "second", "third"]
