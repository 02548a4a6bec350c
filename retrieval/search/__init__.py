"""Retrieval: the query, one statement over every source, scoring, ranking and the results."""
