"""Topics API taxonomies: v1 (349 topics) and v2 (469 topics, ids 1..629 with gaps).

Public names:
    load(version="v2") -> Taxonomy     the shipped taxonomy (cached)
    resolve(taxonomy_or_version)       accept either form
    Taxonomy                           ids, labels, parent, bucket; index()/id_of() conversions
    HIGH, STANDARD                     utility bucket codes
"""

from topicslab.taxonomy.core import HIGH, STANDARD, VERSIONS, Taxonomy, load, resolve

__all__ = ["HIGH", "STANDARD", "VERSIONS", "Taxonomy", "load", "resolve"]
