"""``results/`` holds only what the benchmark runner (``scripts/bench.py``)
makes, at today's defaults; the runner replaces a folder only when a run
has finished."""
from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    """scripts/bench.py as a module (scripts/ is not installed)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("bench_runner", ROOT / "scripts" / "bench.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def test_every_folder_of_results_is_made_by_the_runner_at_todays_defaults(bench):
    problems = bench.stale_folders(ROOT / "results")
    assert not problems, "\n".join(problems)
    entries = sorted(p.name for p in (ROOT / "results").iterdir() if not p.name.startswith("."))
    assert [n for n in entries if n not in bench.BENCHMARKS] == [], (
        "results/ holds what no benchmark of scripts/bench.py makes")


def test_each_folder_names_committed_code(bench):
    for record in sorted((ROOT / "results").glob("*/provenance.json")):
        version = json.loads(record.read_text())["code_version"]
        assert "+g" in version and not version.endswith(".dirty"), (
            f"{record} names code {version!r}: run the benchmark on a committed checkout")


def test_each_report_is_made_from_its_folders_records(bench):
    for folder in sorted((ROOT / "results").iterdir()):
        if (folder / "provenance.json").is_file():
            assert (folder / "report.md").read_text() == bench.report(folder), (
                f"{folder}/report.md is not what its records give: run "
                "`python scripts/bench.py describe`")


def test_a_folder_without_provenance_or_with_moved_defaults_is_named(bench, tmp_path):
    (tmp_path / "notes").mkdir()
    made = tmp_path / "first_run"
    made.mkdir()
    groups = bench.load("first_run").DEFAULTS
    values = bench.provenance.defaults(groups)
    record = {"benchmark": "first_run", "defaults": values,
              "defaults_digest": bench.provenance.digest(values)}
    (made / "provenance.json").write_text(json.dumps(record))
    assert bench.stale_folders(tmp_path) == [
        "results/notes: no provenance.json; every folder of results/ is made by "
        "`python scripts/bench.py NAME`"]
    # one default recorded otherwise than today's: the folder and the default are named
    values["training"]["fold_tol"] = 0.001
    record["defaults_digest"] = "0" * 64
    (made / "provenance.json").write_text(json.dumps({**record, "defaults": values}))
    problems = bench.stale_folders(tmp_path)
    assert len(problems) == 2
    assert "results/first_run: made at other defaults" in problems[0]
    assert "training.fold_tol: 0.001 -> 0.01" in problems[0]


def test_the_defaults_record_is_the_same_on_every_call(bench):
    groups = bench.provenance.GROUPS
    first = bench.provenance.defaults(groups)
    assert bench.provenance.digest(first) == bench.provenance.digest(
        bench.provenance.defaults(groups))
    text = json.dumps(first)
    assert " at 0x" not in text               # no object addresses, which change per run
    with pytest.raises(ValueError, match="unknown group"):
        bench.provenance.defaults(["colour"])


# options that say where or how a command runs, not what it computes
_RUNNING_OPTIONS = {"help", "data", "cache", "no_cache", "n_jobs", "quiet", "progress",
                    "scheduler", "out", "model", "images", "force", "resume", "no_report"}


@pytest.mark.parametrize("command", ["train", "compare", "predict"])
def test_the_recorded_command_defaults_are_the_commands(bench, command):
    """The provenance of a benchmark reads a command's defaults from the
    library (scripts do not import the command line); they must be the
    defaults its parser gives, option by option, or a moved default would go
    unseen. (The parser's table keeps, for two options sharing a destination,
    the later one's default, as the records always have.)"""
    from segstruct.cli.main import _parsers
    parser = _parsers()[1][command]
    given = {a.dest: a.default for a in parser._actions if a.dest not in _RUNNING_OPTIONS}
    plain = bench.provenance._plain
    assert plain(bench.provenance._command_defaults(command)) == plain(given)


def _fake_benchmark(fail: bool):
    module = types.ModuleType("fake")
    module.SUMMARY, module.DEFAULTS = "a fake", ()
    module.add_arguments = lambda parser: parser.add_argument("--value", default="new")

    def run(args, out):
        (out / "table.md").write_text(args.value)
        if fail:
            raise RuntimeError("interrupted")
        return {"value": args.value}
    module.run = run
    module.describe = lambda folder: (folder / "table.md").read_text()
    return module


def test_the_runner_writes_provenance_and_keeps_the_old_folder_on_failure(bench, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setitem(bench.BENCHMARKS, "fake", "fake")
    monkeypatch.setattr(bench, "load", lambda name: _fake_benchmark(fail=False))
    assert bench.main(["fake", "--results", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "fake" / "provenance.json").read_text())
    assert record["benchmark"] == "fake"
    assert record["command"] == f"python scripts/bench.py fake --results {tmp_path}"
    assert record["summary"] == {"value": "new"}
    assert {"code_version", "machine", "started", "seconds", "defaults_digest"} <= set(record)
    assert (tmp_path / "fake" / "table.md").read_text() == "new"
    assert (tmp_path / "fake" / "report.md").read_text().startswith("new\n\nMade by `python "
                                                                    "scripts/bench.py fake")
    monkeypatch.setattr(bench, "load", lambda name: _fake_benchmark(fail=True))
    with pytest.raises(RuntimeError):
        bench.main(["fake", "--results", str(tmp_path), "--value", "newer"])
    assert (tmp_path / "fake" / "table.md").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".fake.partial", "fake"]
