"""Experiment for issue 4: a word-level index for the episodic source, against today's matching.

Not used by the library. The episodic source matches each query keyword as ``ILIKE
'%keyword%'`` would (since revision 0006: ``LIKE`` on the trigram-indexed, lower-cased
``search_text`` column) and counts, per row, the keywords it matches; with SciFact
claims (8 keywords) against 100,000 decisions and 100,000 tool calls, every keyword rechecks
thousands of rows (see BENCHMARKS.md, "Why the episodic source misses the target").

The alternative measured here keeps the same matches: keywords are ``\\w+`` words, so a keyword
is a substring of a text exactly when it is a substring of one of the text's ``\\W+``-separated
tokens (lower-cased, as ILIKE compares). A per-tenant vocabulary of tokens (trigram-indexed,
tens of thousands of rows) maps each keyword to its tokens with ``LIKE``, and postings (token,
row) give the rows; hits are counted per row as today. The script builds both tables in the
benchmark schema of ``retrieve.py`` (``bench_one``, loaded there first), checks on every query
that both ways find the same 40 best rows, times both, and drops the tables.

Usage: python benchmarks/episodic_word_index.py --data-dir DIR [--queries 100] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval import scoring
from retrieval.db import make_engine
from retrieval.embedded import start_embedded
from retrieval.read_connections import ReadConnections

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
SCHEMA = "bench_one"
TENANT = "agent-1"
AS_OF = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
WEEK = 7 * 24 * 3600.0

BUILD = [
    f"DROP TABLE IF EXISTS {SCHEMA}.word_postings, {SCHEMA}.word_vocabulary",
    f"""CREATE TABLE {SCHEMA}.word_vocabulary (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id text NOT NULL, token text NOT NULL, UNIQUE (tenant_id, token))""",
    f"""CREATE TABLE {SCHEMA}.word_postings (
        tenant_id text NOT NULL, token_id bigint NOT NULL, item smallint NOT NULL,
        row_id bigint NOT NULL, created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, token_id, item, row_id) INCLUDE (created_at))""",
    f"""INSERT INTO {SCHEMA}.word_vocabulary (tenant_id, token)
        SELECT DISTINCT tenant_id, token FROM (
            SELECT tenant_id, regexp_split_to_table(lower(content), '\\W+') AS token
            FROM {SCHEMA}.decisions
            UNION ALL
            SELECT tenant_id, regexp_split_to_table(lower(tool_name || ' ' || params::text),
                                                    '\\W+')
            FROM {SCHEMA}.tool_calls
        ) AS t WHERE token <> ''""",
    f"""INSERT INTO {SCHEMA}.word_postings
        SELECT DISTINCT s.tenant_id, v.id, s.item, s.id, s.created_at FROM (
            SELECT tenant_id, 1::smallint AS item, id, created_at,
                   regexp_split_to_table(lower(content), '\\W+') AS token
            FROM {SCHEMA}.decisions
            UNION ALL
            SELECT tenant_id, 2::smallint, id, created_at,
                   regexp_split_to_table(lower(tool_name || ' ' || params::text), '\\W+')
            FROM {SCHEMA}.tool_calls
        ) AS s
        JOIN {SCHEMA}.word_vocabulary AS v ON v.tenant_id = s.tenant_id AND v.token = s.token""",
    f"CREATE INDEX ON {SCHEMA}.word_vocabulary USING gin (token gin_trgm_ops)",
    f"VACUUM ANALYZE {SCHEMA}.word_vocabulary",
    f"VACUUM ANALYZE {SCHEMA}.word_postings",
]

_SCORE = f"""0.7::float8 * count(*) / %(n)s
    + 0.3::float8 * power(0.5::float8,
        extract(epoch FROM (%(as_of)s - max(created_at)))::float8 / {WEEK})"""

WORDS = f"""
WITH hits AS (
    SELECT DISTINCT p.item, p.row_id, p.created_at, k.position
    FROM unnest(%(patterns)s::text[]) WITH ORDINALITY AS k(pattern, position)
    CROSS JOIN LATERAL (
        SELECT v.id FROM {SCHEMA}.word_vocabulary AS v
        WHERE v.tenant_id = %(tenant)s AND v.token LIKE k.pattern
    ) AS v
    JOIN {SCHEMA}.word_postings AS p ON p.tenant_id = %(tenant)s AND p.token_id = v.id
)
SELECT item, row_id FROM hits GROUP BY item, row_id
ORDER BY {_SCORE} DESC, item, row_id LIMIT 40
"""

SEARCH_TEXT = f"""
WITH patterns AS MATERIALIZED (
    SELECT lower(k.pattern) AS pattern, k.position
    FROM unnest(%(patterns)s::text[]) WITH ORDINALITY AS k(pattern, position)
), hits AS (
    SELECT 1 AS item, x.id AS row_id, x.created_at, k.position
    FROM patterns AS k
    CROSS JOIN LATERAL (
        SELECT d.id, d.created_at FROM {SCHEMA}.decisions AS d
        WHERE d.tenant_id = %(tenant)s AND d.search_text LIKE k.pattern
    ) AS x
    UNION ALL
    SELECT 2, x.id, x.created_at, k.position
    FROM patterns AS k
    CROSS JOIN LATERAL (
        SELECT c.id, c.created_at FROM {SCHEMA}.tool_calls AS c
        WHERE c.tenant_id = %(tenant)s AND c.search_text LIKE k.pattern
    ) AS x
)
SELECT item, row_id FROM hits GROUP BY item, row_id
ORDER BY {_SCORE} DESC, item, row_id LIMIT 40
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="retrieve.py's data")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    server = start_embedded(args.data_dir)
    connections = ReadConnections(make_engine(server.url()))
    started = time.perf_counter()
    for statement in BUILD:
        connections.execute(statement, {})
    built = time.perf_counter() - started
    size = connections.execute(
        f"SELECT (SELECT count(*) FROM {SCHEMA}.word_vocabulary), "
        f"(SELECT count(*) FROM {SCHEMA}.word_postings), "
        f"pg_total_relation_size('{SCHEMA}.word_postings') "
        f"+ pg_total_relation_size('{SCHEMA}.word_vocabulary')",
        {},
    )[0]
    wanted = {line.split("\t")[0] for line in (SCIFACT / "qrels" / "test.tsv").open()}
    claims = [
        q["text"] for q in map(json.loads, (SCIFACT / "queries.jsonl").open()) if q["_id"] in wanted
    ][: args.queries]
    times: dict[str, list[float]] = {"search_text": [], "words": []}
    same = 0
    for claim in claims:
        keywords = scoring.extract_keywords(claim)
        if not keywords:
            continue
        params = {
            "patterns": [scoring.like_pattern(k) for k in keywords],
            "tenant": TENANT,
            "n": len(keywords),
            "as_of": AS_OF,
        }
        found = {}
        for name, query in (("search_text", SEARCH_TEXT), ("words", WORDS)):
            connections.execute(query, params)  # warm
            begin = time.perf_counter()
            found[name] = connections.execute(query, params)
            times[name].append((time.perf_counter() - begin) * 1000)
        same += found["search_text"] == found["words"]
    connections.execute(f"DROP TABLE {SCHEMA}.word_postings, {SCHEMA}.word_vocabulary", {})
    connections.close()
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "build_seconds": built,
        "vocabulary": size[0],
        "postings": size[1],
        "bytes": size[2],
        "queries": len(times["search_text"]),
        "same_top_40": same,
        **{
            name: {
                "p50_ms": statistics.median(values),
                "p95_ms": sorted(values)[round(0.95 * (len(values) - 1))],
            }
            for name, values in times.items()
        },
    }
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
