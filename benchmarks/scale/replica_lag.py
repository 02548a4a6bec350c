"""How long a streaming replica takes to show what the primary has just stored.

A primary (an embedded server) and a hot standby made from it with ``pg_basebackup`` (the
embedded build's binaries, as the tests make it: ``tests/replica.py``). For each write size
(one memory with ``remember``, batches of 100 and 5,000 with ``remember_many`` and their vectors
given), the seconds from the write's commit to the replica having replayed the primary's WAL
up to it (``pg_last_wal_replay_lsn()``, polled every 2 ms), over ``--writes`` writes: p50, p95
and max. That is the window in which a search on the replica may miss the write, and the reason
for ``read_your_writes=True``.

Usage: python benchmarks/scale/replica_lag.py [--writes 50] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import ROOT, add_output, percentiles, write_result

from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.db.migrate import MigrationSettings, upgrade
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.memory.store import MemoryStore

sys.path.insert(0, str(ROOT))
from tests.replica import streaming_replica, wait_for_replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=50, help="writes per size")
    add_output(parser)
    args = parser.parse_args()

    config = DatabaseConfig(data_dir=Path(tempfile.mkdtemp(prefix="rtv-lag-")) / "pg")
    primary = connect(config)
    upgrade(primary.engine, MigrationSettings.from_config(config))
    primary.dispose()
    assert primary.embedded is not None
    embedder = SentenceTransformerEmbedder()
    store = MemoryStore(primary.engine, embedder=embedder)
    rng = np.random.default_rng(3)
    results: dict[str, Any] = {}
    with (
        streaming_replica(primary.embedded) as replica,
        psycopg.connect(primary.embedded.libpq_dsn(), autocommit=True) as on_primary,
        psycopg.connect(replica.libpq(), autocommit=True) as on_replica,
    ):
        wait_for_replay(primary.embedded, replica)
        for size in (1, 100, 5000):
            lags = []
            for write in range(args.writes if size < 5000 else max(5, args.writes // 10)):
                vectors = rng.normal(size=(size, 384)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                store.remember_many(
                    {"text": f"note {write}.{i}", "tenant_id": "lag", "embedding": vectors[i]}
                    for i in range(size)
                )
                lags.append(_replay_ms(on_primary, on_replica))
                time.sleep(0.05)
            results[f"{size} memories"] = {
                **{f"{k}_ms": v for k, v in percentiles(lags).items()},
                "max_ms": max(lags),
                "writes": len(lags),
            }
    write_result("replica-lag", results, args)


def _replay_ms(on_primary: psycopg.Connection[Any], on_replica: psycopg.Connection[Any]) -> float:
    """Milliseconds until the replica has replayed the primary's WAL as of now."""
    began = time.perf_counter()
    row = on_primary.execute("SELECT pg_current_wal_lsn()").fetchone()
    assert row is not None
    while True:
        done = on_replica.execute(
            "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],)
        ).fetchone()
        if done is not None and done[0]:
            return (time.perf_counter() - began) * 1000
        time.sleep(0.002)


if __name__ == "__main__":
    main()
