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
connection rows are copied into a temporary table first and inserted from it, one ``INSERT``
per tenant, each after the tenant is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

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
    connection; nothing on an unbound one."""
    if row_security_active(connection, schema):
        execute(connection, blocks("db")["set_tenant"], {"tenant": tenant_id})


def insert_each_tenant(
    connection: Connection,
    schema: str,
    staging: str,
    insert: str,
    params: Mapping[str, Any] | None = None,
) -> int:
    """Run ``insert`` (an ``INSERT ... SELECT`` from ``pg_temp.<staging>`` limited by a
    ``%(tenant)s`` condition, with ``params`` besides) once per tenant of the staged rows, each
    named to the policies first; return the rows inserted. ``staging`` is a fixed name of the
    library's."""
    staged = statement("db.staged_tenants", schema, staging=staging)
    tenants = execute(connection, staged).scalars().all()
    inserted = 0
    for tenant in tenants:
        bind_tenant(connection, schema, tenant)
        inserted += execute(connection, insert, {**(params or {}), "tenant": tenant}).rowcount
    return inserted


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
        "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
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
    from retrieval.errors import ConfigurationError

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
