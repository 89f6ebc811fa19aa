"""The dictionary D and the term frequency φ_D(x | X) (Mac Aonghusa & Leith §4.4, Eq. (13)).

An observation ("advert") is a sequence of filtered terms: words after preprocessing, or
taxonomy topic ids when the observed adverts are Topics API answers. ``φ_D(x | X)`` is the share
of the terms of X equal to x when x is in the dictionary, 0 otherwise; |X| counts *all* filtered
terms of X, so out-of-vocabulary terms dilute the in-vocabulary ones (in the worked example two
of five terms are known and each gets 1/5).

Public names:
    Dictionary                    terms (first-occurrence order) and their indices
    Dictionary.from_documents     the terms of a training set
    Dictionary.encode(docs)       CSR term indices, -1 for out-of-vocabulary terms
    Dictionary.phi(docs, groups)  φ rows, or their sums per group (eqs 14-16)
    Encoded                       the CSR form
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from topicslab.errors import InputError

Term = Hashable


@dataclass(frozen=True)
class Encoded:
    """Documents as CSR: ``index[indptr[i]:indptr[i+1]]`` are the term indices of document i.

    ``-1`` marks a term outside the dictionary (it still counts in |X|).
    """

    indptr: npt.NDArray[np.int64]
    index: npt.NDArray[np.int64]

    @property
    def n_docs(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """|X| of each document (all filtered terms)."""
        return np.diff(self.indptr)


@dataclass(frozen=True)
class Dictionary:
    """The dictionary D: distinct terms, indexed ``0..|D|-1``."""

    terms: tuple[Term, ...]
    _index: dict[Term, int] = field(repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        index = {t: i for i, t in enumerate(self.terms)}
        if len(index) != len(self.terms):
            raise InputError("dictionary terms must be distinct")
        object.__setattr__(self, "_index", index)

    @classmethod
    def from_documents(cls, docs: Iterable[Sequence[Term]]) -> Dictionary:
        """D = the terms of the documents, in order of first occurrence."""
        seen: dict[Term, None] = {}
        for doc in docs:
            for term in _check_doc(doc):
                seen.setdefault(term, None)
        return cls(tuple(seen))

    def __len__(self) -> int:
        return len(self.terms)

    def __contains__(self, term: object) -> bool:
        return term in self._index

    def index_of(self, term: Term) -> int:
        """Index of a term, -1 when it is not in D."""
        return self._index.get(term, -1)

    def encode(self, docs: Iterable[Sequence[Term]]) -> Encoded:
        """Term indices of each document (CSR), ``-1`` for out-of-vocabulary terms."""
        lengths: list[int] = []
        flat: list[int] = []
        get = self._index.get
        for doc in docs:
            doc = _check_doc(doc)
            lengths.append(len(doc))
            flat.extend(get(t, -1) for t in doc)
        indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return Encoded(indptr, np.asarray(flat, dtype=np.int64))

    def phi(
        self,
        docs: Iterable[Sequence[Term]] | Encoded,
        groups: npt.ArrayLike | None = None,
        n_groups: int | None = None,
    ) -> npt.NDArray[np.float64]:
        """φ_D(w | a) for every document (eq 13), or its sums over documents per group.

        Args:
            docs: the documents (or their ``encode``\\ d form).
            groups: optional ``int[n_docs]`` group of each document (``-1``: ignored); then the
                result row g is ``Σ_{a in group g} φ_D(· | a)``: eq 14 with one group per probe,
                eqs 15-16 with one group per label.
            n_groups: number of groups (default ``max(groups) + 1``).

        Returns:
            ``float64[n_docs, |D|]`` or ``float64[n_groups, |D|]``.
        """
        enc = docs if isinstance(docs, Encoded) else self.encode(docs)
        lengths = enc.lengths
        doc_of = np.repeat(np.arange(enc.n_docs, dtype=np.int64), lengths)
        # each term occurrence weighs 1/|X| of its document (eq 13)
        weight = 1.0 / np.repeat(np.maximum(lengths, 1), lengths)
        if groups is None:
            row, n_rows = doc_of, enc.n_docs
        else:
            g = np.asarray(groups, dtype=np.int64)
            if g.shape != (enc.n_docs,):
                raise InputError(f"groups must have one entry per document ({enc.n_docs}), "
                                 f"got shape {g.shape}", field="groups")
            n_rows = int(g.max()) + 1 if n_groups is None and g.size else int(n_groups or 0)
            if g.size and (g.max() >= n_rows or g.min() < -1):
                raise InputError(f"groups must be in -1..{n_rows - 1}", field="groups")
            row = g[doc_of]
        keep = (enc.index >= 0) & (row >= 0)
        out = np.zeros(n_rows * len(self.terms), dtype=np.float64)
        np.add.at(out, row[keep] * len(self.terms) + enc.index[keep], weight[keep])
        return out.reshape(n_rows, len(self.terms))


def _check_doc(doc: Sequence[Term]) -> Sequence[Term]:
    if isinstance(doc, str | bytes):
        raise InputError("an observation must be a sequence of terms, not a string "
                         "(preprocess the text first)")
    return doc


__all__ = ["Dictionary", "Encoded", "Term"]
