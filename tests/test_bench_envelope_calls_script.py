"""scripts/bench_envelope_calls.py: a replay runs the oracle on every
recorded call, and its digest tells different results apart."""
import pickle

import numpy as np

from segstruct.inference.envelope import envelope_oracle
from segstruct.inference.losses import get_loss


def _calls(rng):
    calls = []
    for n in (6, 9, 14):
        edges = np.array([(i, i + 1) for i in range(n - 1)], np.int64)
        calls.append({"u": rng.normal(size=n), "edges": edges,
                      "p": -np.abs(rng.normal(size=n - 1)),
                      "t": (rng.random(n) < 0.4).astype(np.uint8), "a": np.ones(n),
                      "loss": get_loss("iou").to_dict(), "polish": True,
                      "seeds": [np.zeros(n, np.uint8)]})
    return calls


def test_a_replay_is_the_oracle_on_every_call_and_its_digest_sees_a_change(load_script,
                                                                          tmp_path):
    script = load_script("bench_envelope_calls")
    calls = _calls(np.random.default_rng(0))
    path = tmp_path / "calls.pkl"
    path.write_bytes(pickle.dumps(calls))
    row = script.measure(path)
    direct = [envelope_oracle(c["u"], c["edges"], c["p"], c["t"], c["a"], "iou",
                              seed_labellings=c["seeds"]) for c in calls]
    assert row["calls"] == 3 and row["digest"] == script.digest_of(direct)
    assert row["cuts_per_call"] == np.mean([r.info["graph_cuts"] for r in direct])
    # in a fresh process, as the script runs each checkout: the same numbers
    assert script.run_in(None, path)["digest"] == row["digest"]
    direct[1].labels = 1 - direct[1].labels
    assert script.digest_of(direct) != row["digest"]
    direct[1].labels = 1 - direct[1].labels
    direct[2].info["graph_cuts"] += 1
    assert script.digest_of(direct) != row["digest"]


def test_the_recording_run_is_the_commands_comparison(load_script, data_root, tmp_path):
    """The recording trains the Comparison that ``segstruct compare --methods
    proposed --classes CLASS --C C -j 1`` trains: the same features, training
    settings, class, method and splits (the script uses the library, so this
    pins it to the command's defaults)."""
    from segstruct.cli import build_parser
    from segstruct.cli.settings import feature_config, training_settings
    from segstruct.datasets import VOCDataset
    from segstruct.features.extraction import FeatureExtractor
    script = load_script("bench_envelope_calls")
    for C in ("1", "0.25", "auto"):
        made = script.comparison(data_root, "horse", C, tmp_path / "cache", tmp_path / "out")
        args = build_parser().parse_args(["compare", "--methods", "proposed", "--classes",
                                          "horse", "--C", C, "-j", "1", "--data",
                                          str(data_root)])
        assert made.settings == training_settings(args, args.methods)
        # the config as an extractor reads it ("auto" long side made a number)
        assert made.extractor.config == FeatureExtractor(VOCDataset(data_root),
                                                         feature_config(args)).config
        assert (made.classes, made.methods) == (["horse"], ["proposed"])
        assert (made.train_split, made.eval_split) == (args.train_split, args.eval_split)
        assert made.seed == args.seed and made.extractor.dataset.root == data_root.resolve()
