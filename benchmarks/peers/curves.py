"""Recall-latency curves: this library and its peers (langchain-postgres ``PGVector`` and
``PGVectorStore``, llama-index's ``PGVectorStore``), each at its documented best with the knob it
offers swept, and the floor (our plan's bare statement) at the same knobs, on the rows an earlier
``peers.py`` run of the same ``--rows`` kept in ``--data-dir``.

Swept: pgvector's ``hnsw.ef_search`` for every system; ours also its candidate pool (the rows
the statement hands to the ranking) and its exact-read factor (a graph search always, or the
tenant read exactly). Each point is p50 (of each claim's median over the passes) and recall@10
against the exact nearest rows, for the tenants of 0.1%, 1% and 10% of the rows. Writes
``benchmarks/results/curves[-ROWS].json`` and an SVG plot beside it (one panel per tenant, one
line per system), and prints, for every peer point of recall >= 0.90, ours' cheapest point that
reaches its recall. Figures and how to read them: benchmarks/README.md, "Recall against
latency".

Usage: python benchmarks/peers/curves.py --data-dir DIR [--rows 100000] [--peers-python PATH]
       [--libraries langchain,langchain-pgvectorstore,llamaindex] [--ef-search 10,20,...]
       [--passes 3] [--plot PATH] [--json PATH]
       python benchmarks/peers/curves.py --replot RESULT (the comparison and the plot again)
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import RESULTS, ROOT, add_output, timed_passes, write_result
from _peers_common import (
    PASSES,
    PEERS_DATABASE,
    PeersData,
    floor_search,
    peer_summary,
    peer_work,
    peers_data,
    run_peer,
    searched,
)
from _plots import Line, Panel, write_chart
from _scifact import AS_OF, OURS, TENANTS, floor_statement, row_numbers, shapes, vector_alone
from pgvector import HalfVector
from pgvector.psycopg import register_vector

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.defaults import DEFAULT_EF_SEARCH
from retrieval.search.retriever import HybridRetriever

PEER_EF_SEARCH = (10, 20, 40, 80, 160, 320, 640)
# Ours through the graph: (candidate pool, hnsw.ef_search); the default is (40, 160). The
# retriever keeps ef_search at least the pool, so below the pool the pool itself is lowered.
OUR_GRAPH = ((10, 10), (20, 20), (40, 40), (40, 80), (40, 160), (40, 320), (40, 640))
GRAPH_ALWAYS = 0.0
EXACT_ALWAYS = 999_999.0  # n^2 <= factor x pool x N for any tenant here
LIBRARIES = "langchain,langchain-pgvectorstore,llamaindex"
# Recalls this close count as the same level: ours stores halfvec, whose rounding ties a pair of
# rows now and then (0.9997 is one of the 3,000 nearest rows of 300 claims missed).
RECALL_TOLERANCE = 0.0005


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="the server's data, kept by `peers.py --rows ROWS --data-dir DIR` (ours and the "
        "peers' rows)",
    )
    parser.add_argument(
        "--peers-python", type=Path, default=ROOT / ".venv-peers" / "bin" / "python"
    )
    parser.add_argument("--libraries", default=LIBRARIES, help="comma-separated ('' for ours)")
    parser.add_argument(
        "--ef-search",
        default=",".join(map(str, PEER_EF_SEARCH)),
        help="the peers' hnsw.ef_search values, comma-separated",
    )
    parser.add_argument("--passes", type=int, default=PASSES, help="timed passes per point")
    parser.add_argument(
        "--replot",
        type=Path,
        help="measure nothing: recompute the comparison with the peers and the plot of this "
        "earlier result file, and write both again",
    )
    parser.add_argument("--plot", type=Path, help="the SVG's path (default: beside the JSON)")
    add_output(parser)
    args = parser.parse_args()
    if args.replot is not None:
        record = json.loads(args.replot.read_text())
        record["results"]["against_peers"] = _against_peers(record["results"]["systems"])
        record["results"]["recall_tolerance"] = RECALL_TOLERANCE
        args.replot.write_text(json.dumps(record, indent=2) + "\n")
        _plot(args.plot or args.replot.with_suffix(".svg"), record)
        return
    if args.data_dir is None:
        parser.error("--data-dir is needed to measure (the rows an earlier peers.py run kept)")
    libraries = [name for name in args.libraries.split(",") if name]
    sweep = [int(value) for value in args.ef_search.split(",")]
    database = connect(DatabaseConfig(data_dir=args.data_dir))
    assert database.embedded is not None
    embedder = SentenceTransformerEmbedder()
    data = peers_data(embedder, args.rows, args.data_dir.parent)
    systems: dict[str, dict[str, list[dict[str, Any]]]] = {}
    schema = OURS["ours"][0]
    store = MemoryStore(database.engine, schema=schema, embedder=embedder)
    ours, floor = _ours_and_floor(database, store, data, args.passes)
    systems["ours"], systems["floor"] = ours, floor
    if libraries:
        url = str(database.embedded.url(PEERS_DATABASE))
        plan = {"claims": data.claims, "tenants": list(TENANTS), "passes": args.passes,
                "scifact": False, "reuse": True, "ef_search_sweep": sweep}  # fmt: skip
        work = peer_work(plan, data.rows, data.vectors, data.claim_vectors)
        for library in libraries:
            summary = peer_summary(run_peer(args.peers_python, library, url, work),
                                    data.exact, data.qrels, data.query_ids)  # fmt: skip
            systems[library] = {
                tenant: [
                    {"ef_search": ef, **summary[f"best_ef_search_{ef}"][tenant]} for ef in sweep
                ]
                for tenant in TENANTS
            }
            print(library, json.dumps(systems[library]), flush=True)
    results = {
        "rows": args.rows,
        "tenant_rows": data.tenant_rows,
        "claims": len(data.claims),
        "passes": args.passes,
        "systems": systems,
        "recall_tolerance": RECALL_TOLERANCE,
        "against_peers": _against_peers(systems),
    }
    record = write_result("curves", results, args, variant=_size(args.rows))
    if not args.no_save:
        plot = args.plot or (args.json or RESULTS / f"curves-{_size(args.rows)}.json").with_suffix(
            ".svg"
        )
        _plot(plot, record)
        print(f"plotted in {plot}")
    database.dispose()


def _size(rows: int) -> str:
    return f"{rows // 1_000_000}m" if rows % 1_000_000 == 0 else f"{rows // 1000}k"


def _ours_and_floor(  # type: ignore[no-untyped-def]
    database, store: MemoryStore, data: PeersData, passes: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Each tenant's points, ours through ``retrieve()`` and the floor's bare statement at the
    same knobs, measured one after the other per point."""
    alone = vector_alone(shapes()["semantic"])
    settings = [(pool, ef, GRAPH_ALWAYS) for pool, ef in OUR_GRAPH]
    settings.append((alone.candidate_pool, DEFAULT_EF_SEARCH, EXACT_ALWAYS))
    row_of = row_numbers(database.engine, store.schema)
    ours: dict[str, list[dict[str, Any]]] = {tenant: [] for tenant in TENANTS}
    floor: dict[str, list[dict[str, Any]]] = {tenant: [] for tenant in TENANTS}
    halves = [HalfVector(vector.astype(np.float16)) for vector in data.claim_vectors]
    with (
        HybridRetriever.from_store(store, config=alone) as retriever,
        psycopg.connect(database.embedded.libpq_dsn(), autocommit=True) as bare,
    ):
        register_vector(bare)
        bare.execute("SET hnsw.iterative_scan = relaxed_order")
        for tenant, nearest in data.exact.items():
            _, exact_by_default = floor_statement(
                bare, store.schema, tenant, config=RetrievalConfig()
            )
            for pool, ef_search, factor in settings:
                config = replace(
                    alone, candidate_pool=pool, ef_search=ef_search, exact_scan_factor=factor
                )
                exactly = factor == EXACT_ALWAYS
                point = {
                    "candidate_pool": pool,
                    "ef_search": ef_search,
                    "read_exactly": exactly,
                    "default": (exactly == exact_by_default)
                    and (exactly or (pool, ef_search) == (alone.candidate_pool, DEFAULT_EF_SEARCH)),
                }

                def search(index: int, tenant: str = tenant, config: Any = config) -> list[int]:
                    found = retriever.retrieve(
                        data.claims[index], tenant_id=tenant, as_of=AS_OF, config=config
                    )
                    return [row_of[r.metadata["id"]] for r in found]

                ours[tenant].append({**point, **_measured(search, nearest, passes)})
                query, _ = floor_statement(bare, store.schema, tenant, config=config)
                bare.execute(f"SET hnsw.ef_search = {max(pool, ef_search)}")
                statement = floor_search(bare, query, halves, tenant, pool, row_of)
                floor[tenant].append({**point, **_measured(statement, nearest, passes)})
                print(tenant, json.dumps(ours[tenant][-1]), json.dumps(floor[tenant][-1]),
                      flush=True)  # fmt: skip
    return ours, floor


def _measured(search: Any, nearest: list[list[int]], passes: int) -> dict[str, Any]:
    return searched(*timed_passes(search, len(nearest), passes), nearest)


def _against_peers(systems: dict[str, dict[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """For every peer point of recall@10 >= 0.90: ours' and the floor's cheapest points that
    reach the same recall (to within ``RECALL_TOLERANCE``), and the ratio of ours to the
    peer's p50 (below 1: ours faster)."""
    rows = []
    for system, tenants in systems.items():
        if system in ("ours", "floor"):
            continue
        for tenant, points in tenants.items():
            for point in points:
                if point["recall_at_10"] < 0.90:
                    continue
                reach = point["recall_at_10"]
                ours = _cheapest(systems["ours"][tenant], reach)
                floor = _cheapest(systems["floor"][tenant], reach)
                rows.append(
                    {
                        "peer": system,
                        "tenant": tenant,
                        "peer_ef_search": point["ef_search"],
                        "peer_recall_at_10": reach,
                        "peer_p50_ms": point["p50_ms"],
                        "ours": ours,
                        "floor": floor,
                        "ours_to_peer": None if ours is None else ours["p50_ms"] / point["p50_ms"],
                    }
                )
    return rows


def _cheapest(points: list[dict[str, Any]], reach: float) -> dict[str, Any] | None:
    able = [p for p in points if p["recall_at_10"] >= reach - RECALL_TOLERANCE]
    if not able:
        return None
    best = min(able, key=lambda p: p["p50_ms"])
    keys = ("candidate_pool", "ef_search", "read_exactly", "p50_ms", "recall_at_10")
    return {key: best[key] for key in keys}


def _plot(path: Path, record: dict[str, Any]) -> None:
    results = record["results"]
    panels = []
    for tenant, share in TENANTS.items():
        lines = []
        for system, tenants in results["systems"].items():
            points = tenants[tenant]
            if system in ("ours", "floor"):
                for exactly, label in ((False, "graph"), (True, "read exactly")):
                    chosen = [p for p in points if p["read_exactly"] is exactly]
                    marked = [p for p in chosen if p["default"]]
                    lines.append(
                        Line(
                            name=f"{system}: {label}",
                            points=[(p["recall_at_10"], p["p50_ms"]) for p in chosen],
                            dashed=system == "floor",
                            marked=(marked[0]["recall_at_10"], marked[0]["p50_ms"])
                            if marked and system == "ours"
                            else None,
                        )
                    )
            else:
                lines.append(Line(system, [(p["recall_at_10"], p["p50_ms"]) for p in points]))
        rows = results["tenant_rows"][tenant]
        panels.append(Panel(f"tenant of {share / 10:g}% ({rows:,} rows)", lines))
    write_chart(
        path,
        f"Recall@10 against p50 latency, {results['rows']:,} rows "
        f"({record['date']}, {record['git_commit']})",
        panels,
        note="hnsw.ef_search swept for all; ours also its pool (the large dot: its defaults) "
        "and reading the tenant exactly; floor: our bare statement at the same knobs",
    )


if __name__ == "__main__":
    main()
