"""Memories in other languages: is the fact asked about found, asked in its language and in another?

``tests/data/multilingual.json`` holds twelve facts of an agent's memory and a question about each,
written in English, German, Spanish, French, Chinese and Japanese. For each embedding model and
each language of the memories, a tenant stores the twelve facts in that language (``remember``);
each question is then asked in every language with ``retrieve()`` and the defaults. Reported per
model: recall at 1 and at 3 (the fact among the first k results) for each pair of languages (rows:
the memories' language, columns: the question's), the mean over the same language and over the
others, and an empty answer counted as a miss.

BM25's text-search configuration: for each language PostgreSQL has a stemmer for (English, German,
Spanish, French), the same-language questions again in a schema whose lexemes are made with that
language's configuration (the setting ``text_search_config`` of the schema and of the retriever),
and with ``simple`` (no stemming, no stop words), beside the default ``english``.

Usage: python benchmarks/quality/multilingual.py [--model NAME ...] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, write_result

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "multilingual.json"
MODELS = ("all-MiniLM-L6-v2", "e5-small")
# PostgreSQL's text search configurations for the fixture's languages (Chinese and Japanese have
# none: their text is one lexeme per run of characters under every configuration).
STEMMERS = {"en": "english", "de": "german", "es": "spanish", "fr": "french"}


def recall(retriever: Any, tenant: str, facts: list[str], questions: list[str]) -> dict[str, float]:
    """The share of ``questions`` whose fact is the first result, and among the first three."""
    first = top3 = 0
    for fact, question in zip(facts, questions, strict=True):
        contents = [r.content for r in retriever.retrieve(question, tenant_id=tenant).results]
        first += bool(contents) and contents[0] == fact
        top3 += fact in contents[:3]
    return {"at 1": round(first / len(facts), 3), "at 3": round(top3 / len(facts), 3)}


def measure_model(model: str, engine: Any, schema: str, data: dict[str, Any]) -> dict[str, Any]:
    """Every pair of languages for ``model``, in ``schema``."""
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    languages = data["languages"]
    store = MemoryStore(engine, schema=schema, config=WriteConfig(embedding_model=model))
    retriever = HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False))
    pairs: dict[str, dict[str, dict[str, float]]] = {}
    for stored in languages:
        facts = [fact[stored] for fact in data["facts"]]
        tenant = f"{model}-{stored}"
        store.remember_many({"text": text, "tenant_id": tenant} for text in facts)
        pairs[stored] = {
            asked: recall(retriever, tenant, facts, [q[asked] for q in data["questions"]])
            for asked in languages
        }
    same = [pairs[lang][lang] for lang in languages]
    across = [pairs[a][b] for a in languages for b in languages if a != b]
    return {
        "model_id": store.embedder.model_id,
        "pairs": pairs,
        "same_language": _mean(same),
        "across_languages": _mean(across),
        "by_memory_language": {lang: _mean(list(pairs[lang].values())) for lang in languages},
    }


def measure_stemmers(model: str, bench: Any, data: dict[str, Any]) -> dict[str, Any]:
    """Same-language recall in a schema of each text-search configuration."""
    from retrieval.db.migrate import MigrationSettings, upgrade
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    found: dict[str, Any] = {}
    for config in ("english", "simple", *sorted(set(STEMMERS.values()) - {"english"})):
        schema = f"ml_{config}"
        upgrade(
            bench.engine,
            MigrationSettings(schema=schema, embedding_dim=384, text_search_config=config),
        )
        store = MemoryStore(bench.engine, schema=schema, config=WriteConfig(embedding_model=model))
        read = RetrievalConfig(record_access=False, text_search_config=config)
        retriever = HybridRetriever.from_store(store, config=read)
        found[config] = {}
        for language in STEMMERS:
            if config not in ("english", "simple") and STEMMERS[language] != config:
                continue
            facts = [fact[language] for fact in data["facts"]]
            tenant = f"{model}-{language}"
            store.remember_many({"text": text, "tenant_id": tenant} for text in facts)
            questions = [q[language] for q in data["questions"]]
            found[config][language] = recall(retriever, tenant, facts, questions)
    return found


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(sum(row[key] for row in rows) / len(rows), 3) for key in rows[0]}


def table(result: dict[str, Any], languages: list[str], key: str) -> str:
    """One model's pairs as a Markdown table of recall at ``key``."""
    lines = [
        f"| memories \\ question ({key}) | " + " | ".join(languages) + " |",
        "|---" * (len(languages) + 1) + "|",
    ]
    for stored in languages:
        cells = " | ".join(f"{result['pairs'][stored][asked][key]:.2f}" for asked in languages)
        lines.append(f"| {stored} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="*", default=list(MODELS), help="embedding models")
    add_output(parser)
    args = parser.parse_args()

    from _server import embedded

    from retrieval.db.migrate import MigrationSettings

    data = json.loads(DATA.read_text("utf-8"))
    bench = embedded(None, MigrationSettings(schema="multilingual", embedding_dim=384))
    results: dict[str, Any] = {"facts": len(data["facts"]), "languages": data["languages"]}
    for model in args.model:
        results[model] = measure_model(model, bench.engine, "multilingual", data)
        results[model]["text_search_configs"] = measure_stemmers(model, bench, data)
    write_result("multilingual", results, args)
    for model in args.model:
        print(f"\n{model} ({results[model]['model_id']})")
        for key in ("at 1", "at 3"):
            print(table(results[model], data["languages"], key) + "\n")
        print("same language", results[model]["same_language"])
        print("across languages", results[model]["across_languages"])
        print("text search configs", results[model]["text_search_configs"])


if __name__ == "__main__":
    main()
