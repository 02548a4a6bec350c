"""The read's sources, each one folder with the same parts.

``semantic`` (memories, by meaning and by their words), ``episodic`` (decisions and tool
calls, by keyword), ``documents`` (chunks, by meaning and BM25). Each folder holds a source's
part of every stage that treats it apart, behind that stage's one interface:

* ``plan.py``: its shape (which CTEs, which channels), whether a call reads it, the values it
  binds (a :class:`~retrieval.search.plan.source.PlanSource`);
* ``statement.py``: its CTEs, the rows that are its candidates in the columns every source
  selects (decoded alike into :class:`~retrieval.search.candidate.Candidate`), and the count
  of a tenant's rows its presence row reads (a
  :class:`~retrieval.search.statement.source.StatementSource`);
* ``rank.py``: its rules on its scored candidates, and whether its weak matches fill an answer
  that would be empty (a :class:`~retrieval.search.rank.source.RankSource`).

A part belongs to the stage it is named after and imports as that stage does
(tests/unit/test_read_stages.py). Each stage names the sources in order, once: the plan's
``SOURCES`` (:mod:`~retrieval.search.plan.read_plan`), the statement's
(:mod:`~retrieval.search.statement.render`), the rank's (:mod:`~retrieval.search.rank.rank`).
"""
