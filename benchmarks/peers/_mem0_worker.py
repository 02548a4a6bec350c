"""Mem0's side of ``mem0_side_by_side.py``, run with the Python of a virtual environment that has
``mem0ai`` (it pins versions of SQLAlchemy, pydantic and openai this library does not share).

It reads ``WORK/data.json`` (the chat proxy's dialogues and questions, SciFact's abstracts and
claims), stores them through Mem0's open-source ``Memory`` as its documentation shows (``add``
with ``infer=False``: no LLM; one ``user_id`` per dialogue, ``scifact`` for the abstracts) in its
pgvector store on the given server, its Hugging Face embedder given the library's model files,
searches each question with ``search(query, filters={"user_id": ...}, top_k=K)`` and writes
``WORK/mem0.json``: each search's memories (texts) and time, and the time of the adds.

Usage: PYTHON _mem0_worker.py WORK --url postgresql://... --model PATH [--threshold X]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENAI_API_KEY", "unused: add(infer=False) asks no LLM")


def memory(url: str, model: str, collection: str, history: Path) -> Any:
    """Mem0's ``Memory`` on pgvector (HNSW, as it makes it) with the given embedder files."""
    from mem0 import Memory

    return Memory.from_config(
        {
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    "connection_string": url,
                    "collection_name": collection,
                    "embedding_model_dims": 384,
                    "hnsw": True,
                },
            },
            "embedder": {"provider": "huggingface", "config": {"model": model}},
            "history_db_path": str(history),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--threshold", type=float, default=None)
    args = parser.parse_args()
    data = json.loads((args.work / "data.json").read_text("utf-8"))
    options = {} if args.threshold is None else {"threshold": args.threshold}
    found: dict[str, Any] = {}

    chat = memory(args.url, args.model, "mem0_chat", args.work / "history-chat.db")
    began = time.perf_counter()
    for dialogue in data["dialogues"]:
        messages = [{"role": "user", "content": text} for text in dialogue["texts"]]
        chat.add(messages, user_id=dialogue["tenant"], infer=False)
    found["chat_add_s"] = time.perf_counter() - began
    found["chat"] = _searched(chat, data["questions"], options)

    scifact = memory(args.url, args.model, "mem0_scifact", args.work / "history-scifact.db")
    began = time.perf_counter()
    for text in data["abstracts"]:
        scifact.add(text, user_id="scifact", infer=False)
    found["scifact_add_s"] = time.perf_counter() - began
    found["scifact"] = _searched(scifact, data["claims"], options)
    (args.work / "mem0.json").write_text(json.dumps(found), "utf-8")


def _searched(memory: Any, questions: list[dict[str, Any]], options: dict[str, Any]) -> Any:
    results, times = [], []
    for question in questions:
        began = time.perf_counter()
        answer = memory.search(
            question["text"], filters={"user_id": question["tenant"]}, top_k=question["k"],
            **options,
        )  # fmt: skip
        times.append((time.perf_counter() - began) * 1000)
        results.append([item["memory"] for item in answer["results"]])
    return {"found": results, "ms": times}


if __name__ == "__main__":
    main()
