"""The parts of scripts/bench_svmperf.py (the script re-exports their names)."""
