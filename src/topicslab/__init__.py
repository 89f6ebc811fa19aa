"""topicslab: simulate, release and attack interest-based advertising APIs.

Modules follow the papers' vocabulary and data flows one way:
``taxonomy`` -> ``population`` -> ``api`` (site traces) / ``dp`` -> ``model`` -> ``validate``.
"""

__version__ = "0.1.0"
