"""The documents source: chunks of documents, found by meaning and by BM25."""
