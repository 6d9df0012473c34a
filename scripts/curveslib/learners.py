"""The learners the curves compare: their order, names and the targets the
table times."""

#: The learners, in the order they run and are shown.
LEARNERS = ("nslack", "oneslack", "subgradient", "sgd", "bcfw")
CUTTING_PLANES = ("nslack", "oneslack")
LABELS = {"nslack": "cutting planes, n-slack", "oneslack": "cutting planes, 1-slack",
          "subgradient": "subgradient descent (best iterate)",
          "sgd": "SGD (weighted average)", "bcfw": "BCFW"}
#: Relative distances to F* the table reports the time to reach.
TARGETS = (1e-2, 1e-3)
