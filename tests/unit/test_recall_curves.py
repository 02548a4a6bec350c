"""The recall-latency curves' reading of their points (ours' cheapest point at a peer's recall)
and their SVG plot, on points small enough to check by hand."""

from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from types import ModuleType
from typing import Any

_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(_BENCHMARKS))  # the shared modules (_common, _scifact, _plots)
sys.path.insert(0, str(_BENCHMARKS / "peers"))  # peers.py, _peers_data.py


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


curves = _module("curves", _BENCHMARKS / "peers" / "curves.py")
plots = _module("_plots", _BENCHMARKS / "_plots.py")


def _point(recall: float, p50: float, **knobs: Any) -> dict[str, Any]:
    base = {"candidate_pool": 40, "ef_search": 40, "read_exactly": False, "default": False}
    return {**base, **knobs, "recall_at_10": recall, "p50_ms": p50}


def test_each_peer_point_of_recall_090_or_more_meets_ours_cheapest_point_that_reaches_it() -> None:
    tenant = "t-10pct"
    systems = {
        "ours": {
            tenant: [
                _point(0.80, 1.0, ef_search=10),
                _point(0.93, 3.0, ef_search=80),
                _point(0.99, 5.0, ef_search=320),
                _point(1.00, 9.0, read_exactly=True),
            ]
        },
        "floor": {tenant: [_point(0.93, 2.0), _point(1.00, 7.0, read_exactly=True)]},
        "peer": {
            tenant: [
                {"ef_search": 40, "recall_at_10": 0.85, "p50_ms": 1.0},  # below 0.90: left out
                {"ef_search": 160, "recall_at_10": 0.92, "p50_ms": 4.0},
                {"ef_search": 640, "recall_at_10": 0.995, "p50_ms": 4.0},
            ]
        },
    }

    rows = curves._against_peers(systems)

    assert [row["peer_ef_search"] for row in rows] == [160, 640]
    at_092, at_0995 = rows
    assert at_092["ours"]["ef_search"] == 80 and at_092["ours"]["p50_ms"] == 3.0
    assert at_092["ours_to_peer"] == 0.75
    assert at_092["floor"]["p50_ms"] == 2.0
    # 0.99 does not reach 0.995: the exact read is ours' cheapest point that does.
    assert at_0995["ours"]["read_exactly"] is True and at_0995["ours_to_peer"] == 9.0 / 4.0
    assert at_0995["floor"]["p50_ms"] == 7.0


def test_a_peer_recall_ours_never_reaches_has_no_point_of_ours() -> None:
    systems = {
        "ours": {"t": [_point(0.91, 1.0)]},
        "floor": {"t": [_point(0.91, 0.5)]},
        "peer": {"t": [{"ef_search": 40, "recall_at_10": 0.95, "p50_ms": 2.0}]},
    }

    (row,) = curves._against_peers(systems)

    assert row["ours"] is None and row["floor"] is None and row["ours_to_peer"] is None


def test_the_plot_is_svg_with_a_line_and_a_legend_entry_per_system_in_each_panel(
    tmp_path: Path,
) -> None:
    lines = [
        plots.Line("ours: graph", [(0.8, 1.0), (0.95, 2.5), (1.0, 4.0)], marked=(0.95, 2.5)),
        plots.Line("floor: graph", [(0.8, 0.4), (1.0, 1.5)], dashed=True),
        plots.Line("peer", [(0.7, 0.9), (0.99, 30.0)]),
    ]
    path, again = tmp_path / "curves.svg", tmp_path / "again.svg"
    panels = [plots.Panel("one", lines), plots.Panel("two", lines[:2])]

    plots.write_chart(path, "a title", panels, note="a note")
    plots.write_chart(again, "a title", panels, note="a note")

    root = ElementTree.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    texts = {"".join(t.itertext()).strip() for t in root.iter(f"{ns}text")}
    assert {"ours: graph", "floor: graph", "peer", "a title", "one", "two", "a note"} <= texts
    drawn = [g for g in root.iter(f"{ns}g") if g.attrib.get("id", "").startswith("line2d")]
    # A line per system in each panel, the defaults' point apart, and a legend entry each.
    assert len(drawn) >= 5 + 1 + 3
    assert (
        path.read_bytes() == again.read_bytes()
    )  # no creation date: the same figures, the same file
