"""The peers' figures for people: one line per queue, riddlectl's first when given."""

from __future__ import annotations

from typing import Any

HEADER = (
    f"{'queue':14} {'durable':7} {'wake-up':13} {'riddles/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
    f"{'CPU ms/riddle':>13} {'peak RSS kB':>11}"
)


def line(name: str, durable: Any, wakeup: str, figures: dict[str, Any]) -> str:
    """One queue's line; `figures` holds `throughput`, `latency`, `cpu` and the processes'
    figures (`workers` or `agents`), any of them possibly missing."""
    tput = (figures.get("throughput") or {}).get("per_s")
    lat = figures.get("latency") or {}
    cpu = (figures.get("cpu") or {}).get("ms_per_riddle")
    procs = figures.get("workers") or figures.get("agents") or []
    peak = max((p.get("peak_rss_kb") or 0 for p in procs), default=0) or None
    return (
        f"{name:14} {_yes_no(durable):7} {wakeup:13} {_num(tput, 9, 1)} "
        f"{_num(lat.get('p50_ms'), 8, 2)} {_num(lat.get('p99_ms'), 8, 2)} "
        f"{_num(cpu, 13, 2)} {_num(peak, 11, 0)}"
    )


def render(peers: list[dict[str, Any]], riddlectl: dict[str, Any] | None = None) -> str:
    lines = [HEADER]
    if riddlectl is not None:
        # On a PostgreSQL spool the agents are woken by LISTEN/NOTIFY, as procrastinate's.
        on_database = not riddlectl.get("on_directory", True)
        wakeup = "listen/notify" if on_database else "inotify"
        lines.append(line("riddlectl", riddlectl["durable"], wakeup, riddlectl))
    for peer in peers:
        if peer["skipped"]:
            lines.append(f"{peer['name']:14} skipped: {peer['skipped']}")
            continue
        lines.append(line(peer["name"], peer["durable"], peer["wakeup"], peer))
        if peer["error"]:
            lines.append(f"{'':14} error: {peer['error']}")
    return "\n".join(lines)


def _yes_no(value: Any) -> str:
    return "yes" if value else "no"


def _num(value: float | None, width: int, places: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width},.{places}f}"
