"""Fetch-sized file slices to a socket: ``loop.sendfile`` against pread + write, by slice size.

This is the choice ``broker/server/connection.py`` makes for the record bytes of a fetch
response (``SENDFILE_MIN_BYTES``). An asyncio server on 127.0.0.1 answers each 4-byte request
of a client (on the same event loop) with a 12-byte header and one slice of a file in the page
cache, sent either way; the figure is the median time of a whole round trip over ``--rounds``
rounds, per slice size, so it includes the client's reads, which are the same for both ways.

    .venv/bin/python -m benchmarks.sendfile_threshold [--rounds 2000] [--repeat 5]
"""

import argparse
import asyncio
import multiprocessing
import os
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import BinaryIO

KIB = 1024
SIZES = [512, 4 * KIB, 16 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, 384 * KIB, 512 * KIB, 768 * KIB, 1024 * KIB]
HEADER = b"\0" * 12


async def send_copy(writer: asyncio.StreamWriter, file: BinaryIO, position: int, size: int) -> None:
    writer.write(HEADER)
    writer.write(os.pread(file.fileno(), size, position))
    await writer.drain()


async def send_sendfile(writer: asyncio.StreamWriter, file: BinaryIO, position: int, size: int) -> None:
    writer.write(HEADER)
    await writer.drain()
    await asyncio.get_running_loop().sendfile(writer.transport, file, position, size)
    await writer.drain()


def client(port: int, size: int, rounds: int) -> None:
    """A separate process: ``rounds`` blocking request/response round trips."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = bytearray(len(HEADER) + size)
        for _ in range(rounds):
            sock.sendall(b"ping")
            view = memoryview(buffer)
            while view:
                view = view[sock.recv_into(view) :]


Send = Callable[[asyncio.StreamWriter, BinaryIO, int, int], Awaitable[None]]


async def serve_rounds(send: Send, file: BinaryIO, size: int, rounds: int) -> tuple[float, float]:
    """``(wall, server CPU)`` seconds per round trip, the client being another process."""
    done = asyncio.Event()

    async def serve(reader, writer):
        try:
            while True:
                await reader.readexactly(4)
                await send(writer, file, 0, size)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            done.set()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    process = multiprocessing.Process(target=client, args=(server.sockets[0].getsockname()[1], size, rounds))
    wall, cpu = time.perf_counter(), time.process_time()
    process.start()
    await done.wait()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    process.join()
    server.close()
    await server.wait_closed()
    return wall / rounds, cpu / rounds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5, help="alternating runs of each way; the best is kept")
    args = parser.parse_args(argv)
    with tempfile.TemporaryFile() as file:
        file.write(os.urandom(max(SIZES)))
        file.flush()
        print(f"{'slice':>7} {'copy us':>9} {'sendfile us':>12} {'copy cpu us':>12} {'sendfile cpu us':>16}")
        for size in SIZES:
            best: dict[Send, tuple[float, ...]] = {send_copy: (float("inf"),) * 2, send_sendfile: (float("inf"),) * 2}
            for _ in range(args.repeat):
                for send in best:
                    figures = asyncio.run(serve_rounds(send, file, size, args.rounds))
                    best[send] = tuple(map(min, best[send], figures))
            (copy, copy_cpu), (sendfile, sendfile_cpu) = ((w * 1e6, c * 1e6) for w, c in best.values())
            label = f"{size // KIB}K" if size >= KIB else f"{size}B"
            print(f"{label:>7} {copy:>9.1f} {sendfile:>12.1f} {copy_cpu:>12.1f} {sendfile_cpu:>16.1f}")


if __name__ == "__main__":
    main()
