"""Train several methods on several classes and compare them by VOC IoU.

This is the experiment of the paper's Table 1: every (class, method) pair is
trained on one split with the same features and hyper-parameters, scored on
another split with the VOC measure, and summarised as a table (rows classes,
columns methods, plus the mean row).

Layout of an output folder ``DIR``::

    DIR/runs/<class>-<method>.json      one record per finished pair (resume)
    DIR/models/<class>-<method>.*       the trained model and its training log (and,
                                        while training, its checkpoint)
    DIR/results.json                    every record plus the table
    DIR/table.md, DIR/table.csv         the table
    DIR/figures/*.png                   training curves, qualitative grids,
                                        loss surfaces
    DIR/report.html                     the table, figures and a gallery of every
                                        method's masks, one self-contained page

With ``--C auto``, ``DIR/models/<class>-<method>.cv.json`` holds the pair's
cross-validation curve from the end of its cross-validation until its record
is written. A pair whose record exists is not trained again, a pair whose
curve is saved is not cross-validated again, and a pair interrupted
mid-training continues from its checkpoint; a record made with other
settings (or, with the top-down block, another detector) is an error rather
than silently mixed into the table.

With the top-down block, every class's detector is trained (or read from the
cache) before any pair: a class with too few objects for a detector stops the
run at once, or, with ``skip_few_objects``, is left out of the table with
the reason.

Modules: ``store`` (the records and models of the folder), ``planner``
(which classes can be compared and which pairs are still to train),
``comparison`` (:class:`Comparison`: training and scoring the pairs),
``choosing`` (``--C auto``: every pair's folds cross-validated at once),
``figures`` and ``multiclass`` (what is drawn and scored from the models),
``report`` (report.html, rebuilt by ``segstruct report DIR``).
"""
from segstruct.compare.comparison import RESULTS_FORMAT, Comparison
from segstruct.compare.figures import FIGURE_IMAGES, pick_images, save_qualitative
from segstruct.compare.planner import EVAL_SPLIT, METHODS_COMPARED, TRAIN_SPLIT, classes_in

__all__ = ["EVAL_SPLIT", "FIGURE_IMAGES", "METHODS_COMPARED", "RESULTS_FORMAT", "TRAIN_SPLIT",
           "Comparison", "classes_in", "pick_images", "save_qualitative"]
