"""Re-identification risk of generic categorical sequences (Carey et al. App. E.2, Million Song).

A system releases, for each user, ``r`` independent samples of the items the user likes (here:
songs). Two such releases are drawn independently ("website 1" and "website 2"); the attacker
links a user's second release to the first with the Hamming attack (most positions equal).
The exact engine works on any integer categories, so nothing here is specific to Topics.

The data are generated: each user likes a heavy-tailed number of songs drawn from a Zipf-like
song popularity, roughly the shape of the Million Song Dataset (about 48 liked songs per user,
a few very popular songs). Run:

    python examples/generic_reid.py [--users 200000] [--songs 100000] [--weeks 1 2 4 8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from topicslab.attacks import measure_risk_traces


def liked_songs(n_users: int, n_songs: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists of liked songs: ``offsets[n_users + 1]``, ``songs``."""
    sizes = np.maximum(1, rng.lognormal(mean=3.4, sigma=1.0, size=n_users).astype(np.int64))
    popularity = 1.0 / np.arange(1, n_songs + 1) ** 0.9
    popularity /= popularity.sum()
    songs = rng.choice(n_songs, size=int(sizes.sum()), p=popularity)
    offsets = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets, songs


def release(offsets: np.ndarray, songs: np.ndarray, r: int, rng: np.random.Generator
            ) -> np.ndarray:
    """``r`` independent uniform samples of each user's liked songs: ``int64[n_users, r]``."""
    sizes = np.diff(offsets)
    pick = (rng.random((sizes.shape[0], r)) * sizes[:, None]).astype(np.int64)
    return songs[offsets[:-1, None] + pick]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--songs", type=int, default=100_000)
    ap.add_argument("--weeks", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--targets", type=int, default=10_240)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    offsets, songs = liked_songs(args.users, args.songs, rng)
    print(f"{args.users:,} users, {args.songs:,} songs, "
          f"{songs.shape[0] / args.users:.1f} liked songs per user")
    print(f"{'r':>3} {'risk %':>8} {'± std':>7} {'E[risk] %':>10} {'mean |argmax|':>14} "
          f"{'seconds':>8}")
    for r in args.weeks:
        first = release(offsets, songs, r, rng)
        second = release(offsets, songs, r, rng)
        t0 = time.perf_counter()
        res = measure_risk_traces(first, second, attacks="hamming", targets=args.targets,
                                  trials=args.trials, seed=args.seed, progress=False)
        a = res.attacks["hamming"].to_dict()
        print(f"{r:>3} {100 * a['risk_mean']:8.3f} {100 * a['risk_std']:7.3f} "
              f"{100 * a['expected_risk_mean']:10.3f} {a['argmax_size_mean']:14.1f} "
              f"{time.perf_counter() - t0:8.2f}")


if __name__ == "__main__":
    main()
