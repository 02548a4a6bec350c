"""The semantic source: memories found by meaning and by their words."""
