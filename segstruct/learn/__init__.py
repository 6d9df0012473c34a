"""Learning: the learners and what they run, in three rooms.

- ``estimators/``: the public learners (what ``fit`` trains);
  ``estimators.base`` declares the hyper-parameters they share;
- ``solvers/``: the algorithms inside them (cutting planes and their QP,
  the first-order loops, the Lovász hinge, L-BFGS-B);
- ``selection/``: the choice of C by cross-validation;

and beside them ``methods`` (the named methods: each one's loss, learner and
step), ``callbacks`` (what a training run writes and shows), ``_problem``
(the problem every learner shares) and ``_params`` (the estimator protocol).
"""
