"""Two tokens on one ``retrieval mcp --http``: token B's ``search_memory`` alone and while token A
keeps N calls in flight (``mcp_search.py --two-tokens``).

The server is ``retrieval mcp --http`` as a user starts it (its defaults), with one token for
each of two tenants that hold the same SciFact sentences. Token A's load is another process
(``--load``): N tasks, each posting ``search_memory`` calls back to back; a task answered 429
waits what ``Retry-After`` says (as an HTTP client should), or, with ``--hostile``, asks again at
once. B asks the claims one after another from this process and times each call. Each phase
(A idle, A at each concurrency) is measured ``runs`` times, the phases interleaved; B's p50 of
a phase is the median of its runs' p50s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from retrieval.integrations.mcp_tokens import new_token, token_hash

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def call_body(query: str, number: int = 1) -> bytes:
    """A stateless JSON-RPC ``tools/call`` of ``search_memory``."""
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": "search_memory", "arguments": {"query": query}},
        }
    ).encode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(
    data_dir: Path, tenants: list[str]
) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    """``retrieval mcp --http`` on a free port with a token per tenant; its URL and tokens."""
    tokens = {tenant: new_token() for tenant in tenants}
    folder = Path(tempfile.mkdtemp(prefix="rtv-mcp-two-"))
    tokens_file = folder / "tokens.txt"
    tokens_file.write_text("".join(f"{token_hash(t)} {n}\n" for n, t in tokens.items()))
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("retrieval")), "--data-dir", str(data_dir), "mcp",
         "--http", "--port", str(port), "--tokens-file", str(tokens_file)],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL, stderr=(folder / "server.log").open("wb"),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server ended: {(folder / 'server.log').read_text()[-2000:]}")
        try:
            if httpx.post(url, content=call_body("x"), headers=HEADERS).status_code == 401:
                return server, url, tokens
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.kill()
    raise RuntimeError("the server did not answer within 120 s")


def timed_calls(url: str, token: str, queries: list[str]) -> list[float]:
    """Each query asked once, one after the other; milliseconds per call."""
    times: list[float] = []
    with httpx.Client(headers={**HEADERS, "Authorization": f"Bearer {token}"}, timeout=120) as c:
        for number, query in enumerate(queries):
            started = time.perf_counter()
            answer = c.post(url, content=call_body(query, number))
            elapsed = (time.perf_counter() - started) * 1000
            if answer.status_code != 200 or '"isError":true' in answer.text:
                raise RuntimeError(f"B's call failed: {answer.status_code} {answer.text[:300]}")
            times.append(elapsed)
    return times


def start_load(
    url: str, token: str, concurrency: int, queries: list[str], *, hostile: bool
) -> subprocess.Popen[str]:
    """Token A's load in another process; it reports its counts when it gets a line on stdin."""
    scratch = Path(tempfile.mkdtemp(prefix="rtv-mcp-load-")) / "queries.json"
    scratch.write_text(json.dumps(queries))
    command = [sys.executable, __file__, "--load", url, token, str(concurrency), str(scratch)]
    load = subprocess.Popen(
        [*command, *(["--hostile"] if hostile else [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert load.stdout is not None
    if load.stdout.readline().strip() != "started":
        raise RuntimeError("the load process did not start")
    return load


def stop_load(load: subprocess.Popen[str]) -> dict[str, Any]:
    """Stop the load and return what it counted."""
    output, _ = load.communicate("stop\n", timeout=300)
    return dict(json.loads(output.strip().splitlines()[-1]))


async def _load(url: str, token: str, concurrency: int, queries: list[str], hostile: bool) -> None:
    # Plain asyncio streams, a connection per call: an HTTP client library's own cost at 200
    # calls in flight would make the load process, not the server, the bottleneck.
    statuses: Counter[str] = Counter()
    stop = asyncio.Event()
    address = httpx.URL(url)
    started = time.monotonic()

    async def post(query: str, number: int) -> tuple[str, float]:
        body = call_body(query, number)
        head = (
            f"POST {address.path} HTTP/1.1\r\nHost: {address.host}:{address.port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        reader, writer = await asyncio.open_connection(address.host, address.port)
        try:
            writer.write(head.encode() + body)
            answer = await reader.read()
        finally:
            writer.close()
        lines = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        retry = next(
            (line.split(":", 1)[1] for line in lines if line.lower().startswith("retry-after")),
            "1",
        )
        return lines[0].split(" ")[1], float(retry)

    async def task(number: int) -> None:
        index = number
        while not stop.is_set():
            index += concurrency
            try:
                status, retry_after = await post(queries[index % len(queries)], index)
            except (OSError, IndexError) as error:
                statuses[type(error).__name__] += 1
                continue
            statuses[status] += 1
            if status == "429" and not hostile:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), retry_after)

    async def until_told() -> None:
        await asyncio.to_thread(sys.stdin.readline)
        stop.set()

    print("started", flush=True)
    await asyncio.gather(until_told(), *(task(n) for n in range(concurrency)))
    seconds = time.monotonic() - started
    print(json.dumps({"statuses": dict(statuses), "seconds": round(seconds, 2),
                      "answered_per_s": round(statuses["200"] / seconds, 1)}))  # fmt: skip


def measure(
    data_dir: Path,
    tenants: tuple[str, str],
    queries: list[str],
    concurrencies: list[int],
    runs: int,
    *,
    hostile: bool,
) -> dict[str, Any]:
    """B's latency alone and beside A at each concurrency, ``runs`` rounds interleaved."""
    server, url, tokens = start_server(data_dir, list(tenants))
    a, b = tokens[tenants[0]], tokens[tenants[1]]
    phases: dict[int, list[dict[str, Any]]] = {n: [] for n in [0, *concurrencies]}
    try:
        timed_calls(url, a, queries)  # warm: each claim's vector cached, connections open
        timed_calls(url, b, queries)
        for _ in range(runs):
            for concurrency in phases:
                load = None
                if concurrency:
                    load = start_load(url, a, concurrency, queries, hostile=hostile)
                    time.sleep(2.0)  # A's calls fill the server first
                times = timed_calls(url, b, queries)
                entry: dict[str, Any] = {"b_p50_ms": statistics.median(times),
                                         "b_p95_ms": statistics.quantiles(times, n=20)[-1],
                                         "b_max_ms": max(times)}  # fmt: skip
                if load is not None:
                    entry["a"] = stop_load(load)
                phases[concurrency].append(entry)
                print(f"A at {concurrency:>3}: B p50 {entry['b_p50_ms']:.1f} ms p95 "
                      f"{entry['b_p95_ms']:.1f} ms {entry.get('a', '')}", flush=True)  # fmt: skip
    finally:
        server.terminate()
        server.wait(30)
    alone = statistics.median(run["b_p50_ms"] for run in phases[0])
    return {
        "a_retries_at_once" if hostile else "a_waits_retry_after": True,
        "b_calls_per_run": len(queries),
        "phases": {
            f"a_in_flight_{n}": {
                "b_p50_ms": statistics.median(run["b_p50_ms"] for run in entries),
                "b_p95_ms": statistics.median(run["b_p95_ms"] for run in entries),
                "b_max_ms": max(run["b_max_ms"] for run in entries),
                "b_p50_over_alone": statistics.median(run["b_p50_ms"] for run in entries) / alone,
                "runs": entries,
            }
            for n, entries in phases.items()
        },
    }


if __name__ == "__main__" and sys.argv[1:2] == ["--load"]:
    _url, _token, _concurrency, _queries = sys.argv[2:6]
    asyncio.run(
        _load(_url, _token, int(_concurrency), json.loads(Path(_queries).read_text()),
              "--hostile" in sys.argv)
    )  # fmt: skip
