"""How a command is declared: its parser made from the function that runs it, whose docstring
is the command's help."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retrieval.db.engine import Database

if TYPE_CHECKING:
    Commands = argparse._SubParsersAction[argparse.ArgumentParser]
Handler = Callable[[argparse.Namespace, Database], int]
Offline = Callable[[argparse.Namespace], int]


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
    """An argument's ISO 8601 time, which must name its time zone."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO 8601 time (2026-11-25T09:30:00+00:00)"
        ) from None
    if parsed.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} has no time zone: add +00:00 or Z")
    return parsed
