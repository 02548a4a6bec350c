"""The framework examples of docs/api.md, run as written on a retriever with memories."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.memory.store import MemoryStore
from retrieval.search.retriever import HybridRetriever

ROOT = Path(__file__).resolve().parents[2]


def _examples(section: str) -> list[str]:
    page = (ROOT / "docs" / "api.md").read_text("utf-8")
    body = page.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, re.DOTALL)


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    store.remember_many(
        [
            {"text": "The deploy failed because the migration timed out.", "tenant_id": "acme",
             "kind": "critique"},
            {"text": "Deploys wait for the canary to pass.", "tenant_id": "acme",
             "kind": "techne"},
            {"text": "A failed deploy is rolled back to the previous image.", "tenant_id": "acme",
             "kind": "techne"},
            {"text": "The deploy of another team failed on a full disk.", "tenant_id": "other"},
        ]
    )  # fmt: skip
    with HybridRetriever.from_store(store, background_writes=False) as hybrid:
        yield hybrid


def test_the_framework_examples_run_as_written(retriever: HybridRetriever) -> None:
    examples = _examples("LangChain and LlamaIndex")
    assert len(examples) == 2
    namespace: dict[str, object] = {"retriever": retriever}
    for example in examples:
        exec(compile(example, "docs/api.md", "exec"), namespace)
    documents = namespace["documents"]
    assert isinstance(documents, list) and 1 <= len(documents) <= 4
    assert len(namespace["one"]) == 1  # type: ignore[arg-type]
    nodes = namespace["nodes"]
    assert isinstance(nodes, list) and 1 <= len(nodes) <= 4
    sources = namespace["answer"].source_nodes  # type: ignore[attr-defined]
    assert sources and all("another team" not in n.node.get_content() for n in sources)


def test_the_memory_over_time_example_runs_as_written(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    (example,) = _examples("A memory over time")
    namespace: dict[str, object] = {"store": store, "retriever": retriever}
    exec(compile(example, "docs/api.md", "exec"), namespace)
    assert namespace["again"] == namespace["old"]
    assert [one.memory.id for one in namespace["near"]] == [namespace["old"]]  # type: ignore[attr-defined]
    versions = namespace["versions"]
    assert [v.memory.id for v in versions] == [namespace["old"], namespace["new"]]  # type: ignore[attr-defined]
    then = [r.content for r in namespace["then"] if r.source == "semantic"]  # type: ignore[attr-defined]
    assert then[0] == "Staging runs PostgreSQL 17."
