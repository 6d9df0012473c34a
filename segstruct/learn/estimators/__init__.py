"""The learners: what ``fit`` trains, one public class each.

:class:`~segstruct.learn.estimators.base.BaseSSVM` declares what they
share (the joint feature map's prediction, the VOC measure, and the
hyper-parameters C, C_units, scope, node_weights, pairwise, tol and
max_iter); each sibling adds its own parameters and its ``fit``, which
calls a solver of :mod:`segstruct.learn.solvers`:

- ``structured_svm``: :class:`StructuredSVM`, cutting planes (n-slack,
  1-slack) on loss-augmented inference by an oracle;
- ``first_order_svm``: :class:`FirstOrderSVM`, subgradient, SGD, BCFW and
  the perceptron on the same objective;
- ``lovasz_svm``: :class:`LovaszSVM`, the Lovász hinge of IoU;
- ``projection_svm``: :class:`ProjectionSVM`, a projection's
  Fenchel-Young loss;
- ``crf``: :class:`CRF`, the likelihood;
- ``multivariate_svm``: :class:`MultivariateSVM`, SVM-perf on flat
  vectors (not a segmentation learner).
"""
