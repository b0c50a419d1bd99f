"""Small in-thread TCP servers for faults the real brokers here cannot produce.

* ``FakeBroker``: a one-node Kafka-protocol broker serving one partition from given v2 batches.
  It answers ApiVersions, Metadata, ListOffsets and Fetch correctly (bodies built with
  ``broker.protocol``), records every request, and can behave like a pre-KIP-74 broker: with
  ``truncate=True`` a Fetch answer is cut at ``partition_max_bytes`` even inside the first batch,
  so a batch larger than the requested size comes back partial. It can also advertise other
  version ranges, and only support ApiVersions up to a lower version (answering higher ones with
  Kafka's v0-encoded UNSUPPORTED_VERSION reply), close the connection on given APIs, and answer
  the first fetches or metadata requests with given error codes. Given the aborted transactions
  of its log (``aborted``: ``(producer_id, first_offset, marker offset)``) and a last stable
  offset, it serves read_committed as a Kafka broker does: ListOffsets LATEST is the last stable
  offset, a Fetch stops below it and lists the aborted transactions among the records returned.
* ``SilentListener``: accepts connections and reads everything sent, never answering (a hung broker).
* ``TlsAlertListener``: answers every request with a TLS alert record, as a TLS listener whose TLS
  stack sends one (Kafka's Java broker does) answers a plaintext client.

Each runs one thread, are context managers, and join their thread on exit.
"""

import contextlib
import selectors
import socket
import ssl
import struct
import threading

from broker.protocol import frames
from broker.protocol.apis import APIS, ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import record_set

_SIZE = struct.Struct(">i")


class _CloseConnection(Exception):
    """Raised by ``_answer`` to drop the connection without answering."""


class _ThreadedServer:
    """One thread: accepts connections and feeds each complete request frame to ``_answer``."""

    def __init__(self):
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.setblocking(False)
        self.port = self._server.getsockname()[1]
        self.connections_accepted = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=type(self).__name__, daemon=True)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        self._server.close()
        assert not self._thread.is_alive(), f"{type(self).__name__} thread did not stop"
        if exc[0] is None and self.errors:
            raise AssertionError(f"{type(self).__name__} failed: {self.errors!r}")

    def _answer(self, frame: bytes) -> bytes | None:
        raise NotImplementedError

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._server, selectors.EVENT_READ)
        buffers: dict[socket.socket, bytearray] = {}
        try:
            while not self._stop.is_set():
                for key, _ in selector.select(0.05):
                    if key.fileobj is self._server:
                        try:
                            conn, _ = self._server.accept()
                        except BlockingIOError:
                            continue
                        conn.settimeout(5)
                        selector.register(conn, selectors.EVENT_READ)
                        buffers[conn] = bytearray()
                        self.connections_accepted += 1
                        continue
                    conn = key.fileobj
                    try:
                        data = conn.recv(1 << 16)
                    except OSError:
                        data = b""
                    if not data:
                        selector.unregister(conn)
                        buffers.pop(conn).clear()
                        conn.close()
                        continue
                    buffer = buffers[conn]
                    buffer += data
                    try:
                        while len(buffer) >= 4 and len(buffer) >= 4 + _SIZE.unpack_from(buffer)[0]:
                            size = _SIZE.unpack_from(buffer)[0]
                            frame = bytes(buffer[4 : 4 + size])
                            del buffer[: 4 + size]
                            reply = self._answer(frame)
                            if reply is not None:
                                conn.sendall(reply)
                    except Exception as exc:  # noqa: BLE001 - reported by __exit__
                        if not isinstance(exc, _CloseConnection):
                            self.errors.append(exc)
                        selector.unregister(conn)
                        buffers.pop(conn)
                        conn.close()
        finally:
            for conn in buffers:
                conn.close()
            selector.close()


class SilentListener(_ThreadedServer):
    """Accepts and reads, never answers."""

    def __init__(self):
        super().__init__()
        self.frames_received = 0

    def _answer(self, frame: bytes) -> None:
        self.frames_received += 1
        return None


class TlsAlertListener(_ThreadedServer):
    """Answers every request with a fatal TLS alert record, made by a real TLS engine (Python's
    OpenSSL, as a client refusing a malformed ServerHello): the bytes a plaintext client reads."""

    def __init__(self):
        super().__init__()
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        engine = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
        with contextlib.suppress(ssl.SSLWantReadError):
            engine.do_handshake()
        outgoing.read()  # the ClientHello
        incoming.write(b"\x16\x03\x03\x00\x05\x63\x00\x00\x01\x00")  # a handshake record of an unknown type
        with contextlib.suppress(ssl.SSLError):
            engine.do_handshake()
        self.alert = outgoing.read()

    def _answer(self, frame: bytes) -> bytes:
        return self.alert


class FakeBroker(_ThreadedServer):
    """Node 0 on 127.0.0.1, leader of ``topic`` partition 0, whose log is ``batches`` (from offset 0)."""

    def __init__(
        self,
        topic: str,
        batches: list[bytes],
        *,
        truncate: bool = True,
        api_versions_max: int = 2,
        advertised: dict | None = None,
        close_on: tuple = (),
        fetch_errors: tuple = (),
        metadata_errors: tuple = (),
        aborted: tuple = (),
        last_stable_offset: int | None = None,
    ):
        super().__init__()
        self.close_on = set(close_on)  # API keys answered by closing the connection
        self.fetch_errors = list(fetch_errors)  # partition error codes for the first fetches
        self.metadata_errors = list(metadata_errors)  # topic error codes for the first metadata answers
        self.client_ids: list[str | None] = []
        self.topic = topic
        self.log = b"".join(batches)
        self.entries = list(record_set.iter_entries(self.log, allow_partial_tail=False))
        self.high_watermark = self.entries[-1][1].last_offset + 1 if self.entries else 0
        self.aborted = list(aborted)
        self.last_stable_offset = self.high_watermark if last_stable_offset is None else last_stable_offset
        self.truncate = truncate
        self.api_versions_max = api_versions_max
        self.advertised = advertised or {key: (api.min_version, api.max_version) for key, api in APIS.items()}
        self.requests: list[tuple[int, int, dict]] = []  # (api key, version, decoded body)

    def fetch_sizes(self) -> list[int]:
        return [
            body["topics"][0]["partitions"][0]["partition_max_bytes"]
            for key, _, body in self.requests
            if key == ApiKey.FETCH
        ]

    def versions_used(self, api_key: ApiKey) -> list[int]:
        return [version for key, version, _ in self.requests if key == api_key]

    def _answer(self, frame: bytes) -> bytes:
        header, reader = frames.parse_request(frame)
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        self.client_ids.append(header.client_id)
        if key in self.close_on:
            self.requests.append((key, version, {}))
            raise _CloseConnection
        if key == ApiKey.API_VERSIONS:
            self.requests.append((key, version, {}))
            if version > self.api_versions_max:  # Kafka's reply: a v0 body with error 35
                return _encode(
                    cid,
                    key,
                    0,
                    {
                        "error_code": ErrorCode.UNSUPPORTED_VERSION,
                        "api_keys": [{"api_key": key, "min_version": 0, "max_version": self.api_versions_max}],
                    },
                )
            return _encode(
                cid,
                key,
                version,
                {
                    "error_code": ErrorCode.NONE,
                    "throttle_time_ms": 0,
                    "api_keys": [
                        {"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in self.advertised.items()
                    ],
                },
            )
        body = frames.decode_request_body(header, reader)
        self.requests.append((key, version, body))
        low, high = self.advertised.get(key, (0, -1))
        if not low <= version <= high:
            raise AssertionError(f"client sent {ApiKey(key).name} v{version}, outside the advertised {low}-{high}")
        handler = {ApiKey.METADATA: self._metadata, ApiKey.FETCH: self._fetch, ApiKey.LIST_OFFSETS: self._list_offsets}[
            ApiKey(key)
        ]
        return _encode(cid, key, version, handler(body, version))

    def _metadata(self, body: dict, version: int) -> dict:
        wanted = body["topics"]
        names = [self.topic] if wanted is None or (version == 0 and not wanted) else [t["name"] for t in wanted]
        topics = []
        for name in names:
            if name == self.topic and self.metadata_errors:
                topics.append(
                    {"error_code": self.metadata_errors.pop(0), "name": name, "is_internal": False, "partitions": []}
                )
            elif name == self.topic:
                topics.append(
                    {
                        "error_code": 0,
                        "name": name,
                        "is_internal": False,
                        "partitions": [
                            {
                                "error_code": 0,
                                "partition_index": 0,
                                "leader_id": 0,
                                "leader_epoch": 0,
                                "replica_nodes": [0],
                                "isr_nodes": [0],
                                "offline_replicas": [],
                            }
                        ],
                    }
                )
            else:
                topics.append(
                    {
                        "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "name": name,
                        "is_internal": False,
                        "partitions": [],
                    }
                )
        return {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.port, "rack": None}],
            "cluster_id": "fake",
            "controller_id": 0,
            "topics": topics,
        }

    def _fetch(self, body: dict, version: int) -> dict:
        (topic,) = body["topics"]
        (wanted,) = topic["partitions"]
        offset, limit = wanted["fetch_offset"], wanted["partition_max_bytes"]
        read_committed = version >= 4 and body["isolation_level"] == 1
        bound = self.last_stable_offset if read_committed else self.high_watermark
        error, records = ErrorCode.NONE, b""
        if topic["topic"] != self.topic or wanted["partition"] != 0:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif self.fetch_errors:
            error = self.fetch_errors.pop(0)
        elif not 0 <= offset <= self.high_watermark:
            error = ErrorCode.OFFSET_OUT_OF_RANGE
        else:
            start = next((pos for pos, h in self.entries if h.last_offset >= offset), len(self.log))
            stop = next((pos for pos, h in self.entries if h.last_offset >= bound), len(self.log))
            records = self.log[start : max(start, stop)]
            if self.truncate:  # a pre-KIP-74 broker: at most the limit, even if that cuts the first batch
                records = records[:limit]
            else:  # a modern broker: whole batches, at least one
                end = start
                for pos, h in self.entries:
                    if pos < start or pos >= stop:
                        continue
                    if end > start and pos + h.size - start > limit:
                        break
                    end = pos + h.size
                records = self.log[start:end]
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": topic["topic"],
                    "partitions": [
                        {
                            "partition_index": wanted["partition"],
                            "error_code": error,
                            "high_watermark": self.high_watermark,
                            "last_stable_offset": self.last_stable_offset,
                            "log_start_offset": 0,
                            "aborted_transactions": self._aborted_among(offset, records) if read_committed else None,
                            "preferred_read_replica": -1,
                            "records": records,
                        }
                    ],
                }
            ],
        }

    def _aborted_among(self, offset: int, records: bytes) -> list[dict]:
        """The aborted transactions overlapping the records a fetch from ``offset`` returns."""
        if not records:
            return []
        upper = max((h.last_offset for _, h in record_set.iter_entries(records)), default=offset - 1) + 1
        return [
            {"producer_id": producer_id, "first_offset": first}
            for producer_id, first, last in self.aborted
            if last >= offset and first < upper
        ]

    def _list_offsets(self, body: dict, version: int) -> dict:
        latest = self.last_stable_offset if version >= 2 and body["isolation_level"] == 1 else self.high_watermark
        topics = []
        for topic in body["topics"]:
            partitions = []
            for p in topic["partitions"]:
                offset = {-2: 0, -1: latest}.get(p["timestamp"], -1)
                partitions.append(
                    {
                        "partition_index": p["partition_index"],
                        "error_code": 0,
                        "timestamp": -1,
                        "offset": offset,
                        "leader_epoch": 0,
                    }
                )
            topics.append({"name": topic["name"], "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}


def _encode(correlation_id: int, api_key: int, version: int, body: dict) -> bytes:
    parts, _ = frames.encode_response(correlation_id, api_key, version, body)
    return b"".join(bytes(p) for p in parts)
