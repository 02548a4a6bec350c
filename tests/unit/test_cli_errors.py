"""A mistyped command line is answered with what was probably meant, exit status 2."""

from __future__ import annotations

import pytest

from retrieval.cli.commands import build_parser


def _error(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    monkeypatch.setattr("sys.argv", ["retrieval", *argv])
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serach", "x"], "'serach' is not one: did you mean 'search'?"),
        (["db", "upgrad"], "'upgrad' is not one: did you mean 'upgrade'?"),
        (["search", "x", "--tenant", "a", "--limit", "ten"],
         "argument --limit takes a whole number, got 'ten'"),
        (["search", "x", "--tenants", "a"],
         "required: --tenant; --tenants (did you mean --tenant?)"),
        (["search", "x", "--tenant-id", "a"], "--tenant-id (did you mean --tenant?)"),
        (["search", "x", "--tenant", "a", "--limitt", "3"], "--limitt (did you mean --limit?)"),
    ],
)  # fmt: skip
def test_a_mistake_names_what_was_meant(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert said in _error(argv, capsys, monkeypatch)


def test_a_mistake_with_nothing_near_says_only_what_is_wrong(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = _error(["zzzz"], capsys, monkeypatch)
    assert "'zzzz' is not one: (one of db, ingest" in line and "did you mean" not in line
    line = _error(["search", "x", "--tenant", "a", "--qqqqqq"], capsys, monkeypatch)
    assert line.endswith("unrecognized arguments: --qqqqqq")
