"""The append-only event store: the chain, the log's reads, and one folder per database engine."""
