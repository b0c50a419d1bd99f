"""Produce and fetch over TLS, side by side with plaintext, on one broker in one run.

The broker has a PLAINTEXT and an SSL listener (a certificate made for the run with trustme); the
same confluent-kafka producer settings (acks=1, uncompressed, ~1 MiB batches, 1 KiB values) write
one topic through each listener, then a consumer reads each topic whole through the listener it
was written through. The figure is the TLS throughput as a ratio of the plaintext one. Plaintext
fetches go out with sendfile (slices of 512 KiB and more); under TLS the broker reads each slice
in 256 KiB pieces and encrypts them in Python's ssl (sendfile cannot encrypt).

    .venv/bin/python -m benchmarks.tls_throughput [--mib 128]
"""

import argparse
import os
import tempfile

import trustme

from broker.embedded import EmbeddedBroker

from .broker_throughput import MIB, consume, produce

VALUE_BYTES = 1024


def measure(bootstrap: str, topic: str, total_bytes: int, client_settings: dict) -> dict:
    seconds, records = produce(bootstrap, topic, VALUE_BYTES, total_bytes, client_settings=client_settings)
    produce_mb_s = records * VALUE_BYTES / seconds / 1e6
    seconds, size = consume(bootstrap, topic, {0: (0, records)}, client_settings)
    return {"produce_mb_s": produce_mb_s, "fetch_mb_s": size / seconds / 1e6}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="MiB produced, then fetched, per listener")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        ca = trustme.CA()
        server_pem, ca_pem = os.path.join(directory, "server.pem"), os.path.join(directory, "ca.pem")
        ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(server_pem)
        ca.cert_pem.write_to_path(ca_pem)
        broker = EmbeddedBroker(
            os.path.join(directory, "log"),
            {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.location": server_pem},
        ).start()
        try:
            plain = measure(broker.bootstrap_of(0), "plaintext", args.mib * MIB, {})
            tls = measure(
                broker.bootstrap_of(1), "tls", args.mib * MIB, {"security.protocol": "SSL", "ssl.ca.location": ca_pem}
            )
        finally:
            broker.stop()
    print(f"confluent-kafka, 1 KiB values, {args.mib} MiB through each listener")
    for what in ("produce_mb_s", "fetch_mb_s"):
        print(
            f"  {what[:-5]:8} plaintext {plain[what]:7.1f} MB/s   TLS {tls[what]:7.1f} MB/s   "
            f"ratio {tls[what] / plain[what]:.2f}"
        )
    return {"plaintext": plain, "tls": tls}


if __name__ == "__main__":
    main()
