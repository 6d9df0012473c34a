"""Loss surfaces and their triangulations as PNGs (the paper's Fig. 1).

For each loss, one figure: the exact surface Delta(FP, FN) over
[0, Nn] x [0, Np] beside its piecewise-linear approximations with M
triangles (default 40 and 15, as in the paper), each titled with its maximum
and mean error over the integer (FP, FN) lattice.

The first loss is written to --out; every further one beside it, with the
loss name appended to the file name. The defaults (IoU, then F1 = F-beta with
beta = 1; Np = 20, Nn = 60, superpixel counts of one image) write

    out/figures/loss_surface.png
    out/figures/loss_surface_fbeta.png

    python scripts/loss_surface.py --out out/figures/loss_surface.png \\
        [--n-pos 20 --n-neg 60 --loss iou fbeta --beta 1 --triangles 40 15]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from segstruct.inference.losses import get_loss
from segstruct.io.provenance import code_version
from segstruct.report.figures import loss_surface_figure, save_figure

FORMULAS = {
    "iou": "Delta = (FP + FN) / (Np + FP)",
    "fbeta": "Delta = 1 - (1+b^2) TP / ((1+b^2) TP + b^2 FN + FP), TP = Np - FN",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/figures/loss_surface.png"),
                    help="PNG of the first loss; the others go beside it")
    ap.add_argument("--n-pos", type=float, default=20.0, help="Np (FN axis), default 20")
    ap.add_argument("--n-neg", type=float, default=60.0, help="Nn (FP axis), default 60")
    ap.add_argument("--loss", nargs="+", default=["iou", "fbeta"], choices=sorted(FORMULAS),
                    help="losses, one figure each (default: iou fbeta)")
    ap.add_argument("--beta", type=float, default=1.0, help="beta of fbeta (default 1: F1)")
    ap.add_argument("--triangles", type=int, nargs="+", default=[40, 15],
                    help="M of each approximation panel (default 40 15)")
    ap.add_argument("--dpi", type=float, default=120)
    args = ap.parse_args(argv)

    version = code_version()
    for k, name in enumerate(dict.fromkeys(args.loss)):        # unique, in order
        loss = get_loss(name, beta=args.beta) if name == "fbeta" else get_loss(name)
        out = args.out if k == 0 else args.out.with_name(
            f"{args.out.stem}_{name}{args.out.suffix}")
        formula = FORMULAS[name] + (f", b = {args.beta:g}" if name == "fbeta" else "")
        caption = (f"{name} loss, {formula}; Np = {args.n_pos:g}, Nn = {args.n_neg:g}; "
                   f"M = {', '.join(map(str, args.triangles))} triangles "
                   "(segstruct.inference.triangulation.triangulate: adaptive worst-first refinement, "
                   "then cut moving); errors = max / mean |Delta - approximation| over the "
                   f"integer (FP, FN) lattice; segstruct {version}")
        fig, tris = loss_surface_figure(loss, args.n_pos, args.n_neg, args.triangles, caption)
        save_figure(fig, out, dpi=args.dpi)
        errors = ", ".join(f"M={len(t)}: max {t.max_error:.4g}, mean {t.mean_error:.4g}"
                           for t in tris)
        print(f"{out}  ({errors})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
