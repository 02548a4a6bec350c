"""Row-level security from the library's side: name the tenant of each statement to PostgreSQL.

Revision 0011 gives every table a policy that lets a bound role (not the tables' owner, not a
superuser, without ``BYPASSRLS``) see and change only the rows whose ``tenant_id`` equals the
session setting ``retrieval.tenant_id``. Every statement of the library already filters by
tenant; on a connection that PostgreSQL binds, the library also sets that setting to the
tenant of the call, so a statement that forgot its filter would find nothing of another
tenant.

Whether a connection is bound is asked once per connection (``row_security_active``) and
kept with it; on an unbound one (the owner, a superuser such as the embedded server's
``postgres``) nothing is sent and nothing costs more.

``COPY FROM`` is refused by PostgreSQL on a table whose policies bind the role, so on a bound
connection rows are written as ``INSERT ... VALUES``, one tenant at a time, each after the
tenant is named (:mod:`retrieval.db.insert_values`).
"""

from __future__ import annotations

from sqlalchemy import Connection

from retrieval.db.local_settings import set_local
from retrieval.db.queries import blocks, execute, quote_schema, statement

SETTING = "retrieval.tenant_id"

# One round trip, sent as it is by SQLAlchemy's connections and the retriever's own.
PROBE = blocks("db")["row_security_active"]
_INFO_KEY = "retrieval_row_security"


def probe_parameters(schema: str) -> dict[str, str]:
    """The parameters of :data:`PROBE` for ``schema`` (its memories table stands for all)."""
    return {"relation": f"{quote_schema(schema)}.memories"}


def row_security_active(connection: Connection, schema: str) -> bool:
    """Whether PostgreSQL binds this connection's role by the policies of ``schema`` (asked
    once per connection; ``False`` before the tables exist)."""
    known: dict[str, bool] = connection.info.setdefault(_INFO_KEY, {})
    if schema not in known:
        probe = connection.exec_driver_sql(PROBE, probe_parameters(schema))
        known[schema] = bool(probe.scalar_one())
    return known[schema]


def bind_tenant(connection: Connection, schema: str, tenant_id: str) -> None:
    """Name ``tenant_id`` to the policies for the rest of the transaction, on a bound
    connection (with ``SET LOCAL``, which Citus sends on to the worker that holds the tenant's
    shard); nothing on an unbound one."""
    if row_security_active(connection, schema):
        set_local(connection, SETTING, tenant_id)


_SEQUENCES = "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"


def sequences_grant(schema: str, role: str) -> str:
    """The grant of the schema's sequences to ``role`` (identifiers quoted by psycopg)."""
    from psycopg import sql

    names = {"schema": sql.Identifier(schema), "role": sql.Identifier(role)}
    return sql.SQL(_SEQUENCES).format(**names).as_string()


def grant_statements(schema: str, role: str) -> list[str]:
    """What an application role needs on ``schema``: reading and writing each of the library's
    tables (named one by one) and taking ids from their sequences; row-level security then
    limits it to the tenant it names. Nothing on Alembic's ``alembic_version`` (a grant of an
    earlier version is taken back): only the migrating role moves the schema's revision.
    Identifiers are quoted by psycopg, so neither name can carry SQL."""
    from psycopg import sql

    from retrieval.db.schema import ALL_TABLES

    names = {"schema": sql.Identifier(schema), "role": sql.Identifier(role)}
    tables = sql.SQL(", ").join(sql.Identifier(schema, table) for table in ALL_TABLES)
    templates = (
        "GRANT USAGE ON SCHEMA {schema} TO {role}",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE {tables} TO {role}",
        "REVOKE ALL ON TABLE {version} FROM {role}",
        _SEQUENCES,
        # The index lookups that run as the owner (revision 0011), for the role's tenant only.
        "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema} TO {role}",
    )
    version = sql.Identifier(schema, "alembic_version")
    return [
        sql.SQL(template).format(tables=tables, version=version, **names).as_string()
        for template in templates
    ]


def grant_application_role(connection: Connection, schema: str, role: str) -> None:
    """Give ``role`` what :func:`grant_statements` lists, after checking that row-level security
    will bind it (it must not be a superuser, have ``BYPASSRLS`` or own the tables)."""
    from retrieval.db.distribute import citus_version
    from retrieval.errors import ConfigurationError, DatabaseError

    found = execute(
        connection, statement("db.role_binding", schema), {"role": role, "schema_name": schema}
    ).one_or_none()
    if found is None:
        raise ConfigurationError(
            f"role {role!r} or table {schema}.memories does not exist: create the role "
            f"(CREATE ROLE {role} LOGIN PASSWORD '...') and run `retrieval db upgrade` first"
        )
    superuser, bypass, owner = found
    if superuser or bypass or owner:
        why = "a superuser" if superuser else "BYPASSRLS" if bypass else "the tables' owner"
        raise ConfigurationError(
            f"role {role!r} is {why}: row-level security would not bind it; give the "
            "application a role of its own (CREATE ROLE app LOGIN PASSWORD '...')"
        )
    for grant in grant_statements(schema, role):
        execute(connection, grant)
    if citus_version(connection) is not None:
        # Citus does not pass grants on sequences to the workers, where the word statistics'
        # triggers take the vocabulary's ids (revision 0015): grant them there too.
        command = {"command": sequences_grant(schema, role)}
        failed = execute(connection, statement("db.run_on_workers"), command).all()
        if failed:
            raise DatabaseError(
                "granting the sequences on the workers failed: "
                + "; ".join(f"{host}:{port}: {result}" for host, port, result in failed)
            )
