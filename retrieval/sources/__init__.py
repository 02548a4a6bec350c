"""One module per source: its SQL (for database sources) and its scoring."""
