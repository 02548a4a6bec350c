"""A password never leaves the library in a message, and a token is never echoed.

A password holding an unencoded ``@``, ``/``, ``?`` or ``#`` makes a URL the driver reads
wrongly (part of the password becomes the host, then appears in its error): such URLs are
refused, with the URL masked and how to encode the password, by every entry point: the Python
API, every CLI command, ``retrieval config`` and Alembic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.cli.commands import main
from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect, make_engine
from retrieval.errors import ConfigurationError, scrubbed, unavailable_error
from retrieval.integrations.mcp_tokens import TokenTable

ROOT = Path(__file__).resolve().parents[2]
SECRET = "Zq9Secret"
URLS = [
    pytest.param(f"postgresql://app:{SECRET}{mark}PW@127.0.0.1:1/memory", id=name)
    for mark, name in (("@", "at"), ("/", "slash"), ("?", "question-mark"), ("#", "hash"))
]


def _clean(text: str) -> None:
    assert SECRET not in text and "PW@" not in text, text


@pytest.mark.parametrize("url", URLS)
def test_an_ambiguous_url_is_refused_without_its_password(url: str) -> None:
    for make in (
        lambda: DatabaseConfig(url=url),
        lambda: DatabaseConfig(url="postgresql://app@h/db", read_url=url),
        lambda: connect(DatabaseConfig(url=url)),
        lambda: make_engine(url),
    ):
        with pytest.raises(ConfigurationError, match="percent-encoded") as raised:
            make()
        _clean(str(raised.value))
        assert "urllib.parse.quote" in str(raised.value)


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("argv", [["stats"], ["db", "current"], ["search", "--tenant", "a", "x"]])
def test_no_cli_command_prints_the_password(
    url: str, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database-url", url, *argv]) == 1
    monkeypatch.setenv("RETRIEVAL_DATABASE_URL", url)
    assert main(argv) == 1
    main(["config"])
    out, err = capsys.readouterr()
    _clean(out + err)
    assert "percent-encoded" in err


@pytest.mark.parametrize("url", URLS[:2])
def test_alembic_does_not_print_the_password(url: str) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url={url}", "current"],
        cwd=ROOT,
        env={**os.environ, "RETRIEVAL_DATABASE_URL": url},
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode != 0
    _clean(ran.stdout + ran.stderr)
    assert "percent-encoded" in ran.stderr


def test_a_driver_message_quoting_the_password_is_scrubbed() -> None:
    url = "postgresql://app:hunter2%40x@127.0.0.1:1/memory"
    cause = OSError("failed to resolve host 'hunter2@x@127.0.0.1' for hunter2%40x")
    message = str(unavailable_error(url, cause))
    assert "hunter2" not in message
    assert scrubbed("password hunter2%40x refused", url) == "password *** refused"


def test_a_password_equal_to_a_name_is_masked_as_a_password_only() -> None:
    # The user is named in the message; the password, where it stands as one, is not.
    url = "postgresql://alice:alice@127.0.0.1:1/alice"
    cause = OSError('FATAL: password authentication failed for user "alice"')
    message = str(unavailable_error(url, cause))
    assert 'for user "alice"' in message
    assert "postgresql://alice:***@127.0.0.1:1/alice" in message
    assert scrubbed("dsn postgresql://alice:alice@h/alice password=alice", url) == (
        "dsn postgresql://alice:***@h/alice password=***"
    )
    # A password of its own is hidden wherever it appears.
    other = "postgresql://alice:s3cret-pw@127.0.0.1:1/alice"
    assert scrubbed('user "alice" sent s3cret-pw', other) == 'user "alice" sent ***'


def test_a_malformed_token_entry_is_not_echoed() -> None:
    token = "f3Jk9-raw-bearer-token-pasted-by-mistake"
    for text in (f"{token} acme", token, f"{'a' * 63} acme"):
        with pytest.raises(ConfigurationError, match="not shown") as raised:
            TokenTable.parse(text, origin="RETRIEVAL_MCP_TOKENS", separators="\n,")
        assert token not in str(raised.value) and "a" * 63 not in str(raised.value)
