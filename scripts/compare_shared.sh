#!/usr/bin/env bash
# The README's cross-validated results: bl1, bl2 and proposed (IoU) with C chosen
# per method and class by 3-fold cross-validation on the training split
# (--C auto), on the main class of each shared data set, scored on val.
#   bash scripts/compare_shared.sh SHARED_DATA_DIR OUT_DIR [extra compare options...]
#   e.g. bash scripts/compare_shared.sh ../shared/data out/compare --C-grid 0.05 0.5 5
# Writes OUT_DIR/<data set>-Cauto/ (results.json, table.md, table.csv, models,
# figures). Resumable: run it again and finished (class, method) pairs are kept.
set -euo pipefail
shared="${1:?give the shared data folder}"
out="${2:?give an output folder}"
shift 2
for pair in "weizmann_horse_voc:horse" "pennfudan_voc:person" "camvid_voc:car" \
            "coco128panoptic_voc:person"; do
  data="${pair%%:*}"; classes="${pair##*:}"
  # shellcheck disable=SC2086
  # --no-top-down: these results are of the bottom-up features (made before the
  # top-down block was on by default)
  segstruct compare --data "$shared/$data" --classes $classes --C auto --no-top-down \
      --out "$out/$data-Cauto" -q "$@"
done
