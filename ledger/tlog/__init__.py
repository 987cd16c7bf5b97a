"""The transparency log: the Merkle tree, signed checkpoints, and the auditor's stand-alone verifier."""
