"""Embedding models, the cache of their vectors, and each model's distance calibration."""
