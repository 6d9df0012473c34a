"""The parts of scripts/lodo.py, one job a module (the script re-exports their names)."""
