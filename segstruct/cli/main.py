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
from segstruct.io.stopping import Stopped, stop_on_signals, stop_workers
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
    """Run one command; its exit status (2 for a usage or input error; on
    SIGINT or SIGTERM 128 + the signal's number: 130, 143).

    SIGTERM, like SIGINT (Ctrl-C), stops the command cleanly: the files
    being written are finished or removed, every worker process ends, and
    the message says how to go on (:mod:`segstruct.io.stopping`).
    """
    parser, commands = _parsers()
    args = parser.parse_args(argv)
    with stop_on_signals():
        try:
            with use_scheduler(getattr(args, "scheduler", None)):
                return args.func(args)
        except UsageError as err:
            # the command's usage, not the list of commands
            commands[args.command].error(str(err))
        except (DatasetError, ValueError, RuntimeError, ImportError, OSError) as err:
            print(f"segstruct {args.command}: error: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as err:
            # Ctrl-C, or a signal turned into Stopped: no worker outlives the command
            stop_workers()
            print(stop_message(args, err), file=sys.stderr)
            return err.exit_status if isinstance(err, Stopped) else 130


def stop_message(args, err: KeyboardInterrupt) -> str:
    """What a stopped command says: what stopped it, what is kept, how to go on."""
    how = f"stopped by {err.name}" if isinstance(err, Stopped) else "interrupted"
    if args.command == "compare":
        return (f"segstruct compare: {how}; finished pairs and checkpoints are kept: run "
                "the same command again to go on from them")
    if args.command == "train" and resumable(args):
        return (f"segstruct train: {how}; its checkpoint and finished cache entries are "
                "kept: run the same command with --resume to go on")
    return (f"segstruct {args.command}: {how}; finished cache entries are kept: run the same "
            "command again to go on")
