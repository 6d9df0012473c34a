"""The benchmark's steps on bench_inference's parsed options (``args``): the
real images of each data set, the random instances, and the data-set scope
and pixel level of the scope data set; then the targets' inputs."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from benchlib.cases import BASELINE, PROPOSED, PROPOSED_LP, TARGET_M, default_cases
from benchlib.instances import (pixel_instances, random_instances, sample_instances,
                                union_instance)
from benchlib.measure import bench_images, measure_dataset_scope, measure_pixel, merge
from benchlib.report import summarise
from benchlib.sources import SourceSettings, load_source
from benchlib.targets import exactness_inputs, superpixel_inputs


@dataclass
class Measurements:
    """Everything one run measured; ``summaries`` maps a group (data set:class,
    "overall", "random50") to ``summarise`` output."""

    per_image: dict = field(default_factory=dict)
    summaries: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    real: dict | None = None
    random_block: dict | None = None
    dataset_scope: dict | None = None
    pixel_level: list = field(default_factory=list)


def m_values(args) -> list[int]:
    """M of the decomposition cases: --triangles, and the targets' M always."""
    return list(args.triangles) + ([TARGET_M] if TARGET_M not in args.triangles else [])


def cases_for(args) -> dict:
    return default_cases(m_values(args), args.lp_triangles or None)


def scope_on(args) -> bool:
    """Whether the scope data set is needed (data-set scope or pixel level)."""
    return not args.no_dataset_scope or args.pixel_images > 0


def measure_all(args, cases: dict) -> Measurements:
    """Every measurement of a run, in the order the JSON reports them."""
    settings = SourceSettings(cache=args.cache, n_jobs=args.n_jobs, progress=not args.quiet,
                              C=args.C, max_iter=args.max_iter)
    from threadpoolctl import threadpool_limits

    out, sources = Measurements(), {}
    # BLAS threads: 1 (docs/design.md, "Measurements behind the design":
    # OpenBLAS's spinning threads slow small work).
    with threadpool_limits(limits=1):
        bench_real(args, cases, settings, sources, out)
        if args.random:
            bench_random(args, cases, out)
        if scope_on(args):
            bench_scope(args, settings, sources, out)
    return out


def bench_real(args, cases, settings, sources, out: Measurements) -> None:
    """Every case on a sample of each data set's images; --model replaces the
    first data set's BL1."""
    for k, (name, cls) in enumerate(args.data_sets):
        group = f"{name}:{cls}"
        sources[(name, cls)] = source = load_source(
            args.shared_data, name, cls, settings, args.model if k == 0 else None)
        out.models[group] = source.model_info
        instances = sample_instances(source, args.split,
                                     None if args.full else args.images, args.seed)
        out.per_image[group] = bench_images(instances, cases, args.repeats, args.timer,
                                            progress=settings.progress, desc=group)
        out.summaries[group] = summarise(out.per_image[group])
    out.real = merge(out.per_image.values())
    if len(out.per_image) > 1:
        out.summaries["overall"] = summarise(out.real)


def bench_random(args, cases, out: Measurements) -> None:
    """Target 2's random 50-node instances: one call each (quality, not speed)."""
    random_cases = {n: c for n, c in cases.items() if n in (BASELINE, PROPOSED, PROPOSED_LP)}
    out.random_block = bench_images(random_instances(args.random, seed=args.seed),
                                    random_cases, repeats=1, timer=args.timer,
                                    progress=not args.quiet, desc="random50")
    out.summaries["random50"] = summarise(out.random_block)


def bench_scope(args, settings, sources, out: Measurements) -> None:
    """Targets 3 and 4 on the scope data set's model (trained once if it is
    not one of the benchmarked data sets)."""
    key = tuple(args.scope_data_set)
    if key not in sources:
        sources[key] = load_source(args.shared_data, *key, settings)
        out.models[f"{key[0]}:{key[1]}"] = sources[key].model_info
    source = sources[key]
    if not args.no_dataset_scope:
        out.dataset_scope = dataset_scope(source, args.repeats)
    for inst, params in pixel_instances(source, args.split, args.pixel_images, args.seed):
        r = measure_pixel(inst, params, args.repeats, args.pixel_timeout or None)
        out.pixel_level.append(r)
        print(f"pixel level {inst.name}: {r['n_nodes']} nodes, proposed "
              f"{'>= ' if r['timed_out'] else ''}{r['proposed_s']:.2f} s, graph cut "
              f"{r['graphcut_ms']:.1f} ms", file=sys.stderr)


def dataset_scope(source, repeats: int) -> dict:
    """Target 3: one proposed call on the union of every training graph."""
    start = time.perf_counter()
    union = union_instance(source.train_examples(), source)
    build_s = time.perf_counter() - start
    result = measure_dataset_scope(union, repeats)
    result.update(split="train", n_images=len(source.train_examples()),
                  union_build_s=build_s)
    print(f"data-set scope: {result['n_nodes']} nodes, proposed "
          f"{result['proposed_s']:.2f} s, graph cut "
          f"{result['graphcut_ms']:.1f} ms", file=sys.stderr)
    return result


def target_inputs(m: Measurements) -> dict:
    """The inputs of ``targets_from`` (and the JSON's ``target_measurements``)."""
    blocks = {"real": m.real}
    if m.random_block is not None:
        blocks["random50"] = m.random_block
    return {"superpixel": superpixel_inputs(m.real),
            "exactness": exactness_inputs(blocks),
            "dataset_scope": m.dataset_scope,
            "pixel_level": m.pixel_level or None}
