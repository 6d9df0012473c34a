"""The loss surface Delta(FP, FN) beside its piecewise-linear approximations
on M triangles (the paper's Fig. 1)."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from segstruct.inference.losses import get_loss
from segstruct.inference.triangulation import N_TRIANGLES, triangulate
from segstruct.report.drawing import add_caption

__all__ = ["loss_surface_figure"]


def loss_surface_figure(loss, n_pos, n_neg, n_triangles=(N_TRIANGLES, 15),
                        caption: str = "") -> tuple[Figure, list]:
    """Exact loss surface beside its piecewise-linear approximations (Fig. 1).

    Panel 1 shows ``Delta(FP, FN)`` over ``[0, Nn] x [0, Np]`` as colour; one
    more panel per M shows the approximation of
    :func:`segstruct.inference.triangulation.triangulate` with M triangles, in the same
    colour scale, with the triangle edges drawn over it and titled with its
    maximum and mean error over the integer (FP, FN) lattice.

    Parameters
    ----------
    loss : str, Loss or callable
        Anything :func:`segstruct.inference.losses.get_loss` accepts; pass
        ``get_loss("fbeta", beta=b)`` for a parametrised loss.
    n_pos, n_neg : float
        Np and Nn (the FN and FP ranges), >= 0.
    n_triangles : int or sequence of int, default (40, 15)
        One approximation panel per value (the paper shows 40 and 15).
    caption : str, default ""
        Footer naming the loss, Np, Nn, M and the code version.

    Returns
    -------
    fig : matplotlib.figure.Figure
        ``1 + len(n_triangles)`` image axes (and a shared colour bar).
    triangulations : list of Triangulation
        The meshes drawn, in panel order; their ``max_error`` and
        ``mean_error`` are the values in the titles.
    """
    loss = get_loss(loss)
    if isinstance(n_triangles, (int, np.integer)):
        n_triangles = (n_triangles,)
    tris = [triangulate(loss, n_pos, n_neg, n_triangles=int(m)) for m in n_triangles]
    name = tris[0].loss_name if tris else getattr(loss, "name", "loss")

    # A grid fine enough to look continuous; the same grid for every panel.
    # Padded domains (Np or Nn = 0) extend to the triangles' corners.
    x_max = max([float(n_neg)] + [float(t.vertices[:, 0].max()) for t in tris]) or 1.0
    y_max = max([float(n_pos)] + [float(t.vertices[:, 1].max()) for t in tris]) or 1.0
    fp, fn = np.meshgrid(np.linspace(0.0, x_max, 301), np.linspace(0.0, y_max, 201))
    inside = (fp <= n_neg) & (fn <= n_pos)
    exact = np.where(inside, loss(np.minimum(fp, n_neg), np.minimum(fn, n_pos),
                                  n_pos, n_neg), np.nan)
    surfaces = [exact] + [t.evaluate(fp, fn) for t in tris]
    vmin, vmax = float(np.nanmin(exact)), float(np.nanmax(exact))
    if vmax <= vmin:            # a flat loss still needs a colour range
        vmax = vmin + 1.0

    fig = Figure(figsize=(3.4 * len(surfaces) + 0.8, 3.3), layout="constrained")
    axes = fig.subplots(1, len(surfaces), squeeze=False)[0]
    extent = (0.0, x_max, 0.0, y_max)
    for k, (ax, z) in enumerate(zip(axes, surfaces)):
        im = ax.imshow(z, origin="lower", extent=extent, aspect="auto", cmap="viridis",
                       vmin=vmin, vmax=vmax, interpolation="nearest")
        ax.set_xlabel("FP (false positives)")
        # counts: integer ticks, as on the lattice the labellings reach
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        if k == 0:
            ax.set_ylabel("FN (false negatives)")
            ax.set_title(f"exact loss: {name}\n$N_p$ = {n_pos:g}, $N_n$ = {n_neg:g}",
                         fontsize=10)
            continue
        tri = tris[k - 1]
        ax.triplot(tri.vertices[:, 0], tri.vertices[:, 1], tri.triangles,
                   color="white", linewidth=0.7, alpha=0.9)
        ax.set_xlim(0.0, x_max)
        ax.set_ylim(0.0, y_max)
        # "~" marks errors estimated by sampling (huge lattices only)
        approx = "" if tri.error_exact else "~"
        ax.set_title(f"M = {len(tri)} triangles\nmax error {approx}{tri.max_error:.3g}, "
                     f"mean {approx}{tri.mean_error:.3g}", fontsize=10)
    fig.colorbar(im, ax=list(axes), label=r"$\Delta$(FP, FN)", shrink=0.9)
    add_caption(fig, caption)
    return fig, tris
