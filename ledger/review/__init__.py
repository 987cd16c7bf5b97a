"""The review queue and a reviewer's settlement of disputes, with suggestions by meaning."""
