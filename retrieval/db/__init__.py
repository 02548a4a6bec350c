"""The database: connecting, the embedded server, migrations, the schema and the write helpers."""
