"""Asking the person at the terminal before a command destroys data."""

from __future__ import annotations

import sys


def confirmed(question: str) -> bool:
    """Whether the user typed ``yes`` to ``question``; never when no terminal can answer."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question}: ").strip().lower() == "yes"
    except EOFError:
        return False
