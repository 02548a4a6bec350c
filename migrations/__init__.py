"""Alembic migrations of the retrieval schema (shipped in the wheel as ``retrieval.migrations``)."""
