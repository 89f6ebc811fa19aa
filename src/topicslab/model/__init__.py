"""The type-mixture model of topic-set sequences (spec 01 §4-§6; paper §5, Algorithm 2,
Appendix A): exact statistics, fitting, sampling, model files.

Public names:
    TypeMixture                      theta [T, r, k, m] + taxonomy + metadata;
                                     q_single() / q_within() / q_across() closed forms
    fit(stats, *, types=500, weeks=4, optimizer="default"|"paper", device="auto", seed=0,
        max_minutes=None, target=None, progress=True, checkpoint_dir=None, ...) -> FitResult
    FitResult                        model, history, seconds, loss, loss_float64, stopped
    sample(model, n_users, *, seed, weeks=None, chunk_users=...) -> TopicSets
    sample_to_file(model, path, n_users, *, seed, weeks=None, format="parquet"|"tfrecord",
                   progress=True) -> list[str]
    save_model(dir, model) / load_model(dir)
    export_release_parameters(path, model) / import_release_parameters(path, taxonomy)
    closed_forms(theta, week_pairs)  differentiable exact statistics (torch)
    Objective, exact_loss, QualityBar   J of the paper, its float64 check, the quality bar
    Targets, check_statistics, n_terms, target_terms, model_terms   targets and term layout

Import boundary: this package reads only DP statistics (``topicslab.dp`` objects or the
release files) — it never imports ``topicslab.population`` (a test enforces it).
"""

from topicslab.model.closed_forms import closed_forms
from topicslab.model.files import (
    export_release_parameters,
    import_release_parameters,
    load_model,
    save_model,
)
from topicslab.model.fit import OPTIMIZERS, FitResult, fit, resolve_device
from topicslab.model.objective import Objective, QualityBar, exact_loss
from topicslab.model.sample import alias_tables, sample, sample_to_file, week_map
from topicslab.model.targets import (
    Targets,
    check_statistics,
    model_terms,
    n_terms,
    statistics_fingerprint,
    target_terms,
)
from topicslab.model.typemixture import TypeMixture

__all__ = [
    "OPTIMIZERS",
    "FitResult",
    "Objective",
    "QualityBar",
    "Targets",
    "TypeMixture",
    "alias_tables",
    "check_statistics",
    "closed_forms",
    "exact_loss",
    "export_release_parameters",
    "fit",
    "import_release_parameters",
    "load_model",
    "model_terms",
    "n_terms",
    "resolve_device",
    "sample",
    "sample_to_file",
    "save_model",
    "statistics_fingerprint",
    "target_terms",
    "week_map",
]
