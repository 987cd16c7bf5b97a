"""Right-to-forget and retention: scope, targets, scrub, re-decision and what may remain."""
