"""The issue's targets, the printed table and the JSON file."""

from __future__ import annotations

import json
from pathlib import Path

# key -> (comparison, bound); "x_forget_1k" bounds forget_10k_s by 12 x forget_1k_s.
TARGETS = {
    "observe_batch_ratio": (">=", 0.5),
    "observe_same_rows_ratio": (">=", 0.5),
    "observe_cost_growth": ("<=", 1.25),
    "observe_single_p50_ms": ("<=", 1.0),
    "observe_single_p99_ms": ("<=", 5.0),
    "replay_ratio": (">=", 0.3),
    "replay_speedup_2": (">=", 1.7),           # replay --jobs 2 against one job, same process
    "replay_peak_rss_mb": ("<=", 500.0),
    "forget_user_p50_ms": ("<=", 50.0),
    "forget_10k_s": ("<=", "12 x forget_1k_s"),
    "recall_p99_ms": ("<=", 10.0),
    "as_of_p99_ms": ("<=", 10.0),
    "verify_ratio": (">=", 0.5),
    "verify_full_ratio": (">=", 0.3),
    "vs_eventsourcing_ratio": (">=", 1.0),
    "vs_adk_add_ratio": (">=", 0.5),
    "recall_p99_vs_adk_search": ("<=", 1.0),    # recall_p99_ms / adk_sqlite_search_p99_ms
    "recall_recorded_vs_unrecorded_p99": ("<=", 1.5),   # the access ledger: a serve recorded
}

ORDER = (
    "events", "candidates", "observe_batch_per_s", "raw_insert_per_s", "observe_batch_ratio",
    "same_rows_insert_per_s", "observe_same_rows_ratio",
    "observe_cost_growth", "observe_single_p50_ms", "observe_single_p99_ms", "replay_per_s",
    "raw_read_per_s", "replay_ratio", "replay_jobs2_per_s", "replay_jobs2_ratio",
    "replay_speedup_2", "parallel_ceiling_2", "replay_peak_rss_mb", "forget_user_p50_ms",
    "forget_user_p99_ms", "forget_1k_s", "forget_10k_s", "recall_p50_ms", "recall_p99_ms",
    "recall_mean_selected", "recall_unchecked_p50_ms", "recall_unchecked_p99_ms", "recall_recorded_p99_ms",
    "recall_unrecorded_p50_ms", "recall_unrecorded_p99_ms", "recall_recorded_vs_unrecorded_p99", "as_of_p50_ms",
    "as_of_p99_ms", "verify_per_s", "raw_chain_per_s", "verify_ratio", "verify_full_per_s",
    "verify_full_ratio", "verify_refold_ratio", "verify_changed_ratio", "checkpoint_ms", "prove_inclusion_p50_ms",
    "prove_consistency_p50_ms",
    "verify_checkpoint_s", "bytes_per_event", "eventsourcing_append_per_s", "vs_eventsourcing_ratio",
    "adk_sqlite_add_per_s", "adk_sqlite_search_p99_ms", "vs_adk_add_ratio",
    "recall_p99_vs_adk_search", "observe_meaning_per_s", "observe_no_meaning_per_s", "observe_meaning_ratio",
)


def verdict(key: str, results: dict) -> str:
    if key not in TARGETS:
        return ""
    op, bound = TARGETS[key]
    value = results.get(key)
    if key == "forget_10k_s":
        one = results.get("forget_1k_s")
        bound = 12 * one if one else None
    if value is None or bound is None:
        return "n/a"
    ok = value >= bound if op == ">=" else value <= bound
    return "met" if ok else "MISSED"


def target_text(key: str) -> str:
    if key not in TARGETS:
        return ""
    op, bound = TARGETS[key]
    return f"{op} {bound}"


def table(results: dict) -> str:
    lines = [f"{'key':<28} {'value':>14}  {'target':<20} verdict", "-" * 74]
    for key in ORDER:
        value = results.get(key)
        shown = "null" if value is None else (f"{value:,.3f}".rstrip("0").rstrip(".")
                                              if isinstance(value, float) else f"{value:,}")
        lines.append(f"{key:<28} {shown:>14}  {target_text(key):<20} {verdict(key, results)}")
    reasons = results.get("null_reasons") or {}
    for key, why in reasons.items():
        lines.append(f"  null {key}: {why}")
    return "\n".join(lines)


def write_json(results: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
