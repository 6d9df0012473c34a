"""``train --resume``: a checkpoint made with other settings, said in options.

A checkpoint records the estimator's parameters and the training data's
settings by their names in the library (``C``, ``features.n_words``); a
user of the command line gave them as options (``--C``, ``--words``).
"""
from __future__ import annotations

from segstruct.io.checkpoint import CheckpointError

#: The option that sets each recorded setting, by dotted name or by the
#: prefix of a group of them (the longest prefix that matches counts).
OPTION_OF_SETTING = {
    "C": "--C", "C_units": "--C-units", "tol": "--tol", "solver": "--solver",
    "scope": "--scope", "node_weights": "--node-weights", "loss": "--loss (--beta)",
    "kappa": "--method", "pairwise": "--method", "oracle": "--inference",
    "class": "--class", "split": "--split",
    "features.superpixels.method": "--superpixels",
    "features.superpixels.scale": "--fz-scale",
    "features.superpixels.min_size": "--fz-min-size",
    "features.superpixels.n_segments": "--slic-segments",
    "features.superpixels.compactness": "--slic-compactness",
    "features.superpixels.sigma": "--slic-sigma (--fz-sigma)",
    "features.sift": "--no-sift", "features.colour": "--no-colour",
    "features.position": "--no-position", "features.bias": "--no-bias",
    "features.n_words": "--words", "features.codebook_descriptors": "--codebook-descriptors",
    "features.seed": "--seed", "features.sift_norm": "--sift-norm",
    "features.detector": "--no-top-down", "features.top_down_folds": "--top-down-folds",
    "features.top_down_detector": "--top-down-detector",
    "features.long_side": "--long-side", "features.upsampling": "--upsampling",
}


def option_of(name: str) -> str | None:
    """The option of a recorded setting (``features.detector.n_parts`` ->
    ``--no-top-down``), or None for one no option sets."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        option = OPTION_OF_SETTING.get(".".join(parts[:end]))
        if option is not None:
            return option
    return None


def _value(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return "none" if v is None else str(v)


def changes_text(changes) -> str:
    """``--C 1 (now 0.5), --no-sift given (now not given), ...``: each
    change of ``CheckpointError.changes`` by its option; one that no option
    sets by its name; a group's settings (the detector's) once per option."""
    said, out = set(), []
    for name, old, new in changes:
        option = option_of(name)
        if option is None:
            out.append(f"{name} {_value(old)} (now {_value(new)})")
        elif option.startswith("--no-") and isinstance(old, bool) and isinstance(new, bool):
            out.append(f"{option} {'not given' if old else 'given'} "
                       f"(now {'not given' if new else 'given'})")
        elif name in OPTION_OF_SETTING:
            out.append(f"{option} {_value(old)} (now {_value(new)})")
        elif option not in said:      # a group: the option that switches it, once
            if option.startswith("--no-") and (old is None) != (new is None):
                out.append(f"{option} {'given' if old is None else 'not given'} "
                           f"(now {'given' if new is None else 'not given'})")
            else:
                out.append(f"{option} or the settings behind it ({name} {_value(old)}, "
                           f"now {_value(new)})")
        said.add(option)
    return ", ".join(out)


def resume_error(err: CheckpointError, checkpoint) -> str | None:
    """The message of a refused ``--resume`` in options, or None when the
    error names no setting (another reason, said as it is)."""
    if not err.changes:
        return None
    return (f"--resume: the checkpoint {checkpoint} was made with other settings: "
            f"{changes_text(err.changes)}; give those to continue it, or delete it (or give "
            "another --out) to start again")
