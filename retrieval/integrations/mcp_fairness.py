"""Each bearer token's fair share of ``retrieval mcp --http``.

Two bounds, applied to every ``POST`` that carries a known token, before the MCP SDK reads it:

* **In flight per token.** A token may have at most ``per_token`` requests in the server at once,
  running or waiting; one more is answered ``429 Too Many Requests`` with a ``Retry-After``
  header, after being held for that long (its body is never read, and a client that ignores
  ``Retry-After`` cannot make the server refuse it as fast as it can ask).
* **Running, in turn.** At most ``at_once`` requests run at once. A token alone may use every
  place; while other tokens are active, each runs one request at a time and the others wait in
  its queue, a freed place going to the tokens in turn, never to the oldest request: a token
  that keeps 16 calls in flight has one running beside another token's call, not 16 ahead of
  it.

Requests without a known token pass through: the SDK refuses them with 401 before any tool runs.
This module imports no MCP code.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from retrieval.integrations.mcp_tokens import TokenTable, token_hash

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

RETRY_AFTER_SECONDS = 1
# Refusals of one token held for RETRY_AFTER_SECONDS before the 429 is sent (beyond, sent at
# once): a client that asks again at once, ignoring Retry-After, asks at most once a second per
# connection instead of as fast as the server can refuse.
HELD_REFUSALS = 1024


class TurnTaking:
    """Places to run, shared by tokens: at most ``at_once`` requests run at once; a token alone
    may hold them all, but while other tokens are active each runs one request at a time, the
    tokens taking turns; at most ``per_token`` requests of one token are in flight, running or
    waiting.

    A token is active while it has a request in flight and for ``recent_seconds`` after its
    last one ended: a client that sends its next call as soon as the last one is answered finds
    its place free, not taken by a busier token. (The server's Python runs one thing at a time:
    each request running beside another's makes that one slower, so a busy token that kept
    several running would slow every other token's call; benchmarks/README.md, mcp-two-tokens.)
    A place freed while the waiting requests' tokens already run one each stays free until a
    token goes quiet (at most ``recent_seconds``).
    """

    def __init__(
        self,
        *,
        at_once: int,
        per_token: int,
        recent_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.at_once = at_once
        self.per_token = per_token
        self.recent_seconds = recent_seconds
        self.refused = 0
        self._clock = clock
        self._running_total = 0
        self._running: Counter[str] = Counter()
        self._in_flight: Counter[str] = Counter()
        self._last_seen: OrderedDict[str, float] = OrderedDict()
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._turns: deque[str] = deque()  # tokens with waiting requests, next first
        self._recheck: asyncio.TimerHandle | None = None

    def enter(self, token: str) -> bool:
        """Count one more request of ``token`` in flight; false (and nothing counted) past
        ``per_token``."""
        if self._in_flight[token] >= self.per_token:
            self.refused += 1
            return False
        self._in_flight[token] += 1
        return True

    def leave(self, token: str) -> None:
        """The request of ``token`` counted by :meth:`enter` is over."""
        self._in_flight[token] -= 1
        if not self._in_flight[token]:
            del self._in_flight[token]
        self._seen(token)

    async def place(self, token: str) -> None:
        """Wait for a place to run (give it back with :meth:`release`)."""
        # Tokens that wait are over their share or found no place: one under its share may
        # take a free place at once.
        if token not in self._waiting and self._may_run(token, self._share()):
            self._start(token)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._waiting.get(token)
        if queue is None:
            queue = self._waiting[token] = deque()
            self._turns.append(token)
        queue.append(waiter)
        self._look_again_later()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(token)  # the place was handed over as the wait was cancelled
            else:
                self._withdraw(token, waiter)
            raise

    def release(self, token: str) -> None:
        """Give back the place of a request of ``token``: to the next token in turn whose
        share allows, else it stays free."""
        self._running[token] -= 1
        if not self._running[token]:
            del self._running[token]
        self._running_total -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        if self._recheck is not None:
            self._recheck.cancel()  # this look covers it (a no-op if it is the one running)
            self._recheck = None
        share = self._share()
        passed = 0  # tokens in a row over their share
        while self._turns and self._running_total < self.at_once and passed < len(self._turns):
            token = self._turns[0]
            if self._running[token] >= share:
                self._turns.rotate(-1)
                passed += 1
                continue
            queue = self._waiting[token]
            waiter = queue.popleft()
            self._turns.popleft()
            if queue:
                self._turns.append(token)
            else:
                del self._waiting[token]
            self._start(token)
            waiter.set_result(None)
            passed = 0
        self._look_again_later()

    def _look_again_later(self) -> None:
        # Free places, and waiting requests over their share: look again when shares may grow.
        if self._turns and self._running_total < self.at_once and self._recheck is None:
            loop = asyncio.get_running_loop()
            self._recheck = loop.call_later(self.recent_seconds, self._dispatch)

    def _share(self) -> int:
        horizon = self._clock() - self.recent_seconds
        while self._last_seen and next(iter(self._last_seen.values())) < horizon:
            self._last_seen.popitem(last=False)
        alone = len(self._in_flight.keys() | self._last_seen.keys()) <= 1
        return self.at_once if alone else 1

    def _may_run(self, token: str, share: int) -> bool:
        return self._running_total < self.at_once and self._running[token] < share

    def _start(self, token: str) -> None:
        self._running_total += 1
        self._running[token] += 1

    def _seen(self, token: str) -> None:
        self._last_seen[token] = self._clock()
        self._last_seen.move_to_end(token)

    def _withdraw(self, token: str, waiter: asyncio.Future[None]) -> None:
        queue = self._waiting.get(token)
        if queue is None or waiter not in queue:
            return
        queue.remove(waiter)
        if not queue:
            del self._waiting[token]
            self._turns.remove(token)


class FairShares:
    """ASGI middleware around the MCP app: :class:`TurnTaking` for each ``POST`` of a known
    token (keyed by the token's hash, never the token)."""

    def __init__(self, app: App, tokens: TokenTable, turns: TurnTaking) -> None:
        self.app = app
        self.tokens = tokens
        self.turns = turns
        self._held: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = self._known_token(scope)
        if token is None:
            await self.app(scope, receive, send)
            return
        if not self.turns.enter(token):
            await self._refuse(token, send)
            return
        placed = done = False

        def finish() -> None:
            # The request's place and its count, given back once.
            nonlocal done
            if not done:
                done = True
                if placed:
                    self.turns.release(token)
                self.turns.leave(token)

        async def answering(message: Message) -> None:
            # Given back before the answer's last byte leaves: a client that sends its next
            # request the moment it has the answer finds the place free, not still held by the
            # app's work after it answered.
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                finish()
            await send(message)

        try:
            await self.turns.place(token)
            placed = True
            await self.app(scope, receive, answering)
        finally:
            finish()

    async def _refuse(self, token: str, send: Send) -> None:
        if self._held[token] < HELD_REFUSALS:
            self._held[token] += 1
            try:
                await asyncio.sleep(RETRY_AFTER_SECONDS)
            finally:
                self._held[token] -= 1
                if not self._held[token]:
                    del self._held[token]
        await _too_many(send, self.turns.per_token)

    def _known_token(self, scope: Scope) -> str | None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer" and token:
                    digest = token_hash(token.strip())
                    return digest if digest in self.tokens.tenants else None
        return None


async def _too_many(send: Send, per_token: int) -> None:
    body = json.dumps(
        {
            "error": "too_many_requests",
            "error_description": f"this token already has {per_token} requests in flight, the "
            f"most one token may have: retry after {RETRY_AFTER_SECONDS} s, or wait for an "
            "answer before sending more (RETRIEVAL_MCP_CALLS_PER_TOKEN sets the bound)",
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
