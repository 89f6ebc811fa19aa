"""Which taxonomy a file's topic ids belong to, for files that do not say.

Public functions:
    detect_taxonomy(topic_ids) -> Taxonomy
    taxonomy_for(requested, stored, topic_ids, *, file) -> Taxonomy

Chrome's Topics API has shipped two taxonomies (the taxonomy files of the Topics API
explainer, shipped in ``topicslab.taxonomy``): v1 with ids 1..349 and v2 with 469 ids in
1..629. 160 v1 ids are absent from v2 (v2 removed them) and every id above 349 is v2's, so
most real profiles name their version by their ids. Rule: v2 if every id is a v2 id (v2 is
the current taxonomy, and the release of Dick et al., "Differentially Private Synthetic Data
Release for Topics API Outputs", uses it), else v1 if every id is a v1 id, else v2 (the
reader then reports the first id v2 lacks, with its file, row and field).
Files with their own metadata (topicslab Parquet) keep the taxonomy it names; the caller's
choice (``taxonomy=``, the command line's ``--taxonomy``) overrides both.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer_array
from topicslab.io._common import pick_taxonomy
from topicslab.taxonomy import Taxonomy, load

__all__ = ["detect_taxonomy", "taxonomy_for"]


def detect_taxonomy(topic_ids: npt.ArrayLike) -> Taxonomy:
    """The taxonomy ``topic_ids`` (any shape; negatives are empty slots) belong to."""
    # a fraction or NaN was cast (1.5 read as topic 1, NaN as an arbitrary id), text or None
    # was NumPy's ValueError or TypeError
    ids = np.asarray(integer_array(topic_ids, "topic_ids"), dtype=np.int64).ravel()
    ids = np.unique(ids[ids >= 0])
    v2 = load("v2")
    if v2.is_known(ids).all():
        return v2
    v1 = load("v1")
    return v1 if v1.is_known(ids).all() else v2


def taxonomy_for(requested: Taxonomy | str | None, stored: str | None,
                 topic_ids: npt.ArrayLike, *, file: str) -> Taxonomy:
    """The caller's taxonomy, else the file's metadata, else the one the ids detect."""
    if requested is None and stored is None:
        return detect_taxonomy(topic_ids)
    return pick_taxonomy(requested, stored, file=file)
