"""The pure domain: events, candidates, the decision table and how a decision is recorded; no connection."""
