"""The Spark Connect fixtures: one real Connect server for the whole run (``connect_server``) and a
Connect client session to it (``remote``), in this pytest process beside the classic ``spark``.

The two kinds of session coexist only through the Connect module's own builder,
``pyspark.sql.connect.session.SparkSession.builder.remote(url).create()``. The generic builder
cannot be used here: its ``getOrCreate()`` refuses a remote session while a classic one exists in
the process (``SESSION_ALREADY_EXIST``), and its ``create()`` sets ``SPARK_CONNECT_MODE_ENABLED`` in
``os.environ``, which turns the whole process to Connect mode (``pyspark.sql.functions`` would then
build Connect columns for the classic session's tests too).

The client registers nothing: the server finds the ``kafkalog`` format itself. A failing test shows
the end of the server's log.
"""

from collections.abc import Iterator

import pytest

from .server import SparkConnectServer


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory) -> Iterator[SparkConnectServer]:
    server = SparkConnectServer(tmp_path_factory.mktemp("spark-connect")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def remote(connect_server: SparkConnectServer):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = ConnectSession.builder.remote(connect_server.url).create()
    yield session
    session.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    server = getattr(item, "funcargs", {}).get("connect_server")
    if report.failed and isinstance(server, SparkConnectServer):
        report.sections.append(("Spark Connect server log (last lines)", server.log_tail()))
