"""Recall: the few current facts that belong in the next prompt, scored, packed and rendered."""
