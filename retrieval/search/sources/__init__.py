"""The read statement's parts: one CTE builder per source, and the shared fragments."""
