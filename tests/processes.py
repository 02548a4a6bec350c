"""Talking to a worker process over its standard streams, with a deadline."""

from __future__ import annotations

import select
import subprocess


def read_line(process: subprocess.Popen[str], timeout: float, silence: str) -> str:
    """The worker's next line; if none comes within ``timeout`` seconds, kill it and fail with
    ``silence`` and the end of its standard error."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline() if ready else ""
    if not line:
        process.kill()
        stderr = process.stderr.read() if process.stderr else ""
        raise AssertionError(f"{silence}: {stderr[-3000:]}")
    return line.strip()
