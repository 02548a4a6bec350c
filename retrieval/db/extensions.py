"""The PostgreSQL extensions the schema needs, created by the migrations that first use them."""

from __future__ import annotations

from alembic import op
from psycopg import sql
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from retrieval.db.queries import execute, statement
from retrieval.errors import ExtensionError

# Every extension the migrations create: vector and pg_trgm (revision 0001), btree_gin (0009).
SCHEMA_EXTENSIONS = ("btree_gin", "pg_trgm", "vector")

CONTRIB = (
    "PostgreSQL's contrib modules (Debian/Ubuntu: postgresql-contrib; most managed services "
    "include it)"
)


def ensure_extension(name: str, package: str) -> None:
    """Create extension ``name`` in the migration's database unless it exists; a clear
    :class:`ExtensionError` when the server lacks it (install ``package``) or the role may not
    create it. Runs inside a migration (Alembic's ``op``)."""
    create = sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(name))
    if op.get_context().as_sql:  # offline (--sql): no database to ask
        op.execute(create.as_string(None))
        return
    bind: Connection = op.get_bind()
    if execute(bind, statement("db.extension_installed"), {"name": name}).scalar():
        return
    version, database, role = execute(bind, statement("db.who_and_where")).one()
    available = execute(bind, statement("db.extension_available"), {"name": name}).scalar()
    if not available:
        raise ExtensionError(
            f"PostgreSQL {version} has no extension {name!r} installed, and retrieval needs it. "
            f"Install {package} on the database server, then run the migration again."
        )
    try:
        with bind.begin_nested():
            execute(bind, create.as_string(None))
    except DBAPIError as error:
        raise ExtensionError(
            f"Extension {name!r} could not be created in database {database!r} on PostgreSQL "
            f"{version} as role {role!r}: {str(error.orig).strip().splitlines()[0]}. Ask a "
            f"superuser to run `CREATE EXTENSION {name};` in {database!r} (or to grant the "
            "right to create it), then run the migration again."
        ) from error
