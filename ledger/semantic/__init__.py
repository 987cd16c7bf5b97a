"""Meaning: an offline sentence encoder, and what recall, dedup and review do with it."""
