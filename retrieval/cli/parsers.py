"""How a command is declared: its parser made from the function that runs it, whose docstring
is the command's help."""

from __future__ import annotations

import argparse
import difflib
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any, NoReturn

from retrieval.arguments import namespace_text
from retrieval.db.engine import Database
from retrieval.errors import ValidationError

if TYPE_CHECKING:
    Commands = argparse._SubParsersAction[argparse.ArgumentParser]
Handler = Callable[[argparse.Namespace, Database], int]
Offline = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """argparse whose errors help: a mistyped command or option names the nearest one, and a
    value of the wrong type says what the option takes (every command's parser is one)."""

    def error(self, message: str) -> NoReturn:
        super().error(friendlier(message, self))


_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")
_VALUE = re.compile(r"argument (?P<option>\S+): invalid (?P<type>int|float) value: '(?P<given>.*)'")
_UNKNOWN = "unrecognized arguments: "
_REQUIRED = "the following arguments are required: "
_TAKES = {"int": "a whole number", "float": "a number"}


def friendlier(message: str, parser: argparse.ArgumentParser) -> str:
    """An argparse error ``message`` with what would have been meant, when that is clear."""
    if choice := _CHOICE.search(message):
        given = choice["given"]
        choices = re.findall(r"'([^']*)'", choice["choices"])
        listed = ", ".join(choices)
        near = difflib.get_close_matches(given, choices, n=1)
        hint = f"did you mean '{near[0]}'? " if near else ""
        return f"{message[: choice.start()]}'{given}' is not one: {hint}(one of {listed})"
    if value := _VALUE.search(message):
        return f"argument {value['option']} takes {_TAKES[value['type']]}, got '{value['given']}'"
    known = set(_option_strings(parser))
    if message.startswith(_UNKNOWN):
        given = message[len(_UNKNOWN) :].split()
    elif message.startswith(_REQUIRED):  # argparse says this before naming unknown options
        given = [word.split("=")[0] for word in sys.argv[1:] if word.startswith("--")]
    else:
        return message
    hints = [
        f"{word} (did you mean {near[0]}?)"
        for word in given
        if word.startswith("--")
        and word not in known
        and (near := difflib.get_close_matches(word, sorted(known), n=1))
    ]
    return f"{message}; {'; '.join(hints)}" if hints else message


def _option_strings(parser: argparse.ArgumentParser) -> Iterator[str]:
    # The options of a parser and of every command under it.
    for action in parser._actions:
        yield from (option for option in action.option_strings if option.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _option_strings(child)


def command(
    commands: Commands,
    name: str,
    handler: Handler | None = None,
    *,
    offline: Offline | None = None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """The parser of command ``name``, run by ``handler`` (given the parsed arguments and the
    database) or by ``offline`` (the arguments alone: it touches no database).

    The function's docstring is the command's help: its first paragraph the one line that
    ``retrieval --help`` lists, the rest the command's description. A ``description`` given
    here is printed as written (a text laid out in columns) instead.
    """
    run: Any = handler or offline
    summary, _, rest = (inspect.getdoc(run) or "").partition("\n\n")
    options: dict[str, Any] = {"help": " ".join(summary.split())}
    if description is not None:
        options |= {
            "description": description,
            "formatter_class": argparse.RawDescriptionHelpFormatter,
        }
    else:
        options["description"] = " ".join(rest.split()) or options["help"]
    parser = commands.add_parser(name, **options)
    parser.set_defaults(**({"handler": handler} if handler is not None else {"offline": offline}))
    return parser


def aware_time(value: str) -> datetime:
    """An argument's ISO 8601 time, which must name its time zone, or a date (``2026-11-20``:
    its midnight in UTC, as the inspector reads it)."""
    text = value.strip()
    try:
        if len(text) == len("2026-11-20"):
            return datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a date (2026-11-25) or an ISO 8601 time (2026-11-25T09:30:00+00:00)"
        ) from None
    if parsed.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} has no time zone: add +00:00 or Z (a date alone is midnight UTC)"
        )
    return parsed


def namespace_path(value: str) -> tuple[str, ...]:
    """An argument's namespace (:func:`retrieval.arguments.namespace_text`)."""
    try:
        return namespace_text("namespace", value)
    except ValidationError as error:
        raise argparse.ArgumentTypeError(error.reason) from None
