"""The predicate registry and its pattern language (the offline extractor's rules)."""
