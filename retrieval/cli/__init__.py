"""The ``retrieval`` command: migrations, ingest, search, statistics and the demo."""
