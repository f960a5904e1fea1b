"""`riddlectl bench`'s verdict: ratios against the reference, the performance targets,
and the outcome written for people.

People are shown what they compare (figures, and the ratios to this machine's own
reference); the targets the project holds itself to are in `--json` only (`targets`),
for its own checks (docs/performance.md)."""

from __future__ import annotations

from typing import Any

from riddlectl.bench import reference
from riddlectl.bench.breakdown import render as render_breakdown
from riddlectl.bench.measure import rounded, target
from riddlectl.bench.peers.table import render as peer_table


def judge(out: dict[str, Any], options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """`ratios`: `throughput` (pipeline riddles/s over the reference's in the same fsync
    mode), `group_sync` (durable pipeline riddles/s over the group-sync limit's) and
    `latency_p50` (p50 over one transition in that mode + one inotify wake-up).

    `targets`: `throughput_durable` (>= 1.5), `throughput_group_sync` (>= 0.8),
    `throughput_no_fsync` (>= 0.6), `latency_p50` (<= 4), `status_100k` (seconds over
    100,000 riddles, < 1): each `ratio`, `limit`, `compare`, `holds` (null when not
    measured in this run: the throughput targets of the other fsync mode, status below
    100,000 riddles).
    """
    ref = out["reference"]
    mode = ref["fsync" if options.fsync else "no_fsync"]
    per_s = out["throughput"]["per_s"] if out["throughput"] else None
    tput = per_s / mode["riddles_per_s"] if per_s else None
    limit = (ref.get("group_sync") or {}).get("riddles_per_s")
    share = per_s / limit if per_s and limit and options.fsync else None
    budget = mode["transition_ms"] + (ref["inotify_wakeup"]["median_ms"] or 0.0)
    lat = out["latency"]["p50_ms"] / budget if out["latency"] else None
    status = out["status"]["command_s"] if out["status"] else None
    big = options.status_riddles >= 100_000
    if not out.get("on_directory", True):
        # The reference is the filesystem's: a database spool is compared with its peers
        # on the same server (`--peers procrastinate`), not with it.
        tput = lat = share = None
    ratios = {
        "throughput": rounded(tput),
        "group_sync": rounded(share),
        "latency_p50": rounded(lat),
    }
    targets = {
        "throughput_durable": target(tput if options.fsync else None, ">=", 1.5),
        "throughput_group_sync": target(share, ">=", 0.8),
        "throughput_no_fsync": target(None if options.fsync else tput, ">=", 0.6),
        "latency_p50": target(lat, "<=", 4.0),
        "status_100k": target(status if big else None, "<", 1.0),
    }
    return ratios, targets


def render(outcome: dict[str, Any]) -> str:
    """The outcome for people: one line per figure, then the ratios to the reference."""
    ref = outcome["reference"]
    lines = [
        f"reference: {ref['fsync']['riddles_per_s']:g} riddles/s with fsync, "
        f"{ref['no_fsync']['riddles_per_s']:g} without; inotify wake-up "
        f"{ref['inotify_wakeup']['median_ms']} ms; file create {ref['file_create_us']} us"
    ]
    if ref.get("group_sync"):
        group = ref["group_sync"]
        lines.append(
            f"group-sync limit: {group['riddles_per_s']:g} riddles/s "
            f"({group['riddles_per_s'] * group['transitions_per_riddle']:.0f} transitions/s, "
            f"{group['transitions_per_riddle']} a riddle, one syncfs per "
            f"{reference.GROUP})"
        )
    lines += _pipeline_lines(outcome)
    lines += _ratio_lines(outcome)
    if outcome["error"]:
        lines.append(f"error: {outcome['error']}")
    if outcome["peers"] is not None:
        mine = {**outcome, "durable": outcome["options"]["fsync"]}
        lines += ["", "the same pipeline on other queues, in this run:"]
        lines.append(peer_table(outcome["peers"], riddlectl=mine))
    lines += _comparison_lines(outcome.get("comparison"), len(outcome.get("rounds") or ()))
    return "\n".join(lines)


def _ratio_lines(outcome: dict[str, Any]) -> list[str]:
    """The pipeline over the reference of the same run: what to compare across machines
    and revisions, a slow disk slowing both alike."""
    ratios = outcome.get("ratios") or {}
    durable = "with" if outcome["options"]["fsync"] else "without"
    parts = []
    if ratios.get("throughput") is not None:
        parts.append(f"throughput {ratios['throughput']:g} x the bare loop's ({durable} fsync)")
    if ratios.get("group_sync") is not None:
        parts.append(f"{ratios['group_sync']:g} x the group-sync limit")
    if ratios.get("latency_p50") is not None:
        parts.append(f"p50 latency {ratios['latency_p50']:g} x one transition + one wake-up")
    return [f"against the reference: {'; '.join(parts)}"] if parts else []


def _comparison_lines(comparison: dict[str, Any] | None, rounds: int) -> list[str]:
    if not comparison:
        return []
    lines = ["", f"riddlectl over each peer, {rounds} rounds in turn: median [min, max]"]
    names = {"p50_ms": "p50", "per_s": "riddles/s", "cpu_ms": "CPU/riddle"}
    for peer, figures in comparison.items():
        parts = []
        for key, label in names.items():
            f = figures[key]
            if f["median"] is not None:
                low, high = f["spread"]
                parts.append(f"{label} {f['median']:g} [{low:g}, {high:g}]")
        lines.append(f"  {peer:13} " + ", ".join(parts))
    return lines


def _pipeline_lines(outcome: dict[str, Any]) -> list[str]:
    lines = []
    if outcome["submit"]:
        lines.append(f"submit: {outcome['submit']['per_s']:g} riddles/s")
    if outcome["throughput"]:
        t, c = outcome["throughput"], outcome["cpu"]
        lines.append(
            f"throughput: {t['per_s']:g} riddles/s ({t['done']} done, {t['failed']} failed "
            f"in {t['seconds']:.2f} s), CPU {c['ms_per_riddle']:.2f} ms/riddle"
        )
    if outcome["latency"]:
        lat = outcome["latency"]
        capped = ", capped" if lat["capped"] else ""
        lines.append(
            f"latency: p50 {lat['p50_ms']:.2f} ms, p99 {lat['p99_ms']:.2f} ms "
            f"({lat['riddles']} riddles{capped})"
        )
    lines += render_breakdown(outcome.get("breakdown"))
    peaks = ", ".join(f"{a['stage']} {a['peak_rss_kb']}" for a in outcome["agents"])
    if peaks:
        lines.append(f"agents' peak RSS (kB): {peaks}")
    if outcome["status"]:
        s = outcome["status"]
        lines.append(
            f"status over {s['riddles']} riddles: {s['command_s']:.3f} s "
            f"(library {s['library_s']:.3f} s)"
        )
    if outcome.get("bulk_submit"):
        b = outcome["bulk_submit"]
        lines.append(
            f"bulk submit of {b['riddles']} riddles: {b['per_s']:.0f} riddles/s "
            f"({b['seconds']:.2f} s), CPU {b['cpu_ms_per_riddle']:.3f} ms/riddle "
            f"(load average {b['load_average']})"
        )
    return lines
