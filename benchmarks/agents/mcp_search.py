"""What MCP adds to a search: ``search_memory`` over stdio against ``retrieve()`` in-process.

One tenant of SciFact sentences as memories (``--rows``, stored once in ``--data-dir``). The
server is ``retrieval mcp --tenant`` started by the SDK's stdio client, as an MCP client starts
it; the baseline is ``HybridRetriever.retrieve`` in this process, on the same server, data and
default config. Each claim is asked of both once first (its vector cached in both processes,
connections warm); then, for ``--runs`` rounds, each claim is timed through both, one after the
other (the order alternating), so that both see the same machine at the same moment. Reports
the p50 / p95 of each path, the median of the per-claim differences (what MCP adds: JSON-RPC
over the pipes, the tool's arguments validated, the results as JSON), and the server's own
``total_ms`` (the retrieve inside the server). The floor, timed in the same loop: the SDK's own
server over stdio with one tool that returns a saved ``search_memory`` answer (same size, none of
this library's code). Target: MCP adds at most 5 ms at the p50.

``--two-tokens``: one ``retrieval mcp --http`` with a token for each of two tenants holding the
same sentences; token B's p50 alone and while token A keeps ``--in-flight`` calls going from
another process (see ``_mcp_fairness.py``). Target: B's p50 with A at 200 within 2x of B alone.

(Not named mcp.py: a script of that name would shadow the SDK it imports.)

Usage: python benchmarks/agents/mcp_search.py [--data-dir DIR] [--rows 3000] [--queries 300]
           [--runs 3]
       python benchmarks/agents/mcp_search.py --two-tokens [--in-flight 20,200] [--hostile]
           [--queries 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, summary_ms, timed_ms, write_result
from _mcp_fairness import measure
from _scifact import read_queries, sentence_memories
from mcp import ClientSession, StdioServerParameters, stdio_client

from retrieval.search.retriever import HybridRetriever

TENANT = "mcp-bench"
TWO_TENANTS = ("mcp-token-a", "mcp-token-b")

# The floor: the SDK's own MCPServer with one tool that returns a fixed result of the same
# size, none of this library's code (the result is a real search_memory answer, saved first).
FLOOR_SERVER = """
import json, sys
from typing import Any
from mcp.server.mcpserver import MCPServer

payload = json.load(open(sys.argv[1]))
server = MCPServer("floor", log_level="WARNING")


@server.tool(structured_output=True)
async def echo(query: str) -> dict[str, Any]:
    return payload


server.run("stdio")
"""


async def _measure(
    data_dir: Path, retriever: HybridRetriever, queries: list[str], runs: int
) -> dict[str, Any]:
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name("retrieval")),
        args=["--data-dir", str(data_dir), "mcp", "--tenant", TENANT],
        env={"HF_HUB_OFFLINE": "1"},
    )
    direct: list[float] = []
    over_mcp: list[float] = []
    inside: list[float] = []
    gaps: list[float] = []
    floor: list[float] = []
    scratch = Path(tempfile.mkdtemp(prefix="rtv-mcp-floor-"))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for query in queries:  # warm: vectors cached in both processes, connections open
            retriever.retrieve(query, tenant_id=TENANT)
            answer = await session.call_tool("search_memory", {"query": query})
        (scratch / "payload.json").write_text(json.dumps(answer.structured_content))
        (scratch / "floor.py").write_text(FLOOR_SERVER)
        bare = StdioServerParameters(
            command=sys.executable, args=[str(scratch / "floor.py"), str(scratch / "payload.json")]
        )
        async with (
            stdio_client(bare) as (bare_read, bare_write),
            ClientSession(bare_read, bare_write) as floor_session,
        ):
            await floor_session.initialize()
            for query in queries[:20]:
                await floor_session.call_tool("echo", {"query": query})
            for run in range(runs):
                for number, query in enumerate(queries):
                    mcp_first = (number + run) % 2 == 0
                    if mcp_first:
                        remote, server_ms = await _call(session, query)
                    local = _retrieve(retriever, query)
                    if not mcp_first:
                        remote, server_ms = await _call(session, query)
                    floor.append(await _echo(floor_session, query))
                    direct.append(local)
                    over_mcp.append(remote)
                    inside.append(server_ms)
                    gaps.append(remote - local)
    return {
        "retrieve_in_process_ms": summary_ms(direct),
        "search_memory_over_stdio_ms": summary_ms(over_mcp),
        "retrieve_inside_the_server_ms": summary_ms(inside),
        "added_by_mcp_p50_ms": statistics.median(over_mcp) - statistics.median(direct),
        "added_by_mcp_median_of_pairs_ms": statistics.median(gaps),
        "floor_bare_sdk_tool_round_trip_ms": summary_ms(floor),
        "calls_per_path": len(direct),
    }


def _retrieve(retriever: HybridRetriever, query: str) -> float:
    return timed_ms(retriever.retrieve, query, tenant_id=TENANT)[1]


async def _echo(session: ClientSession, query: str) -> float:
    started = time.perf_counter()
    result = await session.call_tool("echo", {"query": query})
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"the floor's echo failed: {result.content}")
    return elapsed


async def _call(session: ClientSession, query: str) -> tuple[float, float]:
    started = time.perf_counter()
    result = await session.call_tool("search_memory", {"query": query})
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"search_memory failed: {result.content}")
    return elapsed, float(result.structured_content["total_ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help="embedded server data (default: a temp dir)")
    parser.add_argument("--rows", type=int, default=3000, help="memories in the tenant")
    parser.add_argument("--queries", type=int, default=300, help="SciFact claims asked")
    parser.add_argument("--runs", type=int, default=3, help="rounds over the claims")
    parser.add_argument(
        "--two-tokens", action="store_true", help="B's latency beside A's load over HTTP"
    )
    parser.add_argument("--in-flight", default="20,200", help="A's concurrent calls per phase")
    parser.add_argument("--hostile", action="store_true", help="A asks again at once after a 429")
    add_output(parser)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-mcp-")) / "pg"
    if args.two_tokens:
        _two_tokens(data_dir, args)
        return
    database, store = sentence_memories(data_dir, TENANT, args.rows)
    queries = read_queries()[: args.queries]
    with HybridRetriever.from_store(store) as retriever:
        results = asyncio.run(_measure(data_dir, retriever, queries, args.runs))
    database.dispose()
    results["target_added_p50_ms"] = 5.0
    write_result("mcp", results, args)


def _two_tokens(data_dir: Path, args: argparse.Namespace) -> None:
    for tenant in TWO_TENANTS:
        database, _store = sentence_memories(data_dir, tenant, args.rows)
        database.dispose()
    queries = read_queries()[: args.queries]
    in_flight = [int(n) for n in args.in_flight.split(",")]
    results = measure(data_dir, TWO_TENANTS, queries, in_flight, args.runs, hostile=args.hostile)
    results["target_b_p50_over_alone"] = 2.0
    write_result("mcp-two-tokens-hostile" if args.hostile else "mcp-two-tokens", results, args)


if __name__ == "__main__":
    main()
