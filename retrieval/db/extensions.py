"""The PostgreSQL extensions the schema needs, created by the migrations that first use them."""

from __future__ import annotations

from alembic import op
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

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
    if op.get_context().as_sql:  # offline (--sql): no database to ask
        op.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
        return
    bind: Connection = op.get_bind()
    if bind.execute(text("SELECT 1 FROM pg_extension WHERE extname = :n"), {"n": name}).scalar():
        return
    version = bind.execute(text("SHOW server_version")).scalar()
    database = bind.execute(text("SELECT current_database()")).scalar()
    role = bind.execute(text("SELECT current_user")).scalar()
    available = bind.execute(
        text("SELECT 1 FROM pg_available_extensions WHERE name = :n"), {"n": name}
    ).scalar()
    if not available:
        raise ExtensionError(
            f"PostgreSQL {version} has no extension {name!r} installed, and retrieval needs it. "
            f"Install {package} on the database server, then run the migration again."
        )
    try:
        with bind.begin_nested():
            bind.execute(text(f"CREATE EXTENSION IF NOT EXISTS {name}"))
    except DBAPIError as error:
        raise ExtensionError(
            f"Extension {name!r} could not be created in database {database!r} on PostgreSQL "
            f"{version} as role {role!r}: {str(error.orig).strip().splitlines()[0]}. Ask a "
            f"superuser to run `CREATE EXTENSION {name};` in {database!r} (or to grant the "
            "right to create it), then run the migration again."
        ) from error
