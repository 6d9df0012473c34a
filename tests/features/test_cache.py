import numpy as np
import pytest

from segstruct.features.cache import ArrayCache


def test_round_trip_and_keys(tmp_path):
    cache = ArrayCache(tmp_path)
    cache.save("feat", {"a": 1}, {"x": np.arange(3)})
    assert cache.load("feat", {"a": 1})["x"].tolist() == [0, 1, 2]
    assert cache.load("feat", {"a": 2}) is None
    assert cache.load("other", {"a": 1}) is None
    calls = []
    out = cache.get_or_compute("feat", {"a": 1}, lambda: calls.append(1))
    assert out["x"].tolist() == [0, 1, 2] and not calls


def test_corrupted_entry_is_recomputed_with_warning(tmp_path):
    cache = ArrayCache(tmp_path)
    cache.save("feat", {"a": 1}, {"x": np.arange(1000)})
    path = cache.path("feat", {"a": 1})
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.warns(RuntimeWarning, match="unreadable"):
        out = cache.get_or_compute("feat", {"a": 1}, lambda: {"x": np.arange(5)})
    assert out["x"].tolist() == list(range(5))
    assert cache.load("feat", {"a": 1})["x"].tolist() == list(range(5))


def test_interrupted_write_leaves_nothing(tmp_path):
    cache = ArrayCache(tmp_path)

    class Boom:
        def __array__(self, *a, **k):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.save("feat", {"a": 1}, {"x": np.arange(3), "y": Boom()})
    assert cache.load("feat", {"a": 1}) is None
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_disabled_cache_never_writes(tmp_path):
    cache = ArrayCache(tmp_path, enabled=False)
    cache.save("feat", {"a": 1}, {"x": np.arange(3)})
    assert cache.load("feat", {"a": 1}) is None and not any(tmp_path.iterdir())


def test_atomic_write_gives_the_usual_permissions(tmp_path):
    # mkstemp files are private (0600); written results must be readable by others
    import os
    from segstruct.io.files import atomic_write_bytes
    mask = os.umask(0o022)
    try:
        path = tmp_path / "r.json"
        atomic_write_bytes(path, lambda f: f.write(b"{}"))
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o644
    assert path.read_bytes() == b"{}"
