"""The dashboard's charts, drawn on the server as SVG: no script, no library, no CDN.

Every chart is readable without colour: each series has a pattern or a dash of its own,
named in a legend and at the end of its line, and both axes say what they count and in
which unit. Colours come from the style sheet (classes `s0`…`s5`), so that dark mode
changes them without touching the drawing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from html import escape

W, H = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 96, 28, 40
DASHES = ("", "6 3", "2 3", "10 3 2 3", "1 5", "12 6")  # one per series, beside colour
MARKS = ("●", "■", "▲", "◆", "▼", "✚")


def _scale(top: float) -> float:
    """A round upper bound of the y axis at or above `top`."""
    if top <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(top))) / 10 if top >= 1 else 1.0
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= top:
            return step * magnitude
    return top


def _number(value: float) -> str:
    return f"{value:g}" if value < 10_000 else f"{value / 1000:g}k"


def _time_label(stamp: float, step_seconds: int) -> str:
    local = time.localtime(stamp)
    return time.strftime("%a %H:%M" if step_seconds >= 3600 else "%H:%M", local)


def _frame(
    chart_id: str, title: str, unit: str, top: float, starts: Sequence[float], step: int
) -> list[str]:
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    out = [
        f'<svg id="{chart_id}" class="chart" viewBox="0 0 {W} {H}" role="img" '
        f'aria-labelledby="{chart_id}-title" aria-describedby="{chart_id}-desc" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{chart_id}-title">{escape(title)}</title>',
        f'<defs><pattern id="{chart_id}-hatch" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="6" height="6" class="hatch-bg"/>'
        '<line x1="0" y1="0" x2="0" y2="6" class="hatch-line" stroke-width="3"/>'
        "</pattern></defs>",
        f'<text class="axis-title" x="{LEFT}" y="16">{escape(unit)}</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
        )
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_number(top * fraction)}</text>"
        )
    count = max(1, len(starts))
    every = max(1, count // 6)
    for i in range(0, count, every):
        x = LEFT + plot_w * (i + 0.5) / count
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{_time_label(starts[i], step)}</text>"
        )
    out.append(
        f'<text class="axis-title" x="{LEFT + plot_w / 2:.0f}" y="{H - 4}" '
        f'text-anchor="middle">time (server clock, one point per {_span(step)})</text>'
    )
    return out


def _desc(chart_id: str, unit: str, series: Mapping[str, Sequence[float | None]]) -> str:
    """The chart in words (its text alternative): each series' latest value."""
    said = []
    for name, points in series.items():
        known = [v for v in points if v is not None]
        said.append(f"{name} {_number(known[-1])}" if known else f"{name} no data")
    text = f"{unit}, latest: {', '.join(said)}" if said else f"{unit}: no data"
    return f'<desc id="{chart_id}-desc">{escape(text)}</desc>'


def _span(step_seconds: int) -> str:
    minutes = step_seconds // 60
    return "minute" if minutes == 1 else f"{minutes} minutes" if minutes < 60 else "hour"


def bars(
    chart_id: str,
    title: str,
    unit: str,
    starts: Sequence[float],
    step: int,
    series: Mapping[str, Sequence[float]],
) -> str:
    """Side-by-side bars per bucket: the first series solid, the second hatched."""
    names = list(series)
    top = _scale(max((v for values in series.values() for v in values), default=0.0))
    out = _frame(chart_id, title, unit, top, starts, step)
    out.append(_desc(chart_id, unit, series))
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    count = max(1, len(starts))
    slot = plot_w / count
    width = max(0.5, slot * 0.8 / max(1, len(names)))
    for k, name in enumerate(names):
        fill = f"url(#{chart_id}-hatch)" if k % 2 else ""
        # The hatched series has no colour class: a class's fill would hide the pattern.
        cls = "bar hatched" if k % 2 else f"bar s{k}"
        for i, value in enumerate(series[name]):
            if value <= 0:
                continue
            h = plot_h * value / top
            x = LEFT + slot * i + slot * 0.1 + width * k
            fill_attr = f' fill="{fill}"' if fill else ""
            out.append(
                f'<rect class="{cls}"{fill_attr} x="{x:.2f}" y="{TOP + plot_h - h:.2f}" '
                f'width="{width:.2f}" height="{h:.2f}"><title>{escape(name)}: '
                f"{_number(value)} {escape(unit)}</title></rect>"
            )
        fill_attr = f' fill="url(#{chart_id}-hatch)"' if k % 2 else ""
        y = TOP + 14 + 18 * k
        out.append(
            f'<rect class="{cls}"{fill_attr} x="{W - RIGHT + 10}" y="{y - 10}" width="12" '
            'height="12"/>'
        )
        out.append(f'<text class="legend" x="{W - RIGHT + 26}" y="{y}">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def lines(
    chart_id: str,
    title: str,
    unit: str,
    starts: Sequence[float],
    step: int,
    series: Mapping[str, Sequence[float | None]],
) -> str:
    """One line per series, each with a dash and a mark of its own, named at its end and
    in the legend; gaps where a value is missing."""
    values = [v for points in series.values() for v in points if v is not None]
    top = _scale(max(values, default=0.0))
    out = _frame(chart_id, title, unit, top, starts, step)
    out.append(_desc(chart_id, unit, series))
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    count = max(1, len(starts))
    for k, (name, points) in enumerate(series.items()):
        dash = DASHES[k % len(DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        path, pen_up, last = [], True, None
        for i, value in enumerate(points):
            if value is None:
                pen_up = True
                continue
            x = LEFT + plot_w * (i + 0.5) / count
            y = TOP + plot_h * (1 - value / top)
            path.append(f"{'M' if pen_up else 'L'}{x:.1f} {y:.1f}")
            pen_up, last = False, (x, y)
        if path:
            out.append(f'<path class="line s{k}"{dash_attr} fill="none" d="{" ".join(path)}"/>')
        if last is not None:
            out.append(
                f'<text class="mark s{k}" x="{last[0]:.1f}" y="{last[1] + 4:.1f}" '
                f'text-anchor="middle">{MARKS[k % len(MARKS)]}</text>'
            )
        y = TOP + 14 + 16 * k
        out.append(
            f'<line class="line s{k}"{dash_attr} x1="{W - RIGHT + 8}" x2="{W - RIGHT + 26}" '
            f'y1="{y - 4}" y2="{y - 4}"/>'
        )
        out.append(
            f'<text class="legend" x="{W - RIGHT + 30}" y="{y}">'
            f"{MARKS[k % len(MARKS)]} {escape(name)}</text>"
        )
    out.append("</svg>")
    return "".join(out)
