"""A tiny blocking Kafka wire client for tests: raw frames in, decoded responses out.

Requests are encoded with the broker's own sans-I/O schemas (``broker.protocol``) behind a
request header v1 (``INT16 api_key, INT16 api_version, INT32 correlation_id, NULLABLE_STRING
client_id``) and an ``INT32`` size prefix. Responses are split into the header v0 (``INT32
correlation_id``) and the body, which must decode to its last byte. Every receive is bounded by
a timeout; a closed connection reads as ``None``.

    with connect("127.0.0.1", port) as client:
        body = client.call(ApiKey.METADATA, 1, {"topics": None})
"""

import socket
import struct
import time

from broker.protocol import frames
from broker.protocol.apis import APIS, ApiKey
from broker.protocol.types import Reader

SIZE = struct.Struct(">i")
DEFAULT_TIMEOUT = 10.0


def encode_request(
    api_key: int, version: int, body: dict, correlation_id: int, client_id: str | None = "test"
) -> bytes:
    """A whole request frame (size prefix included), body encoded with the API's request schema."""
    return frames.encode_request(api_key, version, correlation_id, client_id, body)


def frame(payload: bytes) -> bytes:
    """``payload`` with its INT32 size prefix."""
    return SIZE.pack(len(payload)) + payload


def decode_response(data: bytes, api_key: int, version: int) -> tuple[int, dict]:
    """``(correlation_id, body)`` of a response frame (without its size prefix).

    Raises ValueError if the body does not use exactly the bytes of the frame.
    """
    reader = Reader(data)
    correlation_id = frames.read_response_header(reader, api_key, version)
    body = APIS[ApiKey(api_key)].response.decode(reader, version)
    if reader.remaining:
        raise ValueError(f"{reader.remaining} bytes left after the {ApiKey(api_key).name} v{version} response")
    return correlation_id, body


class WireClient:
    def __init__(self, sock: socket.socket, timeout: float = DEFAULT_TIMEOUT):
        self.sock = sock
        self.timeout = timeout
        self._correlation_id = 0

    def next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    # -- sending ---------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        self.sock.settimeout(self.timeout)
        self.sock.sendall(data)

    def send_request(
        self, api_key: int, version: int, body: dict, correlation_id: int | None = None, client_id: str | None = "test"
    ) -> int:
        """Send one request; return its correlation id."""
        if correlation_id is None:
            correlation_id = self.next_correlation_id()
        self.send_raw(encode_request(api_key, version, body, correlation_id, client_id))
        return correlation_id

    # -- receiving -------------------------------------------------------------------------

    def _recv_exactly(self, size: int, deadline: float) -> bytes | None:
        chunks = []
        while size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no complete response frame in time")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(min(size, 1 << 20))
            except (ConnectionResetError, BrokenPipeError):
                return None
            except TimeoutError:
                raise TimeoutError("no complete response frame in time") from None
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def recv_frame(self, timeout: float | None = None) -> bytes | None:
        """The next response frame without its size prefix; None if the broker closed the connection.

        Raises TimeoutError when no whole frame arrives within ``timeout`` seconds.
        """
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        prefix = self._recv_exactly(4, deadline)
        if prefix is None:
            return None
        (size,) = SIZE.unpack(prefix)
        assert size >= 4, f"response frame size {size}"
        data = self._recv_exactly(size, deadline)
        assert data is not None, "connection closed in the middle of a response frame"
        return data

    def recv_response(
        self, api_key: int, version: int, correlation_id: int | None = None, timeout: float | None = None
    ) -> dict:
        """Receive and decode the next response; check its correlation id if one is given."""
        data = self.recv_frame(timeout)
        assert data is not None, f"connection closed instead of a {ApiKey(api_key).name} v{version} response"
        received, body = decode_response(data, api_key, version)
        if correlation_id is not None:
            assert received == correlation_id, f"correlation id {received}, expected {correlation_id}"
        return body

    def call(self, api_key: int, version: int, body: dict, timeout: float | None = None) -> dict:
        """One round trip: send a request and return its decoded response body."""
        correlation_id = self.send_request(api_key, version, body)
        return self.recv_response(api_key, version, correlation_id, timeout)

    def pending_bytes(self) -> int:
        """How much of a response is waiting unread in the socket, without waiting for any."""
        timeout = self.sock.gettimeout()
        self.sock.settimeout(0)
        try:
            return len(self.sock.recv(1 << 20, socket.MSG_PEEK))
        except BlockingIOError:
            return 0
        finally:
            self.sock.settimeout(timeout)

    def sent_and_read_by_peer(self) -> bool:
        """True once everything sent on this connection has left this socket and the broker has taken
        it off its own (both queues empty, read from ``/proc/net/tcp``): a request sent is then in the
        broker's hands, being handled or parked (a long-polling fetch), not waiting in the kernel."""
        local_port, peer_port = self.sock.getsockname()[1], self.sock.getpeername()[1]
        queues = {}  # (local port, remote port) -> (send queue, receive queue) of each end on this host
        with open("/proc/net/tcp") as table:
            for line in table.readlines()[1:]:
                fields = line.split()
                local, remote, (send, receive) = fields[1], fields[2], fields[4].split(":")
                ports = (int(local.split(":")[1], 16), int(remote.split(":")[1], 16))
                queues[ports] = (int(send, 16), int(receive, 16))
        ours, brokers = queues.get((local_port, peer_port)), queues.get((peer_port, local_port))
        return ours is not None and brokers is not None and ours[0] == 0 and brokers[1] == 0

    def closed_by_peer(self, timeout: float | None = None) -> bool:
        """True if the broker closes the connection (EOF or reset) within ``timeout``, with no data first."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(4096)
            except (ConnectionResetError, BrokenPipeError):
                return True
            except TimeoutError:
                return False
            if not data:
                return True
            raise AssertionError(f"expected the connection to close, received {data[:64]!r}")

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "WireClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(host: str, port: int, timeout: float = DEFAULT_TIMEOUT) -> WireClient:
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return WireClient(sock, timeout)


def connect_to(broker, timeout: float = DEFAULT_TIMEOUT) -> WireClient:
    """A client connected to a ``EmbeddedBroker``."""
    return connect("127.0.0.1", broker.port, timeout)


# -- small request builders shared by the tests -----------------------------------------------


def produce_body(topic: str, partition: int, records, acks: int = 1, timeout_ms: int = 5000) -> dict:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topics": [{"name": topic, "partitions": [{"index": partition, "records": records}]}],
    }


def fetch_body(
    partitions,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50 * 1024 * 1024,
    partition_max_bytes: int = 1024 * 1024,
) -> dict:
    """A Fetch request body for ``[(topic, partition, offset), ...]`` (grouped by topic, order kept)."""
    topics = []
    for topic, partition, offset in partitions:
        if not topics or topics[-1]["topic"] != topic:
            topics.append({"topic": topic, "partitions": []})
        topics[-1]["partitions"].append(
            {
                "partition": partition,
                "current_leader_epoch": -1,
                "fetch_offset": offset,
                "log_start_offset": -1,
                "partition_max_bytes": partition_max_bytes,
            }
        )
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": topics,
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def list_offsets_body(topic: str, partition: int, timestamp: int, current_leader_epoch: int = -1) -> dict:
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": partition, "current_leader_epoch": current_leader_epoch, "timestamp": timestamp}
                ],
            }
        ],
    }


def create_topics_body(
    name: str, partitions: int = 1, replication_factor: int = 1, configs=None, validate_only: bool = False
) -> dict:
    return {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
        ],
        "timeout_ms": 5000,
        "validate_only": validate_only,
    }
