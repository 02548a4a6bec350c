"""``retrieval db``: migrate the schema up and down, grant the application role, distribute
the tables with Citus, and say which revision a database is at."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from retrieval.cli.parsers import command
from retrieval.cli.terminal import confirmed
from retrieval.db import migrate
from retrieval.db.engine import Database


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = commands.add_parser(
        "db",
        help="migrate the schema (Alembic)",
        description="Migrate the retrieval schema with Alembic. RETRIEVAL_EMBEDDING_DIM fixes "
        "the vector dimension when the tables are created.",
    )
    actions = db.add_subparsers(title="actions", metavar="ACTION", required=True)
    upgrade = command(actions, "upgrade", _upgrade)
    upgrade.add_argument("revision", nargs="?", default="head", help="target (default: head)")
    upgrade.set_defaults(creates_database=True)  # the embedded one, in a new data directory
    downgrade = command(actions, "downgrade", _downgrade)
    downgrade.add_argument("revision", nargs="?", default="-1", help="target (default: -1)")
    downgrade.add_argument(
        "--yes", action="store_true", help="drop the data the downgrade removes without asking"
    )
    for action in (upgrade, downgrade):
        action.add_argument(
            "--lock-timeout",
            type=float,
            default=migrate.DEFAULT_LOCK_TIMEOUT,
            metavar="SECONDS",
            help="how long to wait for a lock another session holds before giving up and "
            f"naming it (default: {migrate.DEFAULT_LOCK_TIMEOUT:g}; 0: no limit)",
        )
    grant = command(actions, "grant", _grant)
    grant.add_argument("role", help="the application's role (created beforehand)")
    command(actions, "distribute", _distribute)
    command(actions, "current", _current)


def _settings(database: Database) -> migrate.MigrationSettings:
    return migrate.MigrationSettings.from_config(database.config)


def _migration_settings(args: argparse.Namespace, database: Database) -> migrate.MigrationSettings:
    return replace(_settings(database), lock_timeout=args.lock_timeout)


def _upgrade(args: argparse.Namespace, database: Database) -> int:
    """migrate up

    Migrate up to REVISION (default: head)."""
    settings = _migration_settings(args, database)
    migrate.upgrade(database.engine, settings, args.revision)
    revision = migrate.current_revision(database.engine, settings)
    print(f"{database.url}: at revision {revision}")
    return 0


def _downgrade(args: argparse.Namespace, database: Database) -> int:
    """migrate down

    Migrate down to REVISION: -1 is one step (the default), base removes every table of the
    schema and its data. A downgrade that would drop stored data (memories, documents, entity
    links, threads, chunk metadata, ingest keys) says what and how many rows, and runs only with
    --yes, or when you type yes at the prompt of a terminal."""
    from retrieval.db.downgrade_losses import downgrade_losses

    settings = _migration_settings(args, database)
    losses = downgrade_losses(database.engine, settings, args.revision)
    dropped = [loss for loss in losses if not loss.derived]
    if dropped:
        listing = "\n".join(f"  {loss}" for loss in losses)
        print(f"This downgrade of {database.url} drops:\n{listing}", file=sys.stderr)
        if not args.yes and not confirmed("Type yes to drop them"):
            print(
                "error: nothing was changed: pass --yes to drop them (back them up first: "
                "pg_dump --schema=" + settings.schema + ")",
                file=sys.stderr,
            )
            return 1
    elif losses:
        print("\n".join(f"dropping {loss}" for loss in losses), file=sys.stderr)
    migrate.downgrade(database.engine, settings, args.revision)
    revision = migrate.current_revision(database.engine, settings)
    print(f"{database.url}: at revision {revision or 'base (no tables)'}")
    return 0


def _grant(args: argparse.Namespace, database: Database) -> int:
    """let an application role read and write, bound by row-level security

    Grant ROLE what the library needs on the schema (its tables and sequences). ROLE must not be
    a superuser, have BYPASSRLS or own the tables: row-level security then lets it see only the
    tenant each call names. Run it as the tables' owner, after `retrieval db upgrade`."""
    from retrieval.db.row_security import grant_application_role

    with database.engine.begin() as connection:
        grant_application_role(connection, database.config.schema, args.role)
    schema = database.config.schema
    print(f"{database.url}: {args.role} may read and write {schema}, one tenant per call")
    return 0


def _distribute(args: argparse.Namespace, database: Database) -> int:
    """distribute the tables by tenant on a Citus coordinator

    On the coordinator of a Citus cluster, distribute every table of the schema by tenant_id,
    co-located, parents first, and create the schema's functions on every node: each tenant's
    rows then live on one node, and every statement of the library is routed to it (a read
    statement through the read function it makes, which runs it on that node over the
    tenant's shards, planned there only). Run it after
    `retrieval db upgrade` (the schema must be at the newest revision); a second run finds
    nothing to do, and later upgrades keep new tables distributed. On a server without Citus it
    changes nothing. It then prints the ALTER ROLE commands that give the role the application
    reads as the settings of its reads on every node, so that a read sends none of them (about
    1 ms less a read). See docs/scale-out.md."""
    from retrieval.db.distribute import distribute

    schema = database.config.schema
    revision = migrate.current_revision(database.engine, _settings(database))
    done = distribute(database.engine, schema, head=migrate.head_revision(), revision=revision)
    if not done.changed:
        print(f"{database.url}: nothing to do: schema {schema!r} is already distributed")
    else:
        print(
            f"{database.url} (Citus {done.citus_version}): {len(done.tables)} tables distributed "
            "by tenant_id"
            + (f", {len(done.functions)} functions on every node" if done.functions else "")
        )
    print(_role_settings_hint())
    return 0


def role_settings_commands(role: str) -> list[str]:
    """The ``ALTER ROLE`` commands that give ``role`` the settings the retriever's reads need
    (with the ``RETRIEVAL_*`` settings here): on a Citus coordinator, Citus carries them to every
    node, and a read whose settings every worker holds goes without ``SET LOCAL``."""
    from psycopg import sql

    from retrieval.db.read_pool import worker_settings
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import read_settings

    wanted = read_settings(RetrievalConfig.from_env())
    return [
        sql.SQL("ALTER ROLE {} SET {} = {}")
        .format(sql.Identifier(role), sql.SQL(name), sql.Literal(value))
        .as_string(None)
        for name, value in worker_settings(wanted.items())
    ]


def _role_settings_hint() -> str:
    commands = "\n".join(f"  {command};" for command in role_settings_commands("app_role"))
    return (
        "reads send their settings to the worker with each statement; where the role they run "
        "as (app_role below)\nholds them on every node, they go without (Citus carries an ALTER "
        "ROLE to every node):\n" + commands
    )


def _current(args: argparse.Namespace, database: Database) -> int:
    """print the database's revision

    Print the revision the database is at and the newest one available."""
    revision = migrate.current_revision(database.engine, _settings(database))
    head = migrate.head_revision()
    state = "up to date" if revision == head else f"newest available: {head}"
    print(f"{revision or 'base (not migrated)'} ({state})")
    return 0
