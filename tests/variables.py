"""The ``RETRIEVAL_*`` variables the tests and benchmarks read (the library does not): declared
to the library's settings, so that setting one draws no warning of an unknown variable."""

from __future__ import annotations

from collections.abc import Mapping

from retrieval.settings import read_elsewhere

TEST_VARIABLES = {
    "RETRIEVAL_TEST_DATABASE_URL": "The test suite's PostgreSQL (tests only).",
    "RETRIEVAL_CITUS_BIN": "The bin directory of a PostgreSQL with Citus, for the Citus tests "
    "and benchmarks (tests only).",
    "RETRIEVAL_CHROMIUM": "The Chromium the inspector's browser tests drive (tests only; "
    "default: chromium on the PATH).",
    "RETRIEVAL_UPDATE_SCREENSHOT": "Set to 1, the browser tests rewrite the README's "
    "screenshot of the inspector (tests only).",
}
read_elsewhere(TEST_VARIABLES)


def without_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without any ``RETRIEVAL_*`` variable, the tests' own included: the shell of
    a process that must see no setting but those a test gives it."""
    return {name: value for name, value in environ.items() if not name.startswith("RETRIEVAL_")}
