"""Files: atomic writes, model files, training checkpoints and the code version
that made a result."""
