"""The words and primitives every layer shares: word lists, ids, the clock, bounded input."""
