"""A memory's key, on a real PostgreSQL: a memory remembered under the key of a live memory of
its namespace supersedes it (history kept), a key is never a copy, an expired key is retired at
its expiry, and a batch names each key once."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retrieval.errors import ValidationError
from retrieval.memory.store import MemoryStore

WHEN = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def test_a_new_memory_under_a_key_supersedes_the_one_that_holds_it(store: MemoryStore) -> None:
    first = store.remember("Theme: dark.", tenant_id="acme", namespace=["u1"], key="theme",
                           created_at=WHEN)  # fmt: skip
    other = store.remember("Theme: dark.", tenant_id="acme", namespace=["u2"], key="theme",
                           created_at=WHEN)  # fmt: skip
    second = store.remember("Theme: light.", tenant_id="acme", namespace=["u1"], key="theme",
                            created_at=WHEN + timedelta(hours=1))  # fmt: skip
    old = store.get_memory(first, tenant_id="acme")
    assert old is not None and old.superseded_by == second and old.key == "theme"
    assert [version.memory.id for version in store.history(second, tenant_id="acme")] == [
        first,
        second,
    ]
    kept = store.get_memory(other, tenant_id="acme")
    assert kept is not None and kept.retired_at is None  # another namespace's key


def test_a_keyed_memory_is_never_a_copy(store: MemoryStore) -> None:
    a = store.remember("Likes tea.", tenant_id="acme", namespace=["u1"], key="a")
    b = store.remember("Likes tea.", tenant_id="acme", namespace=["u1"], key="b")
    plain = store.remember("Likes tea.", tenant_id="acme", namespace=["u1"])
    assert len({a, b, plain}) == 3
    again = store.remember("Likes tea.", tenant_id="acme", namespace=["u1"], key="a")
    assert again not in (a, b, plain)
    old = store.get_memory(a, tenant_id="acme")
    assert old is not None and old.superseded_by == again


def test_an_expired_key_is_retired_at_its_expiry(store: MemoryStore) -> None:
    soon = datetime.now(UTC) + timedelta(seconds=1)
    gone = store.remember("Session token abc.", tenant_id="acme", key="token", expires_at=soon)
    import time

    time.sleep(1.2)
    fresh = store.remember("Session token def.", tenant_id="acme", key="token")
    old = store.get_memory(gone, tenant_id="acme")
    assert old is not None and old.retired_at == soon and old.superseded_by is None
    assert fresh != gone


def test_a_batch_names_each_key_once_and_bad_keys_are_refused(store: MemoryStore) -> None:
    with pytest.raises(ValidationError, match="both name key 'k'"):
        store.remember_many([
            {"text": "one", "tenant_id": "acme", "key": "k"},
            {"text": "two", "tenant_id": "acme", "key": "k"},
        ])  # fmt: skip
    for bad in ("", 7, " ", "\n"):
        with pytest.raises(ValidationError, match="key: must be a string not only white space"):
            store.remember("x", tenant_id="acme", key=bad)  # type: ignore[arg-type]
    assert store.namespaces(tenant_id="acme") == []


def test_supersedes_given_as_a_mapping_or_a_set_is_refused(store: MemoryStore) -> None:
    # {id: 1} is a dict whose keys would read as ids; a set has no order to report by.
    old = store.remember("Standup is at 9:00.", tenant_id="acme")
    for bad in ({old: 1}, {old}):
        with pytest.raises(ValidationError, match="must be a memory id or a list of ids"):
            store.remember("Standup is at 9:30.", tenant_id="acme", supersedes=bad)  # type: ignore[arg-type]
    kept = store.get_memory(old, tenant_id="acme")
    assert kept is not None and kept.retired_at is None and kept.superseded_by is None


def test_concurrent_writers_of_one_key_leave_one_live_memory(store: MemoryStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def write(writer: int) -> None:
        for turn in range(15):
            store.remember(f"Theme {writer}-{turn}.", tenant_id="acme", namespace=["u1"],
                           key="theme")  # fmt: skip

    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(write, range(3)))
    live = store.similar("Theme", tenant_id="acme", limit=50, threshold=0.0)
    assert len(live) == 1  # every other version retired by the next
    versions = store.history(live[0].memory.id, tenant_id="acme")
    assert len(versions) == 45
    assert all(a.valid_until == b.valid_from for a, b in itertools.pairwise(versions))


def test_a_put_that_began_first_and_commits_last_holds_the_key(store: MemoryStore) -> None:
    import threading

    from sqlalchemy import text

    began, stored = threading.Event(), threading.Event()

    def late_committer() -> None:
        with store.batch() as batch:  # its transaction's time is fixed before the other's
            batch.connection.execute(text("SELECT now()"))
            began.set()
            stored.wait(10)
            batch.remember_many([{"text": "Theme: light.", "tenant_id": "acme", "key": "theme"}])

    thread = threading.Thread(target=late_committer)
    thread.start()
    began.wait(10)
    first = store.remember("Theme: dark.", tenant_id="acme", key="theme")
    stored.set()
    thread.join(10)
    old = store.get_memory(first, tenant_id="acme")
    assert old is not None and old.superseded_by is not None
    newer = store.get_memory(old.superseded_by, tenant_id="acme")
    assert newer is not None and newer.content == "Theme: light." and newer.retired_at is None
    assert newer.created_at > old.created_at


def test_a_keyed_chain_is_exported_and_ingested_back(store: MemoryStore, tmp_path: Path) -> None:
    from retrieval.memory.export import export_records
    from retrieval.memory.file_ingest import ingest, read_file

    store.remember("Theme: dark.", tenant_id="acme", namespace=["u1"], key="theme",
                   created_at=WHEN)  # fmt: skip
    store.remember("Theme: light.", tenant_id="acme", namespace=["u1"], key="theme",
                   created_at=WHEN + timedelta(hours=1))  # fmt: skip
    lines = list(export_records(store, "acme"))
    assert [line.get("key") for line in lines] == ["theme", "theme"]
    path = tmp_path / "acme.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(store, read_file(path, store, tenant_id="copy", override_tenant=True))
    again = list(export_records(store, "copy"))
    keep = ("text", "key", "namespace", "created_at")
    assert [{k: line.get(k) for k in keep} for line in again] == [
        {k: line.get(k) for k in keep} for line in lines
    ]
    live = store.similar("Theme", tenant_id="copy", threshold=0.0)
    assert [one.memory.content for one in live] == ["Theme: light."]
