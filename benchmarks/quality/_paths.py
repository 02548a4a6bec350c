"""The paths matrix's pieces: the quality corpora split into halves, and every documented way of
storing them (``paths.py`` runs them; ``tests/integration/test_paths.py`` a small fixture).

A **way** stores a corpus through one of the documented ways a user stores memories and asks
through the same surface:

* ``thread`` (kind ``message``, ``thread_id`` and ``position``), ``thread, kind not given``,
  ``no thread`` (kind ``message`` alone: sessions inferred from time) and ``other format``
  (``NAME: text`` for turns written ``NAME said, "text"`` and the other way round): the
  conversation corpora only;
* ``remember`` (``remember_many``, each memory with its time): the memory corpora's base;
* ``namespace`` (each memory under ``("users", TENANT)``, asked with that namespace), ``keys``
  (each memory under a key: a fact's own key where a corpus has one, else one per memory),
  ``ingest`` (a JSON Lines file read as ``retrieval ingest`` reads it: a chat transcript's
  lines, ``speaker``, ``text``, ``time``, ``session``, for a conversation), ``langgraph``
  (LangGraph's ``put`` and ``search`` on :class:`~retrieval.integrations.langgraph.RetrievalStore`),
  ``mcp`` (the MCP server's ``remember`` and ``search_memory`` tools through the SDK's own
  client, in process: a turn with its thread, place and time, a memory with its time, a
  question asked as of the corpus's time, as docs/mcp.md says a client replaying a
  conversation calls them) and ``mem0`` (Mem0's interface,
  :class:`~retrieval.integrations.mem0.Memory`: each turn of a conversation ``add``-ed as the
  user's message, each memory ``add``-ed as a string, under the corpus tenant's ``user_id``
  with its reference in ``metadata`` and its time as Mem0's ``timestamp``, asked with
  ``search`` in that scope, as docs/mem0.md shows): every corpus. LangGraph cannot give a
  memory its time: its memories are told when stored; neither LangGraph nor Mem0 asks as of a
  moment: their questions are asked now.

``thread, told now`` (a thread and a position, no time: each turn told when stored, as a
LangGraph ``put`` is, and asked now) runs only when named (``--way``): what the conversation
corpora lose by their times alone.

Every way returns what a caller reads, in order, each result named by the corpus's reference
(a turn's ``dia_id``, a memory's ``ref``, kept in its metadata or value).
"""

from __future__ import annotations

import asyncio
import atexit
import json
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

SAID = re.compile(r'^(?P<speaker>[^:"]+?) said, "(?P<text>.*)"(?P<rest>.*)$', re.DOTALL)
COLON = re.compile(r"^(?P<speaker>[^:]{1,40}): (?P<text>.*)$", re.DOTALL)
CONVERSATION_WAYS = ("thread", "thread, kind not given", "no thread", "other format")
COMMON_WAYS = ("namespace", "keys", "ingest", "langgraph", "mcp", "mem0")
MEMORY_BASE = "remember"
# A conversation stored with its threads and places but no times: measured when named.
TOLD_NOW = "thread, told now"
UNTIMED_WAYS = frozenset({"langgraph", TOLD_NOW})  # their memories are told when stored
# Their questions are asked now: neither LangGraph's search nor Mem0's takes a moment.
ASKED_NOW_WAYS = UNTIMED_WAYS | {"mem0"}


# -- corpora ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Memo:
    """A memory of a corpus: its reference, text, time, tenant and (optionally) the key of
    the fact it states."""

    ref: str
    text: str
    created_at: datetime | None
    tenant: str
    key: str | None = None


@dataclass(frozen=True)
class Turn:
    """A conversation turn: its reference (the turn's ``dia_id``: a turn split into messages
    keeps it in each), its text, time, session and position."""

    ref: str
    text: str
    created_at: datetime
    thread: str
    position: int


@dataclass(frozen=True)
class Dialogue:
    """A conversation stored as one tenant, and the moment its questions are asked."""

    tenant: str
    turns: tuple[Turn, ...]
    as_of: datetime


def halves_of_dialogues(dialogues: Sequence[Any]) -> Callable[[str, Any], str]:
    """The half of a LoCoMo question (``tuning`` or ``validation``), by dialogue and, within the
    long one, by session: ``conv-30`` and the even sessions of ``conv-41`` tune, ``conv-26`` and
    the odd sessions of ``conv-41`` validate (each half holds every category); a question
    belongs to the session of its first evidence turn."""
    sessions = {
        d.tenant: {turn.dia_id: int(turn.thread.split("_")[1]) for turn in d.turns}
        for d in dialogues
    }

    def half(tenant: str, question: Any) -> str:
        if tenant == "conv-30":
            return "tuning"
        if tenant == "conv-41":
            session = sessions[tenant][question.evidence[0]]
            return "tuning" if session % 2 == 0 else "validation"
        return "validation"

    return half


def by_parity(index: int) -> str:
    """Every other item tunes: even indexes ``tuning``, odd ``validation``."""
    return "tuning" if index % 2 == 0 else "validation"


def as_colon(text: str) -> str:
    """A turn written ``NAME said, "text"`` as a chat writes it, ``NAME: text``."""
    said = SAID.match(text)
    if said is None:
        return text
    rest = said["rest"].strip()
    return f"{said['speaker']}: {said['text']}" + (f" {rest}" if rest else "")


def as_said(text: str) -> str:
    """A chat's ``NAME: text`` as a narrated turn, ``NAME said, "text"``."""
    colon = COLON.match(text)
    return text if colon is None else f'{colon["speaker"]} said, "{colon["text"]}"'


def other_format(text: str) -> str:
    """``text`` in the other way of writing a turn."""
    return as_colon(text) if SAID.match(text) else as_said(text)


def speaker_and_text(text: str) -> tuple[str, str]:
    """The speaker and the words of a turn written either way (a transcript's two columns)."""
    for pattern in (SAID, COLON):
        found = pattern.match(text)
        if found is not None:
            rest = found.groupdict().get("rest") or ""
            return found["speaker"], found["text"] + (f" {rest.strip()}" if rest.strip() else "")
    return "someone", text


# -- the embedder shared by every way -----------------------------------------------------------


class MemoEmbedder:
    """The model, each text embedded once per process (every way stores the same texts; what
    is measured is the ranking, not the model)."""

    def __init__(self, inner: Any, keep: bool = True) -> None:
        self.inner = inner
        self.seen: dict[tuple[str, str], np.ndarray] = {}
        # Vectors kept between runs in the temporary folder, by model: a model as slow as
        # e5-small embeds the corpora once, not once per run.
        slug = re.sub(r"[^a-z0-9]+", "-", str(inner.model_id).lower())
        self._kept = Path(tempfile.gettempdir()) / f"rtv-paths-vectors-{slug}.npz" if keep else None
        self._stored = 0
        if self._kept is not None and self._kept.exists():
            with np.load(self._kept, allow_pickle=False) as found:
                keys = json.loads(str(found["keys"]))
                self.seen = {
                    (side, text): v for (side, text), v in zip(keys, found["vectors"], strict=True)
                }
            self._stored = len(self.seen)
        atexit.register(self.save)

    def save(self) -> None:
        """Keep the vectors embedded in this run for the next one."""
        if self._kept is None or len(self.seen) == self._stored:
            return
        keys = list(self.seen)
        vectors = np.stack([self.seen[key] for key in keys]).astype(np.float32)
        partial = self._kept.with_suffix(".partial.npz")
        np.savez(partial, keys=np.array(json.dumps(keys)), vectors=vectors)
        partial.replace(self._kept)
        self._stored = len(keys)

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._memo(texts, "passage")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The model's query side (the same vectors as ``embed``'s for a model without one)."""
        return self._memo(texts, "query")

    def _memo(self, texts: Sequence[str], side: Any) -> np.ndarray:
        from retrieval.embedding.models import embed_side

        missing = list(dict.fromkeys(t for t in texts if (side, t) not in self.seen))
        if missing:
            vectors = embed_side(self.inner, missing, side)
            for text, vector in zip(missing, vectors, strict=True):
                self.seen[(side, text)] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.seen[(side, t)] for t in texts]).astype(np.float32)


# -- the ways -----------------------------------------------------------------------------------


@dataclass
class Found:
    """What a caller reads of one result: the corpus's reference and the text."""

    ref: str | None
    content: str
    below_threshold: bool = False


@dataclass
class Way:
    """One documented way of storing and asking, on ``store`` (a ``MemoryStore``), its
    tenants named after ``name``."""

    name: str
    store: Any
    config: Any  # the RetrievalConfig of the ways that ask through retrieve()
    tenants: dict[str, str] = field(default_factory=dict)
    _retriever: Any = None
    _mem0_memories: dict[str, Any] = field(default_factory=dict)

    @property
    def timed(self) -> bool:
        """Whether its memories keep their times."""
        return self.name not in UNTIMED_WAYS

    @property
    def asks_as_of(self) -> bool:
        """Whether its questions may be asked as of a moment."""
        return self.name not in ASKED_NOW_WAYS

    def tenant(self, name: str) -> str:
        """The tenant this way stores the corpus's tenant ``name`` in."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")
        return self.tenants.setdefault(name, f"{slug}.{name}")

    # storing

    def store_dialogue(self, dialogue: Dialogue) -> None:
        """The turns of ``dialogue``, as this way stores a conversation."""
        tenant = self.tenant(dialogue.tenant)
        self.store.forget(tenant_id=tenant, everything=True)
        turns = dialogue.turns
        if self.name == "other format":
            turns = tuple(replace(t, text=other_format(t.text)) for t in turns)
        if self.name == "ingest":
            self._ingest(tenant, [_transcript_line(t) for t in turns])
        elif self.name == "langgraph":
            self._langgraph(dialogue.tenant, [(f"{n}", t.text, t.ref) for n, t in enumerate(turns)])
        elif self.name == "mcp":
            self._mcp(tenant, [_mcp_turn(t) for t in turns])
        elif self.name == "mem0":
            # Each turn added as the user's message, in order (an add's metadata is every one
            # of its messages': a turn each keeps its reference).
            memory = self._mem0(dialogue.tenant)
            for turn in turns:
                memory.add({"role": "user", "content": turn.text}, user_id=dialogue.tenant,
                           metadata={"ref": turn.ref},
                           timestamp=turn.created_at.timestamp())  # fmt: skip
        else:
            self.store.remember_many(self._turn_input(tenant, t, n) for n, t in enumerate(turns))

    def store_memos(self, memos: Sequence[Memo]) -> None:
        """The memories of a memory corpus, by tenant, as this way stores memories."""
        by_tenant: dict[str, list[Memo]] = {}
        for memo in memos:
            by_tenant.setdefault(memo.tenant, []).append(memo)
        for name, group in by_tenant.items():
            tenant = self.tenant(name)
            self.store.forget(tenant_id=tenant, everything=True)
            if self.name == "ingest":
                self._ingest(tenant, [_memory_line(m) for m in group])
            elif self.name == "langgraph":
                # A key per memory, as LangMem's agents write them (a uuid each).
                self._langgraph(name, [(m.ref, m.text, m.ref) for m in group])
            elif self.name == "mcp":
                self._mcp(tenant, [_mcp_memory(m) for m in group])
            elif self.name == "mem0":
                memory = self._mem0(name)
                for memo in group:  # an add each, with its time where the corpus has one
                    when = {"timestamp": memo.created_at.timestamp()} if memo.created_at else {}
                    memory.add(memo.text, user_id=name, metadata={"ref": memo.ref}, **when)
            else:
                for batch in _batches(group):
                    self.store.remember_many(self._memo_input(tenant, m) for m in batch)

    def _turn_input(self, tenant: str, turn: Turn, index: int) -> dict[str, Any]:
        item: dict[str, Any] = {
            "text": turn.text,
            "tenant_id": tenant,
            "created_at": turn.created_at,
            "metadata": {"ref": turn.ref},
        }
        if self.name != "no thread":
            item |= {"thread_id": turn.thread, "position": turn.position}
        if self.name == TOLD_NOW:
            del item["created_at"]
        if self.name != "thread, kind not given":
            item["kind"] = "message"
        if self.name == "namespace":
            item["namespace"] = ("users", tenant)
        if self.name == "keys":
            item["key"] = f"turn-{index}"
        return item

    def _memo_input(self, tenant: str, memo: Memo) -> dict[str, Any]:
        item: dict[str, Any] = {
            "text": memo.text,
            "tenant_id": tenant,
            "metadata": {"ref": memo.ref},
        }
        if memo.created_at is not None:
            item["created_at"] = memo.created_at
        if self.name == "namespace":
            item["namespace"] = ("users", tenant)
        if self.name == "keys":
            item["key"] = memo.key or f"memory-{memo.ref}"
        return item

    def _ingest(self, tenant: str, lines: list[dict[str, Any]]) -> None:
        from retrieval.memory.file_ingest import ingest
        from retrieval.memory.file_lines import read_file

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "transcript.jsonl"
            path.write_text("".join(json.dumps({"tenant_id": tenant, **line}, default=str) + "\n"
                                    for line in lines))  # fmt: skip
            ingest(self.store, read_file(path, self.store))

    def _langgraph(self, name: str, items: list[tuple[str, str, str]]) -> None:
        from langgraph.store.base import PutOp

        store = self._langgraph_store(name)
        namespace = ("users", name)
        for key, text, ref in items:  # a put each, as an agent makes them, each told in turn
            store.batch([PutOp(namespace, key, {"text": text, "ref": ref})])

    def _langgraph_store(self, name: str) -> Any:
        # The store of the tenant, as a LangGraph app makes one, its searches answered by one
        # retriever of the way (the store's own defaults: no threshold).
        from retrieval.integrations.langgraph import RetrievalStore, search_config

        return RetrievalStore(
            self.store,
            tenant_id=self.tenant(name),
            index={"fields": ["text"]},
            retriever=self._shared_retriever(search_config(self.config)),
        )

    def _mem0(self, name: str) -> Any:
        # Mem0's interface on the tenant, as a Mem0 program makes one (its searches answered by
        # one retriever of the way).
        from retrieval.integrations.mem0 import Memory

        if name not in self._mem0_memories:
            self._mem0_memories[name] = Memory(
                self.store,
                tenant_id=self.tenant(name),
                retriever=self._shared_retriever(self.config),
            )
        return self._mem0_memories[name]

    def _shared_retriever(self, config: Any) -> Any:
        # The one retriever of the way's interface (made on first use, with ``config``).
        from retrieval.search.retriever import HybridRetriever

        if self._retriever is None:
            self._retriever = HybridRetriever.from_store(
                self.store, config=config, background_writes=False
            )
        return self._retriever

    def close(self) -> None:
        """Close what the way opened."""
        for memory in self._mem0_memories.values():
            memory.close()
        self._mem0_memories.clear()
        if self._retriever is not None:
            self._retriever.close()
            self._retriever = None

    def _mcp(self, tenant: str, calls: list[dict[str, Any]]) -> None:
        sessions = McpSessions(self.store, self.config)
        try:
            for arguments in calls:
                sessions.call(tenant, "remember", arguments)
        finally:
            sessions.close()

    # asking

    @contextmanager
    def asker(self) -> Iterator[Callable[..., list[Found]]]:
        """A function ``ask(tenant, query, limit, as_of)`` for the block: what a caller reads,
        in order (a decision, a tool call or a chunk with no reference: it takes a place)."""
        if self.name == "langgraph":
            stores: dict[str, Any] = {}

            def ask_langgraph(name: str, query: str, limit: int, as_of: Any = None) -> list[Found]:
                store = stores.get(name) or stores.setdefault(name, self._langgraph_store(name))
                items = store.search(("users", name), query=query, limit=limit)
                return [Found(item.value.get("ref"), item.value.get("text", "")) for item in items]

            yield ask_langgraph
            return
        if self.name == "mem0":

            def ask_mem0(name: str, query: str, limit: int, as_of: Any = None) -> list[Found]:
                found = self._mem0(name).search(query, filters={"user_id": name}, top_k=limit)
                return [
                    Found(
                        (item.get("metadata") or {}).get("ref"),
                        item["memory"],
                        bool((item.get("metadata") or {}).get("below_threshold")),
                    )
                    for item in found["results"]
                ]

            yield ask_mem0
            return
        if self.name == "mcp":
            sessions = McpSessions(self.store, self.config)

            def ask_mcp(name: str, query: str, limit: int, as_of: Any = None) -> list[Found]:
                arguments: dict[str, Any] = {"query": query, "limit": min(limit, 100)}
                if as_of is not None:
                    arguments["as_of"] = as_of.isoformat()
                found = sessions.call(self.tenant(name), "search_memory", arguments)
                return [
                    Found(
                        (r.get("details", {}).get("metadata") or {}).get("ref")
                        if r["source"] == "semantic"
                        else None,
                        r["content"],
                        bool(r.get("details", {}).get("below_threshold")),
                    )
                    for r in found["results"]
                ]

            try:
                yield ask_mcp
            finally:
                sessions.close()
            return
        from retrieval.search.retriever import HybridRetriever

        with HybridRetriever.from_store(self.store, config=self.config) as retriever:

            def ask(name: str, query: str, limit: int, as_of: Any = None) -> list[Found]:
                options: dict[str, Any] = {"limit": limit}
                if as_of is not None and self.asks_as_of:
                    options["as_of"] = as_of
                if self.name == "namespace":
                    options["namespace"] = ("users", self.tenant(name))
                response = retriever.retrieve(query, tenant_id=self.tenant(name), **options)
                return [
                    Found(
                        (r.metadata.get("metadata") or {}).get("ref")
                        if r.source == "semantic"
                        else None,
                        r.content,
                        bool(r.metadata.get("below_threshold")),
                    )
                    for r in response
                ]

            yield ask


class McpSessions:
    """The MCP server of a store, one per tenant (its tenant fixed, as ``retrieval mcp
    --tenant`` runs it), each reached by the SDK's own client in this process: each client
    lives in a task of its own on an event loop in a thread, and takes the calls in turn."""

    def __init__(self, store: Any, config: Any) -> None:
        from retrieval.aio.retriever import AsyncHybridRetriever
        from retrieval.aio.store import AsyncMemoryStore
        from retrieval.search.retriever import HybridRetriever

        self.retriever = HybridRetriever.from_store(store, config=config)
        self.async_store = AsyncMemoryStore(store)
        self.async_retriever = AsyncHybridRetriever(self.retriever)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.queues: dict[str, asyncio.Queue[Any]] = {}
        self.tasks: list[asyncio.Future[None]] = []

    def call(self, tenant: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The structured answer of ``tool`` called with ``arguments`` for ``tenant``."""
        result = asyncio.run_coroutine_threadsafe(
            self._call(tenant, tool, arguments), self.loop
        ).result()
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
        answer: dict[str, Any] = result.structured_content
        return answer

    async def _call(self, tenant: str, tool: str, arguments: dict[str, Any]) -> Any:
        if tenant not in self.queues:
            queue: asyncio.Queue[Any] = asyncio.Queue()
            ready: asyncio.Future[None] = self.loop.create_future()
            self.queues[tenant] = queue
            self.tasks.append(asyncio.ensure_future(self._serve(tenant, queue, ready)))
            await ready
        answer: asyncio.Future[Any] = self.loop.create_future()
        await self.queues[tenant].put((tool, arguments, answer))
        return await answer

    async def _serve(
        self, tenant: str, queue: asyncio.Queue[Any], ready: asyncio.Future[None]
    ) -> None:
        from mcp import Client

        from retrieval.integrations.mcp_server import fixed_tenant, memory_server

        server = memory_server(self.async_store, self.async_retriever, fixed_tenant(tenant))
        async with Client(server) as client:
            ready.set_result(None)
            while (request := await queue.get()) is not None:
                tool, arguments, answer = request
                try:
                    answer.set_result(await client.call_tool(tool, arguments))
                except Exception as error:  # handed to the caller
                    answer.set_exception(error)

    def close(self) -> None:
        """Close every client, then the loop and the retriever."""

        async def stop() -> None:
            for queue in self.queues.values():
                await queue.put(None)
            await asyncio.gather(*self.tasks)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
        self.retriever.close()


def _transcript_line(turn: Turn) -> dict[str, Any]:
    # A chat transcript's line as `retrieval ingest` reads it.
    speaker, text = speaker_and_text(turn.text)
    return {
        "speaker": speaker,
        "text": text,
        "time": turn.created_at.isoformat(),
        "session": turn.thread,
        "position": turn.position,
        "metadata": {"ref": turn.ref},
    }


def _mcp_memory(memo: Memo) -> dict[str, Any]:
    # The arguments of MCP's remember for a memory, as an agent that tracks no keys calls it.
    arguments: dict[str, Any] = {"text": memo.text, "metadata": {"ref": memo.ref}}
    if memo.created_at is not None:
        arguments["created_at"] = memo.created_at.isoformat()
    return arguments


def _mcp_turn(turn: Turn) -> dict[str, Any]:
    # The arguments of MCP's remember for a conversation's turn, replayed with its place.
    return {"text": turn.text, "kind": "message", "metadata": {"ref": turn.ref},
            "thread_id": turn.thread, "position": turn.position,
            "created_at": turn.created_at.isoformat()}  # fmt: skip


def _memory_line(memo: Memo) -> dict[str, Any]:
    line: dict[str, Any] = {"type": "memory", "text": memo.text, "metadata": {"ref": memo.ref}}
    if memo.created_at is not None:
        line["created_at"] = memo.created_at.isoformat()
    return line


def _batches(memos: Sequence[Memo], size: int = 500) -> Iterator[list[Memo]]:
    # Batches in order, a new one where a key comes again (a batch names each key once: the
    # later value supersedes the earlier).
    batch: list[Memo] = []
    keys: set[str] = set()
    for memo in memos:
        if len(batch) == size or (memo.key is not None and memo.key in keys):
            yield batch
            batch, keys = [], set()
        batch.append(memo)
        if memo.key is not None:
            keys.add(memo.key)
    if batch:
        yield batch


def first_refs(found: Sequence[Found], budget: int) -> list[str]:
    """The first ``budget`` distinct references a caller reads, in order."""
    read: dict[str, None] = {}
    for item in found:
        if item.ref is None:
            continue
        read.setdefault(item.ref, None)
        if len(read) == budget:
            break
    return list(read)


def mean(values: Sequence[float]) -> float:
    """The mean of ``values`` (0 when empty)."""
    return sum(values) / len(values) if values else 0.0


def rounded(table: Mapping[str, Any], digits: int = 1) -> dict[str, Any]:
    """``table`` with its floats rounded."""
    return {
        key: round(value, digits) if isinstance(value, float) else value
        for key, value in table.items()
    }
