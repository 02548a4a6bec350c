"""Each token's fair share of the MCP server: the bound on what one token has in flight, and
places to run handed to the tokens in turn."""

from __future__ import annotations

import asyncio

import pytest

from retrieval.errors import ConfigurationError
from retrieval.integrations.mcp_config import McpConfig
from retrieval.integrations.mcp_fairness import TurnTaking


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_token_has_at_most_its_bound_in_flight() -> None:
    turns = TurnTaking(at_once=4, per_token=2)
    assert turns.enter("a") and turns.enter("a")
    assert not turns.enter("a")
    assert turns.enter("b")  # another token is not bound by a's requests
    turns.leave("a")
    assert turns.enter("a")
    assert turns.refused == 1


async def test_a_token_alone_uses_every_place_and_then_waits() -> None:
    turns = TurnTaking(at_once=2, per_token=10)
    for _ in range(3):
        turns.enter("a")
    await turns.place("a")
    await turns.place("a")
    third = asyncio.create_task(turns.place("a"))
    await _settle()
    assert not third.done()
    turns.release("a")
    await asyncio.wait_for(third, 1)


async def test_another_token_takes_the_next_free_place_before_the_busy_token() -> None:
    clock = Clock()
    turns = TurnTaking(at_once=2, per_token=10, clock=clock)
    for _ in range(3):
        turns.enter("a")
    await turns.place("a")
    await turns.place("a")
    a_waits = asyncio.create_task(turns.place("a"))
    turns.enter("b")
    b_waits = asyncio.create_task(turns.place("b"))
    await _settle()
    assert not a_waits.done() and not b_waits.done()  # every place is taken
    turns.release("a")
    await asyncio.wait_for(b_waits, 1)  # b's turn, though a asked first
    assert not a_waits.done()
    turns.release("a")  # a runs nothing now: its one place while b is active
    await asyncio.wait_for(a_waits, 1)


async def test_a_busy_token_runs_one_at_a_time_while_another_is_active() -> None:
    clock = Clock()
    turns = TurnTaking(at_once=4, per_token=10, clock=clock)
    turns.enter("b")
    await turns.place("b")
    turns.release("b")
    turns.leave("b")  # b was answered and will ask again soon: it stays active
    for _ in range(3):
        turns.enter("a")
    await turns.place("a")
    second = asyncio.create_task(turns.place("a"))
    await _settle()
    assert not second.done()  # three places are free, but they are kept for b
    turns.enter("b")
    await asyncio.wait_for(turns.place("b"), 1)  # b finds a place at once


async def test_a_token_gone_quiet_gives_its_place_back() -> None:
    turns = TurnTaking(at_once=2, per_token=10, recent_seconds=0.05)
    turns.enter("b")
    await turns.place("b")
    turns.release("b")
    turns.leave("b")
    for _ in range(2):
        turns.enter("a")
    await turns.place("a")
    second = asyncio.create_task(turns.place("a"))
    await _settle()
    assert not second.done()
    # b asks nothing for recent_seconds: a alone again, its waiting request takes the place.
    await asyncio.wait_for(second, 2)


async def test_a_cancelled_wait_gives_up_its_turn() -> None:
    turns = TurnTaking(at_once=1, per_token=10)
    turns.enter("a")
    await turns.place("a")
    turns.enter("b")
    gone = asyncio.create_task(turns.place("b"))
    turns.enter("c")
    stays = asyncio.create_task(turns.place("c"))
    await _settle()
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    turns.release("a")
    await asyncio.wait_for(stays, 1)  # the cancelled request did not take the place
    turns.release("c")
    turns.enter("a")
    await asyncio.wait_for(turns.place("a"), 1)  # and it was not left holding one


def test_the_bounds_are_settings_checked_when_made(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (McpConfig().calls_per_token, McpConfig().calls_at_once) == (16, 8)
    monkeypatch.setenv("RETRIEVAL_MCP_CALLS_PER_TOKEN", "4")
    monkeypatch.setenv("RETRIEVAL_MCP_CALLS_AT_ONCE", "2")
    assert (McpConfig.from_env().calls_per_token, McpConfig.from_env().calls_at_once) == (4, 2)
    with pytest.raises(ConfigurationError, match="calls_per_token"):
        McpConfig(calls_per_token=0)
    with pytest.raises(ConfigurationError, match="calls_at_once"):
        McpConfig(calls_at_once=0)
