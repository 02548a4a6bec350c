"""How much memory the embedded server's buffer cache gets, and PostgreSQL memory sizes."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from retrieval.errors import ConfigurationError

# shared_buffers chosen when none is given: a quarter of the memory, within these bounds (MB).
_SMALLEST_AUTO_BUFFERS_MB = 128  # PostgreSQL's default
_LARGEST_AUTO_BUFFERS_MB = 2048
_MEMORY_SIZE = re.compile(r"^([1-9][0-9]*)(kB|MB|GB|TB)$")
_KILOBYTES = {"kB": 1, "MB": 1024, "GB": 1024**2, "TB": 1024**3}


def auto_shared_buffers(memory_bytes: int | None) -> str:
    """``shared_buffers`` for a machine with ``memory_bytes`` of memory (``None``: unknown).

    A quarter of the memory (PostgreSQL's advice for a server of its own), at least PostgreSQL's
    default 128 MB and at most 2 GB, since the embedded server shares the machine with its
    callers. Shared memory is touched only as pages are read, so an idle server costs little.
    """
    if memory_bytes is None:
        return f"{_SMALLEST_AUTO_BUFFERS_MB}MB"
    quarter_mb = memory_bytes // 4 // 1024**2
    return f"{min(max(quarter_mb, _SMALLEST_AUTO_BUFFERS_MB), _LARGEST_AUTO_BUFFERS_MB)}MB"


def physical_memory(
    cgroup_root: Path = Path("/sys/fs/cgroup"), own_cgroups: Path = Path("/proc/self/cgroup")
) -> int | None:
    """The memory this process may use, in bytes: the machine's, or its control group's limit
    when lower (a container's, which the machine's figure ignores); ``None`` where the system
    does not say."""
    try:
        machine: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        machine = None
    limits = [limit for limit in _cgroup_limits(cgroup_root, own_cgroups) if limit > 0]
    if machine is not None:
        limits.append(machine)
    return min(limits) if limits else None


# Above this a cgroup memory limit means "none" (v1 writes the largest page-aligned int64).
_NO_CGROUP_LIMIT = 1 << 60


def _cgroup_limits(root: Path, own_cgroups: Path) -> list[int]:
    # cgroup v2 (memory.max) and v1 (memory/memory.limit_in_bytes), at the hierarchy's root
    # (what a container sees of its own group) and at this process's group.
    paths = {"": ["/"], "memory": ["/"]}
    with contextlib.suppress(OSError):
        for line in own_cgroups.read_text().splitlines():
            fields = line.split(":", 2)
            if len(fields) != 3:
                continue
            _, controllers, path = fields
            if controllers == "":
                paths[""].append(path)
            elif "memory" in controllers.split(","):
                paths["memory"].append(path)
    files = [root / p.lstrip("/") / "memory.max" for p in paths[""]]
    files += [root / "memory" / p.lstrip("/") / "memory.limit_in_bytes" for p in paths["memory"]]
    limits = []
    for file in files:
        with contextlib.suppress(OSError, ValueError):
            value = int(file.read_text().strip())  # "max" (no limit) is a ValueError
            if value < _NO_CGROUP_LIMIT:
                limits.append(value)
    return limits


def memory_size_kb(size: str, name: str = "shared_buffers") -> int:
    """Kilobytes of a PostgreSQL memory size (``"128MB"``, ``"2GB"``); a clear error naming
    ``name`` otherwise."""
    match = _MEMORY_SIZE.match(size)
    if match is None or int(match.group(1)) * _KILOBYTES[match.group(2)] < 128:
        raise ConfigurationError(
            f"{name}={size!r} is not a PostgreSQL memory size of at least 128kB: write a "
            "whole number and a unit without a space, such as 512MB or 2GB"
        )
    return int(match.group(1)) * _KILOBYTES[match.group(2)]
