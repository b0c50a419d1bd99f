"""Kafka's security model, shared by the broker's listeners and the project's client: TLS contexts
from Kafka's ``ssl.*`` settings, SASL mechanisms (PLAIN, SCRAM-SHA-256/512) as sans-I/O exchanges,
JAAS-style login settings, and the SCRAM credentials stored in the log directory."""
