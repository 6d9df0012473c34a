"""The solvers inside the learners, each on the learner's problem:

- the cutting planes (``cutting_planes``) and their working-set QP
  (``qp``, ``active_set``, ``linesearch``), with the loss-augmented
  inference of the examples on worker processes (``workers``);
- the first-order loops (``first_order``: subgradient, SGD, the
  perceptron; ``bcfw``: block-coordinate Frank-Wolfe);
- the Lovász hinge's cutting planes and SGD (``lovasz_hinge``);
- L-BFGS-B on the Fenchel-Young loss of a projection (``fenchel_young``)
  and on the likelihood (``likelihood``).
"""
