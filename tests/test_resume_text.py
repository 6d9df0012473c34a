"""segstruct.cli.resume: a checkpoint's changed settings named by the options
that set them."""
from segstruct.cli.main import build_parser
from segstruct.cli.resume import OPTION_OF_SETTING, changes_text, option_of


def test_every_option_named_is_one_of_trains():
    options = {a for action in build_parser()._subparsers._group_actions[0].choices[
        "train"]._actions for a in action.option_strings}
    for text in OPTION_OF_SETTING.values():
        for word in text.replace("(", " ").replace(")", " ").split():
            assert word in options, word


def test_settings_are_named_by_option_and_groups_once():
    assert option_of("features.n_words") == "--words"
    assert option_of("features.detector.n_parts") == "--no-top-down"
    assert option_of("inactive_limit") is None
    text = changes_text([("C", 1.0, 0.5), ("features.sift", True, False),
                         ("features.detector.C", None, 0.01),
                         ("features.detector.n_parts", None, 6),
                         ("inactive_limit", 50, 20)])
    assert text == ("--C 1 (now 0.5), --no-sift not given (now given), --no-top-down given "
                    "(now not given), inactive_limit 50 (now 20)")
    # the detector's own settings changed, the block on both times
    assert changes_text([("features.detector.C", 0.01, 0.1)]) == (
        "--no-top-down or the settings behind it (features.detector.C 0.01, now 0.1)")
