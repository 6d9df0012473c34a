"""The parts of scripts/learner_curves.py (the script re-exports their names)."""
