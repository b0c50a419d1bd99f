"""A recording TCP proxy between a client and a broker: what went over the wire, request by request.

A request frame is a size, then api key, api version, correlation id and the client id (an
int16-prefixed string); the proxy records each one before forwarding it, so an answer never
overtakes the record of its request.

``cut_answer_to(api_key)`` makes the proxy lose the broker's answer to the next request of that
kind: the request is forwarded, and when its answer arrives (so the broker has handled it) the
client's connection is closed instead, as when a network fails after the broker acted.
"""

import contextlib
import socket
import struct
import threading


class RecordingProxy:
    """A TCP proxy on a port known before the broker starts (so the broker can advertise it),
    forwarding to ``target`` once set; records every request frame (api key, client id, bytes)."""

    def __init__(self, target: tuple | None = None):
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self.target = target
        self.requests: list[tuple[int, str | None, bytes]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._answers_to_cut: list[int] = []  # api keys, one entry per answer to lose

    def __enter__(self):
        self._spawn(self._accept)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(10)
        self._server.close()
        assert not any(t.is_alive() for t in self._threads), "proxy threads did not stop"

    def cut_answer_to(self, api_key: int) -> None:
        with self._lock:
            self._answers_to_cut.append(api_key)

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            upstream = socket.create_connection(self.target, timeout=5)
            for sock in (conn, upstream):
                sock.settimeout(0.2)
            cut = threading.Event()  # set: the next answer on this connection is lost
            self._spawn(self._pump, conn, upstream, True, cut)
            self._spawn(self._pump, upstream, conn, False, cut)

    def _pump(self, src, dst, requests: bool, cut: threading.Event) -> None:
        buffer = b""
        with contextlib.suppress(OSError):
            while not self._stop.is_set():
                try:
                    data = src.recv(65536)
                except TimeoutError:
                    continue
                if not data or (not requests and cut.is_set()):
                    break
                if requests:  # record before forwarding: the answer cannot overtake the record
                    buffer += data
                    while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack_from(">i", buffer)[0]:
                        size = struct.unpack_from(">i", buffer)[0]
                        frame, buffer = buffer[4 : 4 + size], buffer[4 + size :]
                        api_key, length = struct.unpack_from(">h", frame)[0], struct.unpack_from(">h", frame, 8)[0]
                        client_id = None if length < 0 else frame[10 : 10 + length].decode()
                        with self._lock:
                            self.requests.append((api_key, client_id, frame))
                            if api_key in self._answers_to_cut:
                                self._answers_to_cut.remove(api_key)
                                cut.set()
                dst.sendall(data)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def take(self) -> list[tuple[int, str | None, bytes]]:
        with self._lock:
            taken, self.requests = self.requests, []
        return taken
