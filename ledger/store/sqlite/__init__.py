"""The SQLite engine: the ledger file, its guard triggers and WAL checkpoints."""
