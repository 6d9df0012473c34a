"""The ``segstruct`` command line.

Commands: ``inspect`` (check a data root and summarise it), ``features``
(extract and cache features), ``train``, ``evaluate``, ``compare``,
``report`` (a comparison's report.html again: in ``compare``'s module),
``visualize``, ``predict`` and ``detector``, one module each; ``settings``
maps their options to ``FeatureConfig`` and ``TrainingSettings``; ``main``
holds the parser and the entry point.
"""
from segstruct.cli.common import UsageError, show_progress
from segstruct.cli.main import build_parser, main

__all__ = ["UsageError", "build_parser", "main", "show_progress"]
