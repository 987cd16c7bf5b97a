"""What an auditor reads: verify, proofs, the log, why, ad-hoc SQL, erasure reports."""
