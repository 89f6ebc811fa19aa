"""Does the persistence statistic carry the risk of long traces? (issue 14, docs/fidelity.md
§4c)

One reference population of ``--users`` users and ``--weeks`` weeks, one DP release of the
paper's pair statistics plus the persistence statistic (lags 1..weeks−1, ε = ln 3), then two
fits of persistent types to it: one ignoring the statistic (``--persistence 0``, the
default release's fit) and one fitting it (``--persistence W``). For each, the synthetic
data's overlap distribution against the population's and the exact expected risk gap for
r = 1..weeks, every user a target (``validate.fidelity``), both attacks.

    python benchmarks/bench_persistence.py                        # 1M users, 8 weeks
    python benchmarks/bench_persistence.py --users 200000 --weights 0,0.03,0.3
    python benchmarks/bench_persistence.py --types 300 --overlap-lags 0 --weights 0
    python benchmarks/bench_persistence.py --types 300 --single 250 --overlap-lags 0 --weights 0

``--single N`` makes the first N types single-mode (their other modes get no weight): a
mixture of N one-mode types and T − N types with M modes, to see whether topics that persist
one by one (one-mode types) and themes that alternate (modes) can share one fit.
``--init-mode-stay`` starts the mode stays elsewhere than the variant's 0.7.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from _outputs import run

from topicslab import dp, population, validate
from topicslab import model as tm
from topicslab.model.persistence import overlap_histogram, sampled_overlap
from topicslab.model.variants import Params, PersistentTypes, Stats


@dataclass(frozen=True)
class MixedModes(PersistentTypes):
    """Persistent types whose first ``single`` types have one mode (the rest M): exploratory,
    the other modes of a single-mode type are masked out of its mode weights."""

    single: int = 0

    def _masked(self, params: Params) -> Params:
        mask = torch.zeros_like(params["mode_logit"])
        mask[: self.single, 1:] = -1e4  # e^-1e4 = 0 at every precision
        return {**params, "mode_logit": params["mode_logit"] + mask}

    def statistics(self, params: Params) -> Stats:
        return super().statistics(self._masked(params))

    def build(self, params: Params, taxonomy: Any, metadata: dict[str, Any],
              ) -> tm.TypeMixture:
        return super().build(self._masked(params), taxonomy, metadata)

    def config(self) -> dict[str, Any]:
        return {**super().config(), "single": self.single}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--weeks", type=int, default=8)
    ap.add_argument("--weights", default="0,0.03",
                    help="persistence weights to fit (0: the statistic ignored)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--types", type=int, default=None, help="T (default: the variant's, 100)")
    ap.add_argument("--modes", type=int, default=None, help="M (default 5)")
    ap.add_argument("--overlap-lags", type=int, default=None,
                    help="lags released (default weeks - 1; 0: the paper's release)")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--single", type=int, default=0,
                    help="types with one mode (the first N of --types; default 0)")
    ap.add_argument("--init-mode-stay", type=float, default=0.7)
    args = ap.parse_args()
    lags = args.weeks - 1 if args.overlap_lags is None else args.overlap_lags
    if not 0 <= lags < args.weeks:
        ap.error(f"--overlap-lags must be in 0..{args.weeks - 1}")
    t0 = time.perf_counter()
    pop = population.generate(args.users, args.weeks, seed=args.seed)
    st = dp.compute_statistics(pop, epsilon=math.log(3), delta=1e-15, overlap_lags=lags,
                               seed=args.seed + 1)
    print(f"population and release: {time.perf_counter() - t0:.0f} s", flush=True)
    truth = overlap_histogram(pop.sets, args.weeks - 1)
    print("population  E[O_l] " + " ".join(f"{x:.3f}" for x in truth @ np.arange(6)))
    print("population  P(O_l=0) " + " ".join(f"{x:.3f}" for x in truth[:, 0]))
    for w in (float(x) for x in args.weights.split(",")):
        t1 = time.perf_counter()
        base = tm.make_variant("persistent", args.types, args.weeks, modes=args.modes)
        assert isinstance(base, PersistentTypes)
        variant = MixedModes(types=base.types, modes=base.modes, weeks=args.weeks,
                             init_mode_stay=args.init_mode_stay, single=args.single)
        res = tm.fit(st, variant,
                     tm.FullObjective(persistence=w), seed=0, progress=False)
        fit_s = time.perf_counter() - t1
        got = sampled_overlap(res.model, args.weeks - 1, 200_000, seed=3)
        print(f"\nweight {w:g}: fit {fit_s:.0f} s, {res.steps} steps, stopped {res.stopped}, "
              f"J {res.loss:.3e} (floor {res.model.metadata.get('noise_floor')}), "
              f"rel<=20% {res.quality['share_rel_within_20pct']:.1%}", flush=True)
        print("synthetic   E[O_l] " + " ".join(f"{x:.3f}" for x in got @ np.arange(6)))
        print("synthetic   P(O_l=0) " + " ".join(f"{x:.3f}" for x in got[:, 0]))
        stays = np.asarray(res.model.mode_stay)
        print("mode stays q10/q50/q90 " + " ".join(f"{x:.3f}" for x in
                                                   np.quantile(stays, [0.1, 0.5, 0.9])))

        def synthetic(trial: int, model: tm.TypeMixture = res.model) -> object:
            return tm.sample(model, pop.n_users, seed=100 + trial, weeks=args.weeks)

        f = validate.fidelity(pop, synthetic, trials=args.trials, seed=3)  # type: ignore[arg-type]
        for attack in ("hamming", "asymmetric"):
            cells = [f"{g.gap:+.1%} ± {1.96 * g.gap_se:.1%}" for g in f.gaps
                     if g.attack == attack]
            print(f"  {attack:10s} " + " | ".join(cells), flush=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    run(main)
