"""The pieces of scripts/bench_inference.py, one job per module.

- ``instances``: problems on plain arrays (random, data-set union, pixel grid,
  sampled from a data set);
- ``sources``: a data set / class with the BL1 weights its potentials come from;
- ``timing``: one timed call;
- ``cases``: the inference methods timed, and their set-up outside the timing;
- ``measure``: per-image timing and quality, the data-set scope, the pixel level;
- ``timelimit``: one proposed call in a worker process with a time limit;
- ``targets``: issue 7's targets from measured inputs;
- ``report``: summaries and Markdown tables;
- ``record``: the JSON document and the Markdown file of a run;
- ``run``: the benchmark's steps, as ``main`` calls them.

``scripts/`` is not installed: the script finds this package next to itself.
"""
