"""Line charts as SVG text, with no plotting library: panels side by side, recall on the x axis,
milliseconds on a logarithmic y axis, one line per system (``peers/curves.py``'s plots)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

WIDTH, HEIGHT = 420, 360  # one panel
LEFT, RIGHT, TOP, BOTTOM = 56, 14, 34, 44
# In the order lines are first named: two of ours, two of the floor's, then the peers'.
COLOURS = ("#1b6ac9", "#0b2e6b", "#2b8a3e", "#0c5d56", "#e67700", "#862e9c", "#c92a2a")


@dataclass(frozen=True)
class Line:
    name: str
    points: Sequence[tuple[float, float]]  # (recall, milliseconds), joined in this order
    dashed: bool = False
    marked: tuple[float, float] | None = None  # one point drawn larger (the defaults)


@dataclass(frozen=True)
class Panel:
    title: str
    lines: Sequence[Line]


def write_chart(path: Path, title: str, panels: Sequence[Panel], note: str = "") -> None:
    """Panels side by side, each line's points joined in their order, one legend."""
    names = list(dict.fromkeys(line.name for panel in panels for line in panel.lines))
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(names)}
    legend_rows = math.ceil(len(names) / 3)
    width = WIDTH * len(panels)
    height = HEIGHT + 24 + 18 * legend_rows + (18 if note else 0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13" '
        f'font-weight="bold">{escape(title)}</text>',
    ]
    for index, panel in enumerate(panels):
        parts += _panel(panel, index * WIDTH, colour)
    for i, name in enumerate(names):
        x = 20 + (i % 3) * (width - 40) / 3
        y = HEIGHT + 20 + 18 * (i // 3)
        dashed = any(line.dashed for panel in panels for line in panel.lines if line.name == name)
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        parts.append(
            f'<line x1="{x}" y1="{y - 4}" x2="{x + 22}" y2="{y - 4}" stroke="{colour[name]}" '
            f'stroke-width="2"{dash}/><text x="{x + 28}" y="{y}">{escape(name)}</text>'
        )
    if note:
        parts.append(f'<text x="20" y="{height - 8}" fill="#495057">{escape(note)}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n")


def _panel(panel: Panel, left: float, colour: dict[str, str]) -> list[str]:
    points = [p for line in panel.lines for p in line.points]
    low_x = min(0.9, math.floor(min(x for x, _ in points) * 20) / 20)
    low_y = 10 ** math.floor(math.log10(min(y for _, y in points)))
    high_y = 10 ** math.ceil(math.log10(max(y for _, y in points)))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def place(x: float, y: float) -> tuple[float, float]:
        across = (x - low_x) / (1.0 - low_x) if low_x < 1.0 else 1.0
        up = (math.log10(y) - math.log10(low_y)) / (math.log10(high_y) - math.log10(low_y))
        return left + LEFT + across * plot_w, TOP + 10 + (1 - up) * plot_h

    x0, y0 = left + LEFT, TOP + 10 + plot_h
    out = [
        f'<text x="{left + LEFT + plot_w / 2}" y="{TOP + 2}" text-anchor="middle" '
        f'font-weight="bold">{escape(panel.title)}</text>',
        f'<rect x="{x0}" y="{TOP + 10}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#adb5bd"/>',
        f'<text x="{x0 + plot_w / 2}" y="{y0 + 32}" text-anchor="middle">recall@10</text>',
        f'<text x="{left + 14}" y="{TOP + 10 + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 {left + 14} {TOP + 10 + plot_h / 2})">p50 ms (log)</text>',
    ]
    steps = round((1.0 - low_x) / 0.05)
    for i in range(steps + 1):
        tick = low_x + i * 0.05
        x, _ = place(tick, low_y)
        out.append(f'<line x1="{x}" y1="{TOP + 10}" x2="{x}" y2="{y0}" stroke="#f1f3f5"/>')
        if i % (2 if steps > 6 else 1) == 0:
            out.append(f'<text x="{x}" y="{y0 + 14}" text-anchor="middle">{tick:.2f}</text>')
    decade = low_y
    while decade <= high_y * 1.0001:
        for factor in (1, 2, 5):
            value = decade * factor
            if value > high_y * 1.0001:
                break
            _, y = place(1.0, value)
            out.append(
                f'<line x1="{x0}" y1="{y}" x2="{x0 + plot_w}" y2="{y}" stroke="#f1f3f5"/>'
                f'<text x="{x0 - 4}" y="{y + 4}" text-anchor="end">{value:g}</text>'
            )
        decade *= 10
    for line in panel.lines:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (place(*p) for p in line.points))
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour[line.name]}" '
            f'stroke-width="1.8"{dash}/>'
        )
        for point in line.points:
            x, y = place(*point)
            radius = 4.5 if point == line.marked else 2.5
            fill = colour[line.name]
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{fill}"/>')
    return out
