#!/usr/bin/env bash
# The runs behind the README's results: bl1, bl2 and proposed (IoU) on the
# shared real data, camvid_voc (car, person) and weizmann_horse_voc (horse),
# trained on train and scored on val with the VOC measure, for one loss scope.
#   bash scripts/compare_shared.sh SHARED_DATA_DIR OUT_DIR SCOPE [extra compare options...]
#   e.g. bash scripts/compare_shared.sh ../shared/data runs dataset
#        bash scripts/compare_shared.sh ../shared/data runs image --max-iter 40 --lp-solver lp
# Writes OUT_DIR/<data set>-<scope>/ (results.json, table.md, table.csv, models,
# figures). Resumable: run it again and finished (class, method) pairs are kept.
set -euo pipefail
shared="${1:?give the shared data folder}"
out="${2:?give an output folder}"
scope="${3:?give the loss scope: dataset or image}"
shift 3
for pair in "camvid_voc:car person" "weizmann_horse_voc:horse"; do
  data="${pair%%:*}"; classes="${pair##*:}"
  # shellcheck disable=SC2086
  segstruct compare --data "$shared/$data" --classes $classes \
      --methods bl1 bl2 proposed --scope "$scope" --out "$out/$data-$scope" -q "$@"
done
