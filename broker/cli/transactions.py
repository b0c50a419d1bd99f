"""``kafkalog transactions list|describe``: the transactional ids of a cluster and their state, in
the shape of Kafka's ``kafka-transactions.sh`` (``list``: every broker's ids with their producer id,
state and coordinator; ``describe``: one id's state, producer id and epoch, timeout, start time and
the partitions of its open transaction). Works against any cluster serving ListTransactions and
DescribeTransactions (this broker, Kafka 3.0+). Aborting a hanging transaction (DescribeProducers)
is not built yet.
"""

import json

from broker.arguments import Subcommands
from broker.client import describe_transaction, list_transactions

from .common import OK, add_format_argument, add_verb
from .topics import text_table

PROG = "kafkalog transactions"


def _list(client, args) -> int:
    listed = list_transactions(client, args.state or ())
    if args.format == "json":
        for t in listed:
            print(
                json.dumps(
                    {
                        "transactionalId": t.transactional_id,
                        "producerId": t.producer_id,
                        "state": t.state,
                        "coordinator": t.coordinator,
                    }
                )
            )
    elif listed:
        rows: list[list] = [["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]]
        rows += [[t.transactional_id, t.coordinator, t.producer_id, t.state] for t in listed]
        print(text_table(rows))
    return OK


def _describe(client, args) -> int:
    state = describe_transaction(client, args.transactional_id)
    partitions = [f"{t['topic']}-{p}" for t in state["topics"] for p in t["partitions"]]
    if args.format == "json":
        shown = {
            "transactionalId": state["transactional_id"],
            "coordinator": state["coordinator"],
            "producerId": state["producer_id"],
            "producerEpoch": state["producer_epoch"],
            "state": state["transaction_state"],
            "timeoutMs": state["transaction_timeout_ms"],
            "startTimeMs": state["transaction_start_time_ms"],
            "partitions": partitions,
        }
        print(json.dumps(shown))
        return OK
    rows = [
        ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState"]
        + ["TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TopicPartitions"],
        [
            state["coordinator"],
            state["transactional_id"],
            state["producer_id"],
            state["producer_epoch"],
            state["transaction_state"],
            state["transaction_timeout_ms"],
            state["transaction_start_time_ms"] if state["transaction_start_time_ms"] >= 0 else "None",
            ",".join(partitions) or "-",
        ],
    ]
    print(text_table(rows))
    return OK


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "transactions",
        help="list and describe transactional ids",
        description="Transactional ids and their transactions, as kafka-transactions.sh shows them.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    listing = add_verb(
        verbs,
        PROG,
        "list",
        "list the transactional ids",
        "List every transactional id the brokers coordinate, with its producer id, state and coordinator.",
        [
            "kafkalog transactions list --bootstrap-server 127.0.0.1:9092",
            "kafkalog transactions list --state Ongoing --format json",
        ],
        _list,
    )
    listing.add_argument(
        "--state",
        action="append",
        metavar="STATE",
        help="only ids in this state (Kafka's names: Empty, Ongoing, PrepareCommit, ...; repeatable)",
    )
    add_format_argument(listing, 'one JSON object per id: {"transactionalId", "producerId", "state", "coordinator"}')
    describe = add_verb(
        verbs,
        PROG,
        "describe",
        "show a transactional id's transaction",
        "Show a transactional id's state, producer id and epoch, timeout, the start time of its open\n"
        "transaction and the partitions in it.",
        [
            "kafkalog transactions describe --transactional-id orders-loader",
            "kafkalog transactions describe --transactional-id orders-loader --format json",
        ],
        _describe,
    )
    describe.add_argument("--transactional-id", required=True, metavar="ID", help="the transactional id")
    add_format_argument(describe, "one JSON object")
