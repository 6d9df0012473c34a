"""The soak's runs: each run's segstruct method and proposed's solver."""

# run name -> (segstruct method, proposed's lp solver or None = the library default)
RUNS = {
    "bl1": ("bl1", None),
    "hamming": ("hamming", None),
    "bl2": ("bl2", None),
    "proposed": ("proposed", None),
    "proposed-decomposition": ("proposed", "decomposition"),
}
