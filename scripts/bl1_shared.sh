#!/usr/bin/env bash
# BL1 (adjusted Hamming, unary + pairwise, graph cut) on the shared real data:
# camvid_voc car and person, weizmann_horse_voc horse. Trains on train,
# evaluates on val with the VOC measure, and writes models and JSON results.
#   bash scripts/bl1_shared.sh [SHARED_DATA_DIR] [OUT_DIR] [extra train options...]
set -euo pipefail
shared="${1:-$(cd "$(dirname "$0")/../.." && pwd)/shared/data}"
out="${2:-runs/bl1}"
shift $(( $# > 2 ? 2 : $# )) || true
mkdir -p "$out"
for pair in camvid_voc:car camvid_voc:person weizmann_horse_voc:horse; do
  data="${pair%%:*}"; cls="${pair##*:}"
  model="$out/${data}_${cls}"
  /usr/bin/time -f "%e s wall" segstruct train --data "$shared/$data" --class "$cls" \
      --method bl1 --out "$model" -j 2 -q "$@"
  segstruct evaluate --data "$shared/$data" --split val --model "$model" \
      --json "$model.val.json" -j 2 -q
done
