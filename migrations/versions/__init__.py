"""Hand-written revisions, oldest first."""
