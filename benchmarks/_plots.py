"""Line charts drawn by matplotlib (the ``dev`` extra): panels side by side, recall on the x
axis, milliseconds on a logarithmic y axis, one line per system (``peers/curves.py``'s plots)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
    """Panels side by side, each line's points joined in their order, one legend; an SVG
    without a creation date, so that drawing the same figures again changes no byte."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    plt.rcParams["svg.fonttype"] = "none"  # text as text: a small file, searchable
    plt.rcParams["svg.hashsalt"] = "retrieval"  # the same ids each time it is drawn
    plain = FuncFormatter(lambda value, _: f"{value:g}")

    names = list(dict.fromkeys(line.name for panel in panels for line in panel.lines))
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(names)}
    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.4), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        for line in panel.lines:
            xs, ys = zip(*line.points, strict=True) if line.points else ((), ())
            ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.6, color=colour[line.name],
                    linestyle="--" if line.dashed else "-", label=line.name)  # fmt: skip
            if line.marked is not None:
                ax.plot(*line.marked, marker="o", markersize=8, color=colour[line.name])
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
        ax.yaxis.set_minor_formatter(plain)
        ax.set_title(panel.title, fontsize=10, fontweight="bold")
        ax.set_xlabel("recall@10")
        ax.set_ylabel("p50 ms (log)")
        ax.grid(True, which="both", color="#f1f3f5")
    handles, labels = axes[0][0].get_legend_handles_labels()
    seen = dict(zip(labels, handles, strict=True))
    for ax in axes[0][1:]:
        more_handles, more_labels = ax.get_legend_handles_labels()
        seen |= {label: handle for label, handle in zip(more_labels, more_handles, strict=True)
                 if label not in seen}  # fmt: skip
    figure.suptitle(title, fontsize=12, fontweight="bold")
    figure.legend(seen.values(), seen.keys(), loc="lower center", ncol=3, frameon=False)
    if note:
        figure.text(0.01, 0.005, note, fontsize=8, color="#495057")
    rows = -(-len(seen) // 3)
    figure.tight_layout(rect=(0, 0.05 + 0.05 * rows, 1, 1))
    figure.savefig(path, format="svg", metadata={"Date": None})
    plt.close(figure)
