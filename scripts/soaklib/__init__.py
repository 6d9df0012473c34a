"""The parts of scripts/soak.py, one job a module (the script re-exports their names)."""
