"""A source's part of the plan, through one interface.

Each source (:mod:`retrieval.search.sources`) gives a :class:`PlanSource`: whether its ranking
reports on it, its part of the statement's shape for a call (``None`` when the call does not
read it) and the values that part binds. The plan (:mod:`~retrieval.search.plan.read_plan`)
asks every source in turn; the statement stage renders each part
(:mod:`~retrieval.search.statement.source`), the rank stage applies each source's rules
(:mod:`~retrieval.search.rank.source`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from retrieval.embedding.calibration import DenseCalibration
from retrieval.search.knowledge import TenantView
from retrieval.search.prepare.call import PreparedCall

Query = TypeVar("Query")


@dataclass(frozen=True)
class PlanSource(Generic[Query]):
    """A source's part of the plan.

    ``name``: the source, as results and the shape name it (``semantic``, ``episodic``,
    ``documents``). ``reported(call)``: whether the ranking reports on it for ``call``, read or
    not. ``query(call, tenant)``: its part of the statement's shape, ``None`` when the
    call does not read it. ``parameters(query, call, calibration)``: the values that part binds.
    ``probed``: a presence row says whether the tenant holds its rows, and a tenant that held
    none at the last look is read without it until it does.
    """

    name: str
    reported: Callable[[PreparedCall], bool]
    query: Callable[[PreparedCall, TenantView], Query | None]
    parameters: Callable[[Query, PreparedCall, DenseCalibration], dict[str, Any]]
    probed: bool = False
