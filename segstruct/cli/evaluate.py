"""``segstruct evaluate``: score saved models on a split with the VOC measure."""
from __future__ import annotations

from pathlib import Path

from segstruct.cli.common import (UsageError, add_ensemble_option, add_other_data_option,
                                  check_model_data, class_models, ensemble_configs, load_models,
                                  model_detectors, open_dataset, refuse_overwriting)
from segstruct.cli.settings import make_extractor
from segstruct.datasets.voc import VOID_LABEL
from segstruct.ensemble import ensemble_record
from segstruct.evaluate.intervals import comparison_intervals
from segstruct.evaluate.records import evaluation_record, multiclass_record
from segstruct.evaluate.scoring import VOCScore, pixel_confusion
from segstruct.io.files import write_json
from segstruct.io.text import count
from segstruct.learn.methods import FIT_SPREAD_POINTS
from segstruct.report.intervals import difference_text
from segstruct.report.tables import fmt, multiclass_markdown

HELP = "score a saved model on a split with the VOC measure"
FEATURES = False


def add_arguments(p) -> None:
    p.add_argument("--model", nargs="+", action="extend", required=True, type=Path,
                   metavar="MODEL",
                   help="the model to score: the MODEL of train --out, or "
                        "DIR/models/<class>-<method> of compare (reads MODEL.json and "
                        "MODEL.npz; the features are computed as the model says); several "
                        "models of one class are compared: each one's 95 %% interval and "
                        "each difference from the first, paired image by image; with "
                        "--multiclass, one model per class")
    p.add_argument("--multiclass", action="store_true",
                   help="label each image with all the models at once (each superpixel: "
                        "the class whose model is surest, by max-marginals, or "
                        "background) and report the VOC challenge measure: IoU per label "
                        "over all 21, void ignored, and their mean, beside each model "
                        "scored alone")
    p.add_argument("--split", default="val", help="split to score (default %(default)s)")
    add_other_data_option(p)
    add_ensemble_option(p, "score the masks of predict: label")
    p.add_argument("--json", type=Path,
                   help="also write the scores, with each image's TP, FP and FN, as JSON "
                        "here (default: not written)")


def execute(args) -> int:
    if args.multiclass:
        return _multiclass(args)
    refuse_overwriting(args.json, args.model)
    models = load_models(args.model)          # refuses a --model given twice
    classes = {model.class_name for model in models}
    if len(classes) > 1:
        raise UsageError(f"the models segment different classes ({', '.join(sorted(classes))}): "
                         "add --multiclass to score them together (one per class), or "
                         "compare models of one class")
    dataset = open_dataset(args)
    scored = [_score(args, dataset, model, path) for model, path in zip(models, args.model)]
    names = [str(path) for path in args.model]
    counts = {}
    for name, (model, _, voc, configs) in zip(names, scored):
        score = voc.to_dict()
        counts[name] = voc.per_image
        doc = model.doc
        print(f"{doc['method']} model {name} ({doc['class']}, trained on "
              f"{doc['dataset']}/{doc['train_split']}) on {dataset.name}/{args.split}"
              f"{f', ensemble of {len(configs)}' if len(configs) > 1 else ''}: "
              f"VOC IoU {fmt(score['voc_iou_percent'], '.2f')} % "
              f"(precision {fmt(score['precision_percent'], '.1f')}, "
              f"recall {fmt(score['recall_percent'], '.1f')}, "
              f"F1 {fmt(score['f1_percent'], '.1f')}, "
              f"mean per-image IoU {fmt(score['mean_image_iou_percent'], '.1f')})")
    first_ids = scored[0][1]
    if any(ids != first_ids for _, ids, _, _ in scored[1:]):
        raise UsageError("the models were scored on different images of the split (their "
                         "features differ in what they keep); compare them one by one")
    class_name = scored[0][0].class_name
    intervals = comparison_intervals({class_name: counts}, {class_name: first_ids},
                                     reference=names[0], spread=FIT_SPREAD_POINTS)
    _say_intervals(intervals, class_name, names, args.split)
    if args.json:
        records = []
        for path, (model, ids, voc, configs) in zip(args.model, scored):
            record = evaluation_record(dataset, args.split, path, model.doc, voc.to_dict(),
                                       ids, voc.per_image)
            record["ensemble"] = ensemble_record([c.superpixels for c in configs])
            records.append(record)
        doc = records[0] if len(records) == 1 else {
            "format": "segstruct-evaluations", "format_version": 1, "models": names,
            "evaluations": records}
        doc["intervals"] = intervals
        write_json(args.json, doc)
        print(f"wrote {args.json}")
    return 0


def _score(args, dataset, model, path: Path):
    """(model, image ids, VOCScore, feature configs) of one saved model (read
    from ``path``) on the split."""
    doc = model.doc
    check_model_data(args, dataset, [path], [doc])
    configs = ensemble_configs(args, model.config)
    extractor, *variants = [make_extractor(args, dataset, c, model.codebook,
                                           model_detectors([model])) for c in configs]
    if variants:
        ids, voc = _ensemble_score(model, dataset, args.split, extractor, variants)
    else:
        examples = extractor.examples(args.split, doc["class"])
        ids = [ex.graph.image_id for ex in examples]
        voc = model.estimator.voc_score([ex.graph for ex in examples],
                                        [ex.pixel_counts for ex in examples])
    return model, ids, voc, configs


def _say_intervals(intervals: dict, class_name: str, names, split: str) -> None:
    """Each model's 95 % interval and, with several, each difference from the
    first with its verdict."""
    spans = intervals["iou_percent"].get(class_name, {})
    for name in names:
        if name in spans:
            low, high = spans[name]
            print(f"  {name}: {100 * intervals['confidence']:g} % interval [{low:.1f}, {high:.1f}] "
                  f"(image bootstrap of {split}, {intervals['n_resamples']} resamples)")
    for name, d in intervals["difference"].get(class_name, {}).items():
        print(f"  {name} - {names[0]}: {difference_text(d['difference'], d['interval'])} "
              f"points (paired): {d['verdict']}")


def _ensemble_score(model, dataset, split: str, extractor, variants):
    """(image ids, VOCScore) of the model's ensemble masks on a split, by pixels."""
    from segstruct.predict import label_images
    ids = dataset.ids(split)
    voc = VOCScore()
    for image_id, labels in label_images([model], extractor, ids, variants=variants):
        truth = dataset.read_mask(image_id)
        voc.add(*pixel_confusion(labels == model.label, truth == model.label,
                                 truth == VOID_LABEL))
    return ids, voc


def _multiclass(args) -> int:
    """evaluate --multiclass: the models' combined labels scored on all 21 labels,
    beside each model scored alone."""
    from segstruct.predict import COMBINATION, multiclass_confusion
    refuse_overwriting(args.json, args.model)
    models, detectors = class_models(args.model)
    dataset = open_dataset(args)
    check_model_data(args, dataset, args.model, [m.doc for m in models])
    configs = ensemble_configs(args, models[0].config)
    extractor, *variants = [make_extractor(args, dataset, c, models[0].codebook, detectors)
                            for c in configs]
    ids = dataset.ids(args.split)
    scores = multiclass_confusion(models, extractor, ids, variants=variants).to_dict()
    alone = {}
    for m in models:           # each class model scored alone, as evaluate does
        if variants:
            alone[m.class_name] = _ensemble_score(m, dataset, args.split, extractor,
                                                  variants)[1].to_dict()
            continue
        examples = extractor.examples(args.split, m.class_name)
        alone[m.class_name] = m.estimator.voc_score(
            [ex.graph for ex in examples], [ex.pixel_counts for ex in examples]).to_dict()
    print(f"{count(len(models), 'class model')} on {dataset.name}/{args.split} "
          f"({count(len(ids), 'image')}"
          f"{f', ensemble of {len(configs)}' if variants else ''}), VOC IoU % per label:")
    print(multiclass_markdown(scores, alone))
    if args.json:
        record = multiclass_record(dataset, args.split, models, COMBINATION, scores, alone)
        record["ensemble"] = ensemble_record([c.superpixels for c in configs])
        write_json(args.json, record)
        print(f"wrote {args.json}")
    return 0
