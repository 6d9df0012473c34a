"""A comparison's class models combined into one labelling per image and
scored over all 21 labels (the VOC challenge measure)."""
from __future__ import annotations

from segstruct.io.files import write_json, write_text
from segstruct.io.provenance import code_version

__all__ = ["multiclass"]


def multiclass(comparison) -> dict:
    """Each method's class models combined into one labelling per image
    (``segstruct.predict``: per superpixel the class with the largest positive
    max-marginal difference, else background), scored on the evaluation split
    over all 21 labels, beside each class model scored alone.

    Writes ``DIR/multiclass.json`` and ``DIR/multiclass.md``; returns the JSON
    document.
    """
    from segstruct.datasets.voc import VOC_CLASSES
    from segstruct.predict import COMBINATION, multiclass_confusion
    from segstruct.report.tables import comparison_multiclass_markdown
    from segstruct.segmentation_model import SegmentationModel
    c = comparison
    classes, ids = c.compared_classes, c.dataset.ids(c.eval_split)
    combined, alone = {}, {}
    for method in c.methods:
        models = [SegmentationModel.load(c.store.model_path(k, method)) for k in classes]
        combined[method] = multiclass_confusion(models, c.extractor, ids).to_dict()
        alone[method] = {k: c.store.load(k, method)["eval_score"]["voc_iou_percent"]
                         for k in classes}
    # the labels of the table: background, the compared classes, and any
    # other label present in the masks (never predicted: IoU 0)
    shown = [name for name in VOC_CLASSES
             if name == "background" or name in classes
             or any(combined[m]["iou_percent"][name] is not None for m in c.methods)]
    doc = {"format": "segstruct-multiclass", "format_version": 1,
           "dataset": c.dataset.name, "data_root": str(c.dataset.root),
           "train_split": c.train_split, "eval_split": c.eval_split,
           "classes": classes, "methods": c.methods, "combination": COMBINATION,
           "settings": c.settings.to_dict(), "features": c.extractor.config.to_dict(),
           "code_version": code_version(), "multiclass": combined,
           "alone_voc_iou_percent": alone}
    write_json(c.out_dir / "multiclass.json", doc)
    write_text(c.out_dir / "multiclass.md",
               comparison_multiclass_markdown(doc, shown, c.caption()))
    return doc
