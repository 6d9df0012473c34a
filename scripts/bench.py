"""The benchmark runner: every folder of ``results/`` is made by one entry here.

    python scripts/bench.py list                 # the benchmarks, and what each measures
    python scripts/bench.py first_run            # run one into results/first_run/
    python scripts/bench.py first_run --help     # its options
    python scripts/bench.py check                # is every folder of results/ current?
    python scripts/bench.py describe             # rewrite each folder's report.md

A run writes into a fresh folder beside the old one and replaces the old only
when it has finished, so an interrupted or failed run leaves the last
results as they were. Beside the benchmark's own tables, figures and records
it writes ``provenance.json``: the command, the code version (the git commit,
``.dirty`` for a modified working tree), the machine, the date, the run's
seconds, and the library defaults the numbers depend on; and ``report.md``,
the benchmark's tables in Markdown with that provenance, which the
documentation's results page includes. ``check`` (and the
test suite) compares those defaults with today's and names each one that
changed since the folder was made.

Run it from the repository root, with segstruct installed (``pip install -e
.`` keeps the code version that of the checkout).
"""
from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from benchmarks import BENCHMARKS, load  # noqa: E402
from benchmarks import provenance  # noqa: E402

RESULTS = REPO / "results"


def stale_folders(results: Path = RESULTS) -> list[str]:
    """One line per folder of ``results`` that no benchmark made, or whose
    defaults changed since; empty when every folder is current."""
    problems = []
    for folder in sorted(p for p in results.iterdir() if p.is_dir()) if results.is_dir() else []:
        if folder.name.startswith("."):
            continue
        record_path = folder / "provenance.json"
        if not record_path.is_file():
            problems.append(f"results/{folder.name}: no provenance.json; every folder of "
                            "results/ is made by `python scripts/bench.py NAME`")
            continue
        record = json.loads(record_path.read_text())
        name = record.get("benchmark")
        if name != folder.name or name not in BENCHMARKS:
            problems.append(f"results/{folder.name}: made by benchmark {name!r}, which is not "
                            f"the runner's entry of that name ({', '.join(BENCHMARKS)})")
            continue
        groups = load(name).DEFAULTS
        current = provenance.defaults(groups)
        if provenance.digest(current) != record.get("defaults_digest"):
            moved = provenance.changed_defaults(record.get("defaults", {}), current)
            problems.append(f"results/{folder.name}: made at other defaults; run `python "
                            f"scripts/bench.py {name}` again. Changed: " + "; ".join(moved))
    return problems


def provenance_line(record: dict) -> str:
    """One Markdown sentence naming what made a folder."""
    m = record["machine"]
    cores = m.get("cores_available") or m.get("cpu_count")
    return (f"Made by `{record['command']}` at code `{record['code_version']}`, "
            f"{record['started'][:10]}, in {record['seconds']:.0f} s on {cores} cores "
            f"({m.get('cpu_model') or m.get('processor')}, {m.get('memory_gib')} GiB, "
            f"Python {record['python']}).")


def report(folder: Path) -> str:
    """``report.md`` of a benchmark's folder: what its module makes of its
    records (``describe``), then where they came from. Derived from the
    files alone, so ``describe`` can make it again at any time."""
    record = json.loads((folder / "provenance.json").read_text())
    return load(record["benchmark"]).describe(folder).rstrip() + "\n\n" + \
        provenance_line(record) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] == "list":
        for name in BENCHMARKS:
            print(f"{name:12s} {load(name).SUMMARY}")
        return 0
    if argv[0] == "describe":
        for folder in sorted(p for p in RESULTS.iterdir() if (p / "provenance.json").is_file()):
            (folder / "report.md").write_text(report(folder))
            print(f"wrote {folder / 'report.md'}")
        return 0
    if argv[0] == "check":
        problems = stale_folders()
        print("\n".join(problems) if problems else "every folder of results/ is current")
        return 1 if problems else 0
    name, rest = argv[0], argv[1:]
    module = load(name)
    parser = argparse.ArgumentParser(prog=f"python scripts/bench.py {name}",
                                     description=module.SUMMARY)
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="the folder that gets NAME/ (default: the repository's results/)")
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    from segstruct.io.provenance import code_version
    if code_version().endswith(".dirty"):
        print(f"warning: the working tree has uncommitted changes, so results/{name} will name "
              f"code no commit holds ({code_version()}); commit first, and the tests refuse "
              "such a folder", file=sys.stderr)
    target = args.results / name
    work = args.results / f".{name}.partial"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    try:
        summary = module.run(args, work)
    except BaseException:
        print(f"benchmark {name} did not finish; results/{name} is left as it was "
              f"(the partial output is in {work})", file=sys.stderr)
        raise
    seconds = time.perf_counter() - t0
    record = provenance.record(name, argv, module.DEFAULTS, started, seconds, summary)
    (work / "provenance.json").write_text(json.dumps(record, indent=1) + "\n")
    (work / "report.md").write_text(report(work))
    old = args.results / f".{name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    work.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    print(f"wrote {target} in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
