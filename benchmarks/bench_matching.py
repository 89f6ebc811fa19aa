"""The matching-setting attack (issue 19): one-to-one assignment vs the per-item random-user
rule, both attacks, on a generated reference population.

    python benchmarks/bench_matching.py [--users 100000] [--weeks 4 8] [--candidates 32]
                                        [--objectives loglik posterior] [--seed 0]
                                        [--solver auto|lapjv|cost-scaling]
                                        [--attacks hamming asymmetric]

For each r: ``--users`` users are generated (``topicslab.population.generate``, seed 1, r
weeks), both websites' traces simulated (``topicslab.api.observe``, one API secret), the
Hamming and asymmetric attacks (``--attacks``) fitted on website 1, and ``matching_attack``
run with every user's website-2 trace (the matching setting) for each objective and candidate
count. Prints,
per attack: the one-to-one success rate, the per-item random-user rate on the same traces
(tie-broken draw and exact expectation), the share matched inside the candidate graph, the
graph's size and the time of the candidate and solver stages (``--solver``: the assignment
solver, ``matching.SOLVERS``; cost-scaling needs OR-Tools); at the end the peak resident
memory of the process.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
from _outputs import checked, run, write

from topicslab.api import Mechanism, observe
from topicslab.attacks import make_attack
from topicslab.attacks.matching import SOLVERS, matching_attack
from topicslab.population import generate


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--weeks", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--candidates", type=int, nargs="+", default=[32])
    ap.add_argument("--objectives", nargs="+", default=["loglik", "posterior"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--solver", choices=SOLVERS, default="lapjv")
    ap.add_argument("--attacks", nargs="+", choices=["hamming", "asymmetric"],
                    default=["hamming", "asymmetric"])
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    checked(args.json, "--json", "json")
    rows = []
    for r in args.weeks:
        t0 = time.perf_counter()
        sets = generate(args.users, r, seed=1)
        mech = Mechanism(k=sets.k, taxonomy=sets.taxonomy)
        tr = observe(sets.sets, [0, 1], weeks=r, seed=args.seed + 7, mechanism=mech,
                     user_ids=sets.user_ids)
        site1, site2 = tr[0], tr[1]
        del sets, tr
        attacks = [make_attack(name) for name in args.attacks]
        for a in attacks:
            a.fit(site1, mech)
        # the matching setting: every user's website-2 trace, in a random order
        order = np.random.default_rng([args.seed, r]).permutation(args.users)
        print(f"r = {r}: {args.users:,} users simulated in {time.perf_counter() - t0:.1f} s",
              flush=True)
        for cand in args.candidates:
            for obj in args.objectives:
                found = matching_attack(site1, site2[order], order, attacks, candidates=cand,
                                        objective=obj, seed=[args.seed, r, cand],
                                        solver=args.solver)
                for m in found:
                    d = m.to_dict()
                    row = {"users": args.users, "weeks": r, "attack": m.name, **d}
                    rows.append(row)
                    print(f"  {m.name:10s} C={cand:<3d} {obj:9s} 1-to-1 {100 * m.rate:6.3f}%"
                          f"  per-item {100 * d['random_user_rate']:6.3f}%"
                          f" (E {100 * d['random_user_expected']:6.3f}%)"
                          f"  in graph {100 * d['in_graph'] / d['traces']:5.1f}%"
                          f"  edges {d['edges']:,}  largest component "
                          f"{d['largest_component']:,}  candidates "
                          f"{d['seconds']['candidates']:.1f} s  solve "
                          f"{d['seconds']['solve']:.1f} s ({m.solver})", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"peak RSS {peak:.2f} GB")
    if args.json:
        write(args.json, json.dumps({"rows": rows, "peak_rss_gb": peak}, indent=2))


if __name__ == "__main__":
    run(main)
