"""Top-down features: a part-based object detector and the shapes it votes for.

After Ranjbar, Mori & Wang (ECCV 2010), Sec. 5: a two-component
deformable-part detector per class (Felzenszwalb et al., cut down), the
average ground-truth shape under each of its filters, and per superpixel the
mean of each filter's shape votes weighted by detection confidence.

Public API::

    boxes_from_mask(mask, class_index, min_area, max_void_fraction) -> (K, 4)
    DetectorParams(...); train_detector(images, masks, class_index, params) -> Detector
        (TooFewObjects, a ValueError, when a component would get no positive)
    Detector.detect(image) -> (K, 6); .confidence_maps(image); .to_arrays();
    Detector.from_arrays(...)
    average_shapes(detector, images, masks, class_index) -> AverageShapes
    topdown_features(detector, shapes, image, superpixels) -> (N, n_components * (1 + n_parts))
    average_precision(detections, truths, ignored) -> float
"""
from segstruct.features.topdown.boxes import box_iou, boxes_from_mask, non_maximum_suppression
from segstruct.features.topdown.detector import ConfidenceMaps, Detector, DetectorParams
from segstruct.features.topdown.evaluation import average_precision, match_detections
from segstruct.features.topdown.features import n_topdown_features, topdown_features
from segstruct.features.topdown.hog import correlate, feature_pyramid, hog_map
from segstruct.features.topdown.shapes import AverageShapes, average_shapes
from segstruct.features.topdown.svm import train_linear_svm
from segstruct.features.topdown.training import TooFewObjects, train_detector

__all__ = ["boxes_from_mask", "box_iou", "non_maximum_suppression", "Detector",
           "DetectorParams", "ConfidenceMaps", "train_detector", "TooFewObjects", "average_shapes",
           "AverageShapes", "topdown_features", "n_topdown_features", "average_precision",
           "match_detections", "hog_map", "feature_pyramid", "correlate", "train_linear_svm"]
