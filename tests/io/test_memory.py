"""segstruct.io.memory: the machine's available memory, and the room left
under a control group's limit, read from files as Linux writes them."""
from segstruct.io.memory import available_memory

MEMINFO = "MemTotal:       32000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n"


def _cgroup(folder, limit, usage, inactive=None, stat_name="inactive_file"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "limit").write_text(f"{limit}\n")
    (folder / "usage").write_text(f"{usage}\n")
    stat = "anon 100\n" + (f"{stat_name} {inactive}\n" if inactive is not None else "")
    (folder / "stat").write_text(stat)
    return (folder / "limit", folder / "usage", folder / "stat", stat_name)


def test_the_machines_available_memory_without_a_control_group(tmp_path):
    (tmp_path / "meminfo").write_text(MEMINFO)
    missing = _cgroup(tmp_path / "v2", "max", 5)[:2] + (tmp_path / "none", "inactive_file")
    assert available_memory(tmp_path / "meminfo", ()) == 20000000 * 1024
    # "max" is no limit, and neither is cgroup v1's 2^63 rounded to pages
    assert available_memory(tmp_path / "meminfo", (missing,)) == 20000000 * 1024
    v1 = _cgroup(tmp_path / "v1", 9223372036854771712, 4 * 2 ** 30, 0, "total_inactive_file")
    assert available_memory(tmp_path / "meminfo", (v1,)) == 20000000 * 1024


def test_a_containers_limit_bounds_it_less_its_reclaimable_cache(tmp_path):
    (tmp_path / "meminfo").write_text(MEMINFO)
    gib = 2 ** 30
    # 8 GiB limit, 6 GiB used of which 3 GiB inactive page cache: 5 GiB of room
    v2 = _cgroup(tmp_path / "v2", 8 * gib, 6 * gib, 3 * gib)
    assert available_memory(tmp_path / "meminfo", (v2,)) == 5 * gib
    # the first control group that reads is the one
    v1 = _cgroup(tmp_path / "v1", 4 * gib, 1 * gib, 0, "total_inactive_file")
    assert available_memory(tmp_path / "meminfo", (v2, v1)) == 5 * gib
    assert available_memory(tmp_path / "meminfo", (v1, v2)) == 3 * gib
    # used beyond the limit: no room, not a negative number
    full = _cgroup(tmp_path / "full", gib, 2 * gib)
    assert available_memory(tmp_path / "meminfo", (full,)) == 0
    # without /proc/meminfo the control group alone
    assert available_memory(tmp_path / "nothing", (v2,)) == 5 * gib


def test_unknown_where_nothing_reads(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "psutil", None)        # as without the dask extra
    (tmp_path / "meminfo").write_text("MemTotal: 1 kB\n")       # no MemAvailable line
    assert available_memory(tmp_path / "meminfo", ()) is None
    assert available_memory(tmp_path / "absent", ()) is None
    bad = _cgroup(tmp_path / "bad", "lots", 5)
    assert available_memory(tmp_path / "absent", (bad,)) is None


def test_psutil_answers_where_there_is_no_proc_meminfo(tmp_path, monkeypatch):
    import sys
    import types
    fake = types.ModuleType("psutil")
    fake.virtual_memory = lambda: types.SimpleNamespace(available=123456789)
    monkeypatch.setitem(sys.modules, "psutil", fake)
    assert available_memory(tmp_path / "absent", ()) == 123456789
    # /proc/meminfo, where it reads, comes first
    (tmp_path / "meminfo").write_text(MEMINFO)
    assert available_memory(tmp_path / "meminfo", ()) == 20000000 * 1024
    monkeypatch.setitem(sys.modules, "psutil", None)       # not installed
    assert available_memory(tmp_path / "absent", ()) is None
