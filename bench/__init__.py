"""factledger's benchmark suite: `python -m bench --events N [--json FILE]` (see docs/performance.md)."""
