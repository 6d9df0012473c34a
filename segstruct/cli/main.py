"""The ``segstruct`` command line: its parser and entry point.

Each command is a module of this package (``report``: an object of
``compare``'s) with ``HELP``, ``FEATURES`` (whether it takes the feature
options), ``add_arguments(parser)`` and ``execute(args)``;
``COMMANDS`` lists them in the order of the help.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from segstruct.cli import (compare, detector, evaluate, features, inspect, predict, train,
                           visualize)
from segstruct.cli.common import UsageError, add_data_options
from segstruct.cli.settings import add_feature_options, resumable
from segstruct.cluster import use_scheduler
from segstruct.datasets import DatasetError
from segstruct.io.provenance import code_version

COMMANDS: dict[str, Any] = {
    "inspect": inspect, "features": features, "train": train, "evaluate": evaluate,
    "compare": compare, "report": compare.REPORT, "visualize": visualize, "predict": predict,
    "detector": detector}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command's options."""
    return _parsers()[0]


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and each command's own (whose errors show that command's usage)."""
    parser = argparse.ArgumentParser(
        prog="segstruct",
        description="Structured SVMs for MRF segmentation under IoU, F-beta and Hamming "
                    "losses (Ranjbar, Mori & Wang, ECCV 2010).")
    parser.add_argument("--version", action="version", version=f"segstruct {code_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands = {}
    for name, command in COMMANDS.items():
        p = commands[name] = sub.add_parser(name, help=command.HELP, description=command.HELP)
        add_data_options(p)
        if command.FEATURES:
            add_feature_options(p)
        command.add_arguments(p)
        p.set_defaults(func=command.execute)
    return parser, commands


def main(argv=None) -> int:
    """Run one command; its exit status (2 for a usage or input error, 130 on
    an interrupt)."""
    parser, commands = _parsers()
    args = parser.parse_args(argv)
    try:
        with use_scheduler(getattr(args, "scheduler", None)):
            return args.func(args)
    except UsageError as err:
        # the command's usage, not the list of commands
        commands[args.command].error(str(err))
    except (DatasetError, ValueError, RuntimeError, ImportError, OSError) as err:
        print(f"segstruct {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished cache entries are kept"
              + ("; continue training with --resume" if args.command == "train"
                 and resumable(args) else "")
              + ("; run the same command again to resume" if args.command == "compare"
                 else ""), file=sys.stderr)
        return 130
