"""A learned re-identification attack: a trained similarity of two sites' traces (Carey et al.
Appendix E.1.3).

Carey et al.'s strongest attacker is a neural network: an encoder of one site's r-week answer
sequence and a pair scorer giving the probability that two sequences (website 1's, website 2's)
belong to the same user, trained with binary cross-entropy on one matching and ten
non-matching pairs per user. This module implements that attack in PyTorch.

Encoder (``TraceEncoder``, shared by both sites, order-aware): week-aligned blocks ``w_s ·
E[t_s]`` (a topic embedding per week's answer, a learned week scale) and one order-free block,
the mean of a second topic embedding (a topic seen in another week still counts: a profile
persists across weeks). The inner product of two embeddings is a learned per-topic similarity
summed over weeks plus a cross-week term; ``|E[t]|²`` starts at the asymmetric attack's gain of
topic t (Theorem 1), so retrieval starts from the hand-made attack.

Pair scorer (``PairScorer``): an MLP over ``[e1 * e2, |e1 - e2|, <e1, e2>]`` and, per week
``s`` of the query, a learned per-topic gain of an exact match (website 1 shows the query's
topic in week ``s``) and of a cross-week match (in any week), plus a linear term over the last
three, which starts as the asymmetric attack's score (its exact-match gains; the MLP starts at
zero). Training can then only move away from the hand-made attack where the loss says so.

Training (``train_attack``): every epoch the mechanism simulates two sites' traces of the
training population (``topicslab.api.observe``, a fresh API secret per epoch: fresh pairs); per
user one positive pair (the user's two traces) and ``negatives`` negative pairs (the query
against another user's website-1 trace). A share ``hard_fraction`` of the negatives are *hard*:
users whose website-1 answer equals the query's in a random week (drawn from per-week topic
buckets). Loss: binary cross-entropy over the 1 : ``negatives`` pairs, plus an in-batch
softmax (InfoNCE) loss on the embeddings' cosine so that they serve retrieval.

Inference at scale (``attack_outcomes``): website 1's distinct traces are embedded and indexed
with faiss (exact inner product); each query retrieves its top-``K`` candidate traces, which the
pair scorer re-ranks. The attacker names a uniform user among the best-scoring candidates;
users with the same website-1 trace have the same score, so the argmax set is every user whose
trace scores best (expected success ``1/|argmax|`` when the true user is in it, as for the
other attacks). The retrieval recall (how often the true user's trace is among the ``K``) is
reported: a target missed by retrieval cannot be re-identified.

Public names:
    LearnedAttackConfig                     architecture and training options
    LearnedAttack                           encoder + scorer + their metadata; .embed, .score
    train_attack(sets, *, weeks, mechanism, config, seed, progress, device) -> LearnedAttack
    save_attack(directory, attack) / load_attack(directory, *, device)
    attack_outcomes(attack, site1, queries, true_rows, *, top_k) -> (TargetOutcomes, recall)
    measure_risk_learned(sets, attack, *, weeks, compare, top_k, ...) -> RiskResult
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from topicslab._progress import task
from topicslab.api import Mechanism, observe
from topicslab.attacks.outcomes import TargetOutcomes
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

WEIGHTS = "model.safetensors"
META = "model.json"
FORMAT = "topicslab-learned-attack"
FORMAT_VERSION = 1
DEFAULT_TOP_K = 256


@dataclass(frozen=True)
class LearnedAttackConfig:
    """Architecture and training options of the learned attack.

    Attributes:
        topic_dim: per-week topic embedding size (a trace's embedding, the retrieval
            vector, has ``weeks * topic_dim + bag_dim`` entries).
        bag_dim: order-free topic embedding size.
        hidden: pair scorer hidden units.
        negatives: non-matching pairs per matching pair (10 in Carey et al.).
        hard_fraction: share of the negatives drawn among users agreeing with the query in a
            random week (0: all uniform).
        epochs: passes over the training population (fresh API answers each).
        batch_users: users per optimiser step (each with 1 + ``negatives`` pairs).
        lr: Adam learning rate.
        contrastive: weight of the in-batch InfoNCE loss on the embeddings.
        temperature: InfoNCE temperature (of the raw inner products).
        init_asymmetric: start the embeddings' exact-match part and the scorer's linear
            term from the asymmetric attack's gains (Theorem 1), estimated from website 1 of
            the training population.
    """

    topic_dim: int = 16
    bag_dim: int = 16
    hidden: int = 64
    negatives: int = 10
    hard_fraction: float = 0.5
    epochs: int = 3
    batch_users: int = 2048
    lr: float = 1e-2
    contrastive: float = 1.0
    temperature: float = 1.0
    init_asymmetric: bool = True

    def __post_init__(self) -> None:
        for name in ("topic_dim", "bag_dim", "hidden", "negatives", "epochs",
                     "batch_users"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"must be a positive integer, got {v!r}", field=name)
        if self.negatives > MAX_NEGATIVES:
            raise InputError(f"must be at most {MAX_NEGATIVES:,} (Carey et al. use 10; every "
                             f"negative is one more pair per user and step), got "
                             f"{self.negatives:,}", field="negatives")
        if not 0.0 <= self.hard_fraction <= 1.0:
            raise InputError(f"must lie in [0, 1], got {self.hard_fraction!r}",
                             field="hard_fraction")
        for name in ("lr", "temperature"):
            if not float(getattr(self, name)) > 0:
                raise InputError(f"must be positive, got {getattr(self, name)!r}", field=name)
        if not float(self.contrastive) >= 0:
            raise InputError(f"must be >= 0, got {self.contrastive!r}", field="contrastive")


_ARCH = ("topic_dim", "bag_dim", "hidden")
#: the most negative pairs per positive: training time grows linearly with them
MAX_NEGATIVES = 1000


class TraceEncoder(nn.Module):
    """One site's trace ``[B, c]`` (dense topics, -1 empty) -> embeddings ``[B, c*topic_dim +
    bag_dim]``.

    Week-aligned blocks (order-aware): block ``s`` is ``w_s · E[t_s]``, so the inner product
    of two traces is ``Σ_s w_s² E[a_s]·E[b_s]`` (a learned per-topic similarity in the same
    week; an exact match on topic t is worth ``w_s²|E[t]|²``, the form of the asymmetric
    attack's gain), plus an order-free block, the mean of ``F[t_s]`` (a topic seen in another
    week). ``init_gain`` sets ``|E[t]|²`` (e.g. the asymmetric gains), so that retrieval starts
    from the hand-made attack.
    """

    def __init__(self, topics: int, weeks: int, cfg: LearnedAttackConfig,
                 init_gain: npt.NDArray[np.float64] | None = None) -> None:
        super().__init__()
        self.weeks = weeks
        self.topic = nn.Embedding(topics + 1, cfg.topic_dim, padding_idx=0)
        self.scale = nn.Parameter(torch.ones(weeks))
        self.bag = nn.Embedding(topics + 1, cfg.bag_dim, padding_idx=0)
        with torch.no_grad():
            w = nn.functional.normalize(torch.randn(topics + 1, cfg.topic_dim), dim=1)
            if init_gain is not None:
                g = torch.as_tensor(np.sqrt(np.maximum(init_gain, 1e-3)), dtype=torch.float32)
                w[1:] *= g[:, None]
            w[0].zero_()
            self.topic.weight.copy_(w)
            nn.init.normal_(self.bag.weight, std=0.05)
            self.bag.weight[0].zero_()

    @property
    def dim(self) -> int:
        return self.weeks * self.topic.embedding_dim + self.bag.embedding_dim

    def forward(self, traces: torch.Tensor) -> torch.Tensor:
        idx = traces.long() + 1  # -1 (empty) -> the padding row 0
        per_week = (self.topic(idx) * self.scale[None, :, None]).flatten(1)
        present = (idx > 0).float()
        bag = (self.bag(idx) * present[..., None]).sum(1) / present.sum(1, keepdim=True).clamp(
            min=1.0)
        return torch.cat([per_week, bag], 1)


class PairScorer(nn.Module):
    """Logit that a website-1 trace and a query (website-2 trace) are the same user.

    Features of a pair: the embeddings' product and distance, their inner product, and per
    query week an exact match (website 1 shows the query's topic that week) times a learned
    per-topic gain and a cross-week match (in any week) times another; an MLP over all of them
    plus a linear term over the last three (initialised to the asymmetric attack's score when
    ``init_gain`` is given; the MLP's output starts at zero).
    """

    def __init__(self, topics: int, weeks: int, cfg: LearnedAttackConfig,
                 init_gain: npt.NDArray[np.float64] | None = None) -> None:
        super().__init__()
        d = weeks * cfg.topic_dim + cfg.bag_dim
        self.gain = nn.Embedding(topics + 1, 2, padding_idx=0)
        last = nn.Linear(cfg.hidden, 1)
        self.mlp = nn.Sequential(nn.Linear(2 * d + 2 * weeks + 1, cfg.hidden), nn.ReLU(), last)
        self.skip = nn.Linear(2 * weeks + 1, 1)
        with torch.no_grad():
            self.gain.weight.fill_(1.0)
            if init_gain is not None:
                self.gain.weight[1:, 0] = torch.as_tensor(init_gain, dtype=torch.float32)
                self.gain.weight[1:, 1] = 0.0
            self.gain.weight[0].zero_()
            last.weight.zero_()
            last.bias.zero_()
            self.skip.weight.zero_()
            self.skip.weight[0, 1:1 + weeks] = 1.0  # the exact-match gains
            self.skip.bias.fill_(-5.0)

    def forward(self, e1: torch.Tensor, t1: torch.Tensor, e2: torch.Tensor,
                t2: torch.Tensor) -> torch.Tensor:
        """``e1, e2``: ``[P, d]`` embeddings; ``t1, t2``: ``[P, c]`` traces. -> ``[P]``."""
        valid = t2 >= 0
        exact = ((t1 == t2) & valid).float()
        cross = ((t1[:, None, :] == t2[:, :, None]).any(2) & valid).float()
        g = self.gain(t2.long() + 1)
        direct = torch.cat([(e1 * e2).sum(1, keepdim=True), exact * g[..., 0],
                            cross * g[..., 1]], 1)
        feats = torch.cat([e1 * e2, (e1 - e2).abs(), direct], 1)
        return (self.mlp(feats) + self.skip(direct)).squeeze(1)


@dataclass
class LearnedAttack:
    """A trained learned attack: encoder, scorer and what it was trained for.

    Attributes:
        encoder, scorer: the networks (on ``device``).
        config: architecture and training options.
        topics: taxonomy size m; ``taxonomy``: its version.
        weeks: call-weeks r it was trained on; ``lookback``: epochs per call (the traces it
            reads have ``weeks + lookback - 1`` columns).
        metadata: training record (population size, seconds, losses, seed, mechanism).
    """

    encoder: TraceEncoder
    scorer: PairScorer
    config: LearnedAttackConfig
    topics: int
    taxonomy: str
    weeks: int
    lookback: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"

    name = "learned"

    @property
    def trace_weeks(self) -> int:
        return self.weeks + self.lookback - 1

    def _check(self, traces: npt.NDArray[np.integer], what: str) -> None:
        if traces.ndim != 2 or traces.shape[1] != self.trace_weeks:
            raise InputError(f"{what} must be [n, {self.trace_weeks}] traces (the model was "
                             f"trained on r = {self.weeks}, lookback {self.lookback}), got "
                             f"{traces.shape}", field="weeks")
        if traces.size and (int(traces.max()) >= self.topics or int(traces.min()) < -1):
            raise InputError(f"{what} hold categories outside 0..{self.topics - 1}",
                             field="traces")

    @torch.no_grad()
    def embed(self, traces: npt.NDArray[np.integer], batch: int = 65536
              ) -> npt.NDArray[np.float32]:
        """Embeddings ``float32[n, c * topic_dim + bag_dim]`` of traces ``[n, c]``."""
        arr = np.asarray(traces)
        self._check(arr, "traces")
        self.encoder.eval()
        out = np.empty((arr.shape[0], self.encoder.dim), dtype=np.float32)
        for lo in range(0, arr.shape[0], batch):
            t = torch.from_numpy(np.ascontiguousarray(arr[lo:lo + batch], dtype=np.int64))
            out[lo:lo + batch] = self.encoder(t.to(self.device)).cpu().numpy()
        return out

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "weeks": self.weeks, "lookback": self.lookback,
                "taxonomy": self.taxonomy, **{k: getattr(self.config, k) for k in _ARCH},
                "negatives": self.config.negatives,
                "hard_fraction": self.config.hard_fraction,
                "training": self.metadata}


def resolve_device(device: str) -> str:
    """``cpu``, ``cuda`` or ``auto`` (cuda when available) -> the torch device to use."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise InputError(f"device must be cpu, cuda or auto, got {device!r}", field="device")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("CUDA is not available on this machine (torch.cuda.is_available() "
                         "is false); use --device cpu", field="device")
    return device


def _new_attack(topics: int, taxonomy: str, weeks: int, lookback: int,
                cfg: LearnedAttackConfig, device: str,
                init_gain: npt.NDArray[np.float64] | None = None) -> LearnedAttack:
    c = weeks + lookback - 1
    return LearnedAttack(TraceEncoder(topics, c, cfg, init_gain).to(device),
                         PairScorer(topics, c, cfg, init_gain).to(device), cfg, topics,
                         taxonomy, weeks, lookback, {}, device)


def _week_buckets(site1: npt.NDArray[np.int16], topics: int
                  ) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """Per week: users sorted by their website-1 answer, and where each answer starts."""
    out = []
    for s in range(site1.shape[1]):
        col = site1[:, s].astype(np.int64) + 1  # 0: empty
        order = np.argsort(col, kind="stable")
        out.append((order, np.searchsorted(col[order], np.arange(topics + 2))))
    return out


def _hard_negatives(buckets: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]],
                    queries: npt.NDArray[np.int16], users: npt.NDArray[np.int64], count: int,
                    rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """``int64[len(users), count]``: per query, users whose website-1 answer equals the query's
    in a random week (a uniform user where no other user shares it)."""
    n = buckets[0][0].shape[0]
    weeks = rng.integers(0, len(buckets), size=(len(users), count))
    topic = queries[users[:, None], weeks].astype(np.int64) + 1  # 0: empty
    out = rng.integers(0, n, size=(len(users), count))
    for s, (order, starts) in enumerate(buckets):
        pick = weeks == s
        t = topic[pick]
        lo, size = starts[t], starts[t + 1] - starts[t]
        draw = lo + (rng.random(t.shape[0]) * np.maximum(size, 1)).astype(np.int64)
        out[pick] = np.where(size > 1, order[np.minimum(draw, n - 1)], out[pick])
    # a negative is another user: move hits of the query's own row to another user
    own = out == users[:, None]
    out[own] = (out[own] + 1 + rng.integers(0, n - 1, size=int(own.sum()))) % n
    return out


def train_attack(
    sets: TopicSets,
    *,
    weeks: int = 4,
    mechanism: Mechanism | None = None,
    config: LearnedAttackConfig | None = None,
    seed: int = 0,
    progress: bool = False,
    device: str = "cpu",
) -> LearnedAttack:
    """Train the learned attack on pairs the mechanism simulates from ``sets``.

    Args:
        sets: the training population (reference, synthetic or real topic sets); at least
            ``weeks + lookback - 1`` weeks and two users.
        weeks: call-weeks r of the traces (the attack applies to r-week traces only).
        mechanism: API parameters (default: ``k`` and taxonomy of ``sets``, ``p = 0.05``).
        config: architecture and training options (``LearnedAttackConfig``).
        seed: seed of the API secrets, negatives, batches and initial weights.
        progress: a progress bar over the optimiser steps (the loss after the bar).
        device: ``cpu``, ``cuda`` or ``auto``.
    """
    cfg = config or LearnedAttackConfig()
    dev = resolve_device(device)
    mech = mechanism or Mechanism(k=sets.k, taxonomy=sets.taxonomy)
    if mech.k != sets.k or mech.tax.size != sets.taxonomy.size:
        raise InputError("the mechanism's k and taxonomy must be the training sets'",
                         field="mechanism")
    if isinstance(weeks, bool) or not isinstance(weeks, int) or weeks < 1:
        raise InputError(f"weeks must be a positive integer, got {weeks!r}", field="weeks")
    c = weeks + mech.lookback - 1
    if sets.n_weeks < c:
        raise InputError(f"training on {weeks} call-week(s) with lookback {mech.lookback} "
                         f"needs {c} weeks of profiles; the sets have {sets.n_weeks}",
                         field="weeks")
    n = sets.n_users
    if n < 2:
        raise InputError("training needs at least two users", field="sets")
    torch.manual_seed(seed)
    m = mech.tax.size
    init_gain = None
    if cfg.init_asymmetric and mech.q_in > mech.q_out:
        from topicslab.attacks.asymmetric import asymmetric_weights
        from topicslab.attacks.popularity import estimate_popularity

        first = observe(sets.sets, [0], weeks=weeks, seed=seed, mechanism=mech,
                        user_ids=sets.user_ids)[0]
        pop = estimate_popularity(first, m, mech.q_in, mech.q_out)
        w_match, w_mismatch = asymmetric_weights(pop, mech.q_in, mech.q_out, mech.k)
        init_gain = w_mismatch - w_match
    att = _new_attack(m, mech.tax.version, weeks, mech.lookback, cfg, dev, init_gain)
    params = list(att.encoder.parameters()) + list(att.scorer.parameters())
    opt = torch.optim.Adam(params, lr=cfg.lr)
    bce = nn.BCEWithLogitsLoss()
    b = min(cfg.batch_users, n)
    steps = -(-n // b)
    n_hard = round(cfg.hard_fraction * cfg.negatives)
    history: list[dict[str, float]] = []
    t0 = time.perf_counter()
    att.encoder.train()
    att.scorer.train()
    with task("training the learned attack", cfg.epochs * steps, enabled=progress) as advance:
        for epoch in range(cfg.epochs):
            rng = np.random.default_rng([seed, epoch, 0x1EA2])
            api_seed = int(rng.integers(0, 2**62))
            traces = observe(sets.sets, [0, 1], weeks=weeks, seed=api_seed, mechanism=mech,
                             user_ids=sets.user_ids)
            site1 = np.ascontiguousarray(traces[0])
            site2 = np.ascontiguousarray(traces[1])
            s1 = torch.from_numpy(site1.astype(np.int64)).to(dev)
            s2 = torch.from_numpy(site2.astype(np.int64)).to(dev)
            buckets = _week_buckets(site1, m) if n_hard else []
            perm = rng.permutation(n)
            sums = {"bce": 0.0, "nce": 0.0}
            for lo in range(0, n, b):
                users = perm[lo:lo + b].astype(np.int64)
                nb = len(users)
                u = torch.from_numpy(users).to(dev)
                q, pos = s2[u], s1[u]
                eq = att.encoder(q)
                ep = att.encoder(pos)
                # uniform negatives: other users of the batch (their embeddings are at hand)
                n_uni = cfg.negatives - n_hard if nb > 1 else 0
                off = rng.integers(1, max(nb, 2), size=(nb, n_uni))
                uni = torch.from_numpy(((np.arange(nb)[:, None] + off) % nb).reshape(-1)).to(dev)
                e_neg, t_neg = [ep[uni]], [pos[uni]]
                if n_hard:
                    hard = _hard_negatives(buckets, site2, users, n_hard, rng)
                    ht = s1[torch.from_numpy(hard.reshape(-1)).to(dev)]
                    e_neg.append(att.encoder(ht))
                    t_neg.append(ht)
                # pairs (query i, negative j): uniform ones first, then the hard ones
                qi = torch.cat([torch.arange(nb, device=dev).repeat_interleave(n_uni),
                                torch.arange(nb, device=dev).repeat_interleave(n_hard)])
                logits = torch.cat([
                    att.scorer(ep, pos, eq, q),
                    att.scorer(torch.cat(e_neg), torch.cat(t_neg), eq[qi], q[qi])])
                labels = torch.cat([torch.ones(nb, device=dev),
                                    torch.zeros(logits.shape[0] - nb, device=dev)])
                loss_bce = bce(logits, labels)
                loss = loss_bce
                loss_nce = torch.zeros((), device=dev)
                if cfg.contrastive > 0 and len(users) > 1:
                    sim = eq @ ep.T / cfg.temperature
                    loss_nce = nn.functional.cross_entropy(
                        sim, torch.arange(len(users), device=dev))
                    loss = loss + cfg.contrastive * loss_nce
                opt.zero_grad()
                loss.backward()
                opt.step()
                sums["bce"] += float(loss_bce.detach()) * len(users)
                sums["nce"] += float(loss_nce.detach()) * len(users)
                advance(1, info=f"epoch {epoch + 1} bce {float(loss_bce.detach()):.4f}")
            history.append({"epoch": epoch, "bce": sums["bce"] / n, "infonce": sums["nce"] / n})
    att.encoder.eval()
    att.scorer.eval()
    att.metadata = {"users": n, "epochs": cfg.epochs, "seconds": time.perf_counter() - t0,
                    "seed": seed, "device": dev, "p": mech.p, "k": mech.k,
                    "negatives_hard": n_hard, "history": history,
                    "source": sets.metadata.get("source", sets.metadata.get("generator"))}
    return att


# ------------------------------------------------------------------------------ model files


def save_attack(directory: str | Path, attack: LearnedAttack) -> Path:
    """Write ``model.safetensors`` (every network weight, float32) and ``model.json``
    (format, taxonomy, weeks, lookback, architecture, training record) into ``directory``,
    both or neither (``topicslab._atomic.atomic_dir``)."""
    from safetensors.torch import save_file

    from topicslab._atomic import atomic_dir, atomic_path, write_text_atomic
    from topicslab._json import jsonable

    state = {f"encoder.{k}": v.detach().cpu().float().contiguous()
             for k, v in attack.encoder.state_dict().items()}
    state.update({f"scorer.{k}": v.detach().cpu().float().contiguous()
                  for k, v in attack.scorer.state_dict().items()})
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "taxonomy": attack.taxonomy,
            "topics": attack.topics, "weeks": attack.weeks, "lookback": attack.lookback,
            "config": asdict(attack.config), "training": jsonable(attack.metadata)}
    with atomic_dir(directory, owned=(WEIGHTS, META)) as tmp:
        with atomic_path(tmp / WEIGHTS) as w:
            save_file(state, str(w), metadata={"format": FORMAT})
        write_text_atomic(tmp / META, json.dumps(meta, indent=2, allow_nan=False) + "\n")
    return Path(directory)


def _positive(meta: dict[str, Any], name: str, file: str) -> int:
    v = meta.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InputError(f"must be a positive integer, got {v!r}", file=file, field=name)
    return v


def load_attack(directory: str | Path, *, device: str = "cpu") -> LearnedAttack:
    """Read a directory written by ``save_attack``; every fault is one ``InputError`` naming
    the file (and field)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from topicslab.taxonomy import VERSIONS, resolve

    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a directory (expected a learned-attack model directory)",
                         file=str(d))
    meta_file, weights_file = d / META, d / WEIGHTS
    for f in (meta_file, weights_file):
        if not f.is_file():
            raise InputError("file missing (not a learned-attack model directory?)",
                             file=str(f))
    mf = str(meta_file)
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid JSON: {' '.join(str(exc).split())}", file=mf) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"not a {FORMAT} file", file=mf, field="format")
    if meta.get("format_version") != FORMAT_VERSION:
        raise InputError(f"unsupported format_version {meta.get('format_version')!r}",
                         file=mf, field="format_version")
    version = meta.get("taxonomy")
    if version not in VERSIONS:
        raise InputError(f"unknown taxonomy {version!r}", file=mf, field="taxonomy")
    topics = _positive(meta, "topics", mf)
    if topics != resolve(version).size:
        raise InputError(f"taxonomy {version} has {resolve(version).size} topics, not "
                         f"{topics}", file=mf, field="topics")
    weeks = _positive(meta, "weeks", mf)
    lookback = _positive(meta, "lookback", mf)
    raw = meta.get("config")
    if not isinstance(raw, dict):
        raise InputError("missing or not an object", file=mf, field="config")
    known = set(LearnedAttackConfig.__dataclass_fields__)
    try:
        cfg = LearnedAttackConfig(**{k: v for k, v in raw.items() if k in known})
    except InputError as exc:
        raise InputError(exc.message, file=mf, field=f"config.{exc.field}") from None
    except TypeError as exc:
        raise InputError(str(exc), file=mf, field="config") from None
    dev = resolve_device(device)
    att = _new_attack(topics, version, weeks, lookback, cfg, "cpu")
    try:
        state = load_file(str(weights_file))
    except (SafetensorError, OSError, ValueError) as exc:
        raise InputError(f"cannot read safetensors ({' '.join(str(exc).split())})",
                         file=str(weights_file)) from None
    for prefix, module in (("encoder.", att.encoder), ("scorer.", att.scorer)):
        expected = module.state_dict()
        for key, ref in expected.items():
            t = state.get(prefix + key)
            if t is None:
                raise InputError(f"no tensor named {prefix + key!r}", file=str(weights_file),
                                 field=prefix + key)
            if tuple(t.shape) != tuple(ref.shape):
                raise InputError(f"shape {tuple(t.shape)}, model.json implies "
                                 f"{tuple(ref.shape)}", file=str(weights_file),
                                 field=prefix + key)
            if not torch.isfinite(t).all():
                raise InputError("holds non-finite values", file=str(weights_file),
                                 field=prefix + key)
        module.load_state_dict({k: state[prefix + k].to(expected[k].dtype) for k in expected})
    att.encoder.to(dev).eval()
    att.scorer.to(dev).eval()
    att.device = dev
    training = meta.get("training")
    att.metadata = training if isinstance(training, dict) else {}
    return att


# -------------------------------------------------------------------------------- inference


def _distinct_traces(site1: npt.NDArray[np.integer]
                     ) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int64],
                                npt.NDArray[np.int64]]:
    """(distinct rows, row -> distinct index, users per distinct row)."""
    arr = np.ascontiguousarray(site1, dtype=np.int16)
    c = arr.shape[1]
    if c <= 6:  # pack the row into one int64 (topics + 1 < 2^10)
        code = np.zeros(arr.shape[0], dtype=np.int64)
        for s in range(c):
            code = (code << 10) | (arr[:, s].astype(np.int64) + 1)
        _, first, inverse, counts = np.unique(code, return_index=True, return_inverse=True,
                                              return_counts=True)
        return arr[first], inverse.astype(np.int64), counts.astype(np.int64)
    uniq, inverse, counts = np.unique(arr, axis=0, return_inverse=True, return_counts=True)
    return uniq, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


def _search(base: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], k: int
            ) -> npt.NDArray[np.int64]:
    try:
        import faiss
    except ImportError:  # pragma: no cover - faiss-cpu is a dependency
        raise InputError("the learned attack's retrieval needs faiss: pip install faiss-cpu",
                         field="attack") from None
    index = faiss.IndexFlatIP(base.shape[1])
    index.add(np.ascontiguousarray(base))
    _, found = index.search(np.ascontiguousarray(queries), k)
    return np.asarray(found, dtype=np.int64)


@torch.no_grad()
def attack_outcomes(
    attack: LearnedAttack,
    site1: npt.NDArray[np.integer],
    queries: npt.NDArray[np.integer],
    true_rows: npt.NDArray[np.int64],
    *,
    top_k: int = DEFAULT_TOP_K,
    batch: int = 1024,
    progress: bool = False,
    timings: dict[str, float] | None = None,
) -> tuple[TargetOutcomes, npt.NDArray[np.bool_]]:
    """The learned attack on each query: retrieval of ``top_k`` candidate traces by embedding
    (faiss, exact inner product), re-ranking by the pair scorer.

    Returns the outcomes (argmax set: every website-1 user whose trace has the best score
    among the retrieved; ``best_score`` the best logit) and ``retrieved``: ``bool[Q]``, whether
    each query's true user was among the ``top_k`` (the retrieval recall is its mean; a true
    row of -1 counts as not retrieved). ``timings`` (optional) receives the seconds of each
    stage (``distinct``, ``embed``, ``search``, ``rerank``).
    """
    s1, q = np.asarray(site1), np.asarray(queries)
    attack._check(s1, "website 1's traces")
    attack._check(q, "queries")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k must be a positive integer, got {top_k!r}", field="top_k")
    rows = np.asarray(true_rows, dtype=np.int64)
    n_q = q.shape[0]
    if rows.shape != (n_q,):
        raise ValueError("one true row per query")
    clock = {"start": time.perf_counter()}
    uniq, inverse, counts = _distinct_traces(s1)
    true_u = np.where(rows >= 0, inverse[np.maximum(rows, 0)], -1)
    k = min(top_k, uniq.shape[0])
    clock["distinct"] = time.perf_counter()
    base, emb_q = attack.embed(uniq), attack.embed(q)
    clock["embed"] = time.perf_counter()
    found = _search(base, emb_q, k)
    clock["search"] = time.perf_counter()
    size = np.zeros(n_q, dtype=np.int64)
    inside = np.zeros(n_q, dtype=np.bool_)
    best = np.full(n_q, -np.inf)
    retrieved = (found == true_u[:, None]).any(1) & (true_u >= 0)
    dev = attack.device
    uniq_t = torch.from_numpy(uniq.astype(np.int64)).to(dev)
    attack.scorer.eval()
    with task("learned attack: re-ranking", n_q, enabled=progress) as advance:
        for lo in range(0, n_q, batch):
            hi = min(n_q, lo + batch)
            cand = found[lo:hi]
            valid = cand >= 0
            cid = torch.from_numpy(np.where(valid, cand, 0).reshape(-1)).to(dev)
            qt = torch.from_numpy(np.ascontiguousarray(q[lo:hi], dtype=np.int64)).to(dev)
            t1 = uniq_t[cid]
            e1 = attack.encoder(t1)
            eq = attack.encoder(qt)
            logit = attack.scorer(e1, t1, eq.repeat_interleave(k, 0),
                                  qt.repeat_interleave(k, 0)).double().cpu().numpy()
            logit = np.where(valid, logit.reshape(hi - lo, k), -np.inf)
            top = logit.max(1)
            members = logit == top[:, None]
            size[lo:hi] = (np.where(members, counts[np.where(valid, cand, 0)], 0)).sum(1)
            inside[lo:hi] = (members & (cand == true_u[lo:hi, None])).any(1)
            best[lo:hi] = top
            advance(hi - lo)
    inside &= true_u >= 0
    clock["rerank"] = time.perf_counter()
    if timings is not None:
        names = list(clock)
        for a, b in itertools.pairwise(names):
            timings[b] = clock[b] - clock[a]
    return TargetOutcomes(size, inside, best), retrieved


def measure_risk_learned(
    sets: TopicSets,
    attack: LearnedAttack,
    *,
    weeks: int | None = None,
    compare: Sequence[str] = ("hamming", "asymmetric"),
    top_k: int = DEFAULT_TOP_K,
    targets: int | str = 10240,
    trials: int = 10,
    seed: int = 0,
    mechanism: Mechanism | None = None,
    progress: bool = True,
) -> Any:
    """``measure_risk`` with the learned attack beside the hand-made ``compare`` attacks.

    The trials are those of ``measure_risk`` (same API secrets, targets and tie-break streams
    for the same ``seed``), so the hand-made attacks' figures equal ``measure_risk``'s. The
    learned attack's description gains ``retrieval_recall`` (per trial) and ``top_k``.
    Returns a ``RiskResult``.
    """
    from topicslab.attacks.protocol import (
        AttackRisk,
        ReidProtocol,
        RiskResult,
        _attack_instances,
        _mech_dict,
        _mechanism_for,
        _pick_targets,
        _tie_rng,
        evaluate_attacks,
        trial_api_seed,
    )

    r = attack.weeks if weeks is None else weeks
    if r != attack.weeks:
        raise InputError(f"the learned attack was trained on r = {attack.weeks} call-weeks, "
                         f"not {r}", field="weeks")
    protocol = ReidProtocol(targets=targets, trials=trials)
    mech = _mechanism_for(sets, mechanism)
    if mech.lookback != attack.lookback or mech.tax.size != attack.topics:
        raise InputError(f"the learned attack was trained with lookback {attack.lookback} on "
                         f"taxonomy {attack.taxonomy}", field="lookback")
    c = r + mech.lookback - 1
    if sets.n_weeks < c:
        raise InputError(f"observing {r} call-week(s) with lookback {mech.lookback} needs {c} "
                         f"weeks of profiles; the sets have {sets.n_weeks}", field="weeks")
    others = _attack_instances(list(compare)) if compare else []
    results = {a.name: AttackRisk(a.name) for a in others}
    if "learned" in results:
        raise InputError("compare lists the hand-made attacks only", field="attack")
    learned = AttackRisk("learned")
    recall: list[float] = []
    notes: list[str] = []
    per_trial: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    n_targets = 0
    with task("re-identification trials", protocol.trials, enabled=progress) as advance:
        for trial in range(protocol.trials):
            t0 = time.perf_counter()
            rng = np.random.default_rng([seed, trial])
            count = protocol.target_count(sets.n_users, notes if trial == 0 else None)
            chosen = _pick_targets(rng, sets.n_users, count)
            api_seed = trial_api_seed(seed, trial)
            site1 = observe(sets.sets, [0], weeks=r, seed=api_seed, mechanism=mech,
                            user_ids=sets.user_ids)[0]
            site2 = observe(sets.sets[chosen], [1], weeks=r, seed=api_seed, mechanism=mech,
                            user_ids=sets.user_ids[chosen])[0]
            for a in others:
                a.fit(site1, mech)
            t_hand = time.perf_counter()
            outs = evaluate_attacks(site1, site2, chosen, others) if others else []
            for a, o in zip(others, outs, strict=True):
                results[a.name].add(o, o.sample(_tie_rng(seed, trial, a.name)))
            t_learn = time.perf_counter()
            stages: dict[str, float] = {}
            o, got = attack_outcomes(attack, site1, site2, chosen, top_k=top_k,
                                     timings=stages)
            learned.add(o, o.sample(_tie_rng(seed, trial, "learned")))
            recall.append(float(got.mean()) if len(got) else 0.0)
            n_targets = len(chosen)
            per_trial.append({"trial": trial, "users": sets.n_users, "targets": n_targets,
                              "api_seed": api_seed, "retrieval_recall": recall[-1],
                              "hand_made_seconds": t_learn - t_hand,
                              "learned_seconds": time.perf_counter() - t_learn,
                              "learned_stages": stages,
                              "seconds": time.perf_counter() - t0})
            advance(1)
    for a in others:
        results[a.name].description = a.describe()
    learned.description = {**attack.describe(), "top_k": top_k, "retrieval_recall": recall,
                           "retrieval_recall_mean": float(np.mean(recall))}
    results["learned"] = learned
    return RiskResult(results, sets.n_users, n_targets, protocol.trials, r, c,
                      time.perf_counter() - t_start, "random-user", "exact", seed,
                      _mech_dict(mech), per_trial, notes)


__all__ = [
    "DEFAULT_TOP_K",
    "LearnedAttack",
    "LearnedAttackConfig",
    "PairScorer",
    "TraceEncoder",
    "attack_outcomes",
    "load_attack",
    "measure_risk_learned",
    "resolve_device",
    "save_attack",
    "train_attack",
]
