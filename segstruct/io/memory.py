"""How much memory this process may still take: what bounds the number of
worker processes that hold large tasks (:func:`segstruct.cluster.workers_for`).

The machine's available memory (``MemAvailable`` of ``/proc/meminfo``: free
memory plus the caches the kernel can drop), and, inside a container, what
is left under its control group's limit, which ``/proc/meminfo`` does not
show (a container given a small share of a large machine sees the whole
machine's memory there).
"""
from __future__ import annotations

from pathlib import Path

#: Where Linux tells the available memory, and the control group's limit, use
#: and statistics (cgroup v2, then v1) with the name of the statistic of
#: reclaimable page cache in it.
MEMINFO = Path("/proc/meminfo")
CGROUP_FILES = ((Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current"),
                 Path("/sys/fs/cgroup/memory.stat"), "inactive_file"),
                (Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
                 Path("/sys/fs/cgroup/memory/memory.usage_in_bytes"),
                 Path("/sys/fs/cgroup/memory/memory.stat"), "total_inactive_file"))


def available_memory(meminfo: Path = MEMINFO, cgroups=CGROUP_FILES) -> int | None:
    """Bytes of memory this process can still use, or None where not known.

    Parameters
    ----------
    meminfo : path of ``/proc/meminfo`` (its ``MemAvailable`` line, in kB).
    cgroups : (limit, usage, stat, name) of the control group: its limit
        and usage files, and the statistics file with the name of its line of
        inactive page cache, which the kernel reclaims before it runs out
        (a control group's usage counts the files it has read: the feature
        cache). The first whose limit and usage read gives the room left
        under the limit ("max", or v1's 2^63 rounded to pages, is no limit).

    Returns
    -------
    int or None
        The smaller of the machine's available memory and the room under
        the control group's limit; None when neither can be read (not
        Linux, and psutil, which the ``dask`` extra installs, not there
        either: the callers then set no bound).
    """
    found = []
    machine = _meminfo_available(meminfo)
    if machine is None:
        machine = _psutil_available()
    if machine is not None:
        found.append(machine)
    for limit_file, usage_file, stat_file, cache_name in cgroups:
        try:
            limit_text = limit_file.read_text().strip()
            usage = int(usage_file.read_text().strip())
        except (OSError, ValueError):
            continue
        usage -= min(usage, _stat(stat_file, cache_name))
        if limit_text != "max":
            try:
                limit = int(limit_text)
            except ValueError:
                continue
            # cgroup v1 writes a huge number (2^63 rounded to pages) for no limit
            if limit < 2 ** 60:
                found.append(max(0, limit - usage))
        break
    return min(found) if found else None


def _stat(stat_file: Path, name: str) -> int:
    """A value of a control group's ``memory.stat`` (bytes), 0 when absent."""
    try:
        for line in stat_file.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _psutil_available() -> int | None:
    """psutil's answer where ``/proc/meminfo`` is not there (macOS, Windows)."""
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except (ImportError, AttributeError, OSError, ValueError):
        return None


def _meminfo_available(meminfo: Path) -> int | None:
    try:
        text = meminfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "MemAvailable":
            parts = value.split()
            try:
                return int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
            except (IndexError, ValueError):
                return None
    return None
