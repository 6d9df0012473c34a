#!/usr/bin/env bash
# Train and evaluate methods on the shared real data: camvid_voc car and
# person, weizmann_horse_voc horse. Trains on train with the paper's setting
# (data-set loss scope, C = 0.5 = the paper's C = 1, count weights, IoU for
# bl2 / proposed), evaluates on val with the VOC measure, and writes models,
# training logs and JSON scores to OUT_DIR.
#   bash scripts/train_shared.sh SHARED_DATA_DIR OUT_DIR "METHODS" [extra train options...]
#   e.g. bash scripts/train_shared.sh ../shared/data runs "bl1 hamming bl2 proposed"
set -euo pipefail
shared="${1:-$(cd "$(dirname "$0")/../.." && pwd)/shared/data}"
out="${2:-runs}"
methods="${3:-bl1 bl2 proposed}"
shift $(( $# > 3 ? 3 : $# )) || true
mkdir -p "$out"
for method in $methods; do
  for pair in camvid_voc:car camvid_voc:person weizmann_horse_voc:horse; do
    data="${pair%%:*}"; cls="${pair##*:}"
    model="$out/${method}_${data}_${cls}"
    if [[ -f "$model.val.json" ]]; then continue; fi     # finished earlier
    segstruct train --data "$shared/$data" --class "$cls" --method "$method" \
        --out "$model" --max-iter 1000 -j 2 -q "$@"
    segstruct evaluate --data "$shared/$data" --split val --model "$model" \
        --json "$model.val.json" -j 2 -q
  done
done
