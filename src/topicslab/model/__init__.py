"""The type-mixture model of topic-set sequences (Dick et al. §5-6, Algorithm 2,
Appendix A): exact statistics, fitting, sampling, model files.

Public names:
    TypeMixture                      theta [T, r, k, m] (persistent: [T, M, k, m] + stay,
                                     mode_weights, mode_stay) + taxonomy + metadata;
                                     q_single() / q_within() / q_across() closed forms
    PersistentTypes, PaperTypes      the model variants (persistent: the default)
    make_variant(name, types, weeks, cyclic=False, modes=None)   a variant by name
    fit(stats, model="persistent", optimizer="default", *, types=None, weeks=4,
        device="auto", seed=0, max_minutes=None, target=None, progress=True,
        checkpoint_dir=None, ...) -> FitResult
    FullObjective, PaperAdam         the optimisers (strategy objects)
    FitResult                        model, history, seconds, loss, loss_float64, stopped
    NOISE_AT_START                   why a fit that stops at the noise floor at step 0 can't carry
                                     the risk (the release is too small)
    sample(model, n_users, *, seed, weeks=None, chunk_users=...) -> TopicSets
    sample_to_file(model, path, n_users, *, seed, weeks=None, format="parquet"|"tfrecord",
                   progress=True) -> list[str]
    sampler(model, *, seed, weeks=None) -> draw(first_user, n)   sample's users a range at a time
    save_model(dir, model) / load_model(dir)
    export_release_parameters(path, model) / import_release_parameters(path, taxonomy)
    closed_forms(theta, week_pairs, tolerance=0)
                                     differentiable exact statistics (torch; a tolerance
                                     > 0 truncates the pair terms' expansion within it)
    persistent_forms(theta, mode_weights, mode_stay, log_slot_stay, lags, tolerance=0)
                                     the same for persistent types
    Objective, exact_loss, QualityBar   J of the paper, its float64 check, the quality bar
    Targets, check_statistics, n_terms, target_terms, model_terms   targets and term layout

Import boundary: this package reads only DP statistics (``topicslab.dp`` objects or the
release files) — it never imports ``topicslab.population`` (a test enforces it).
"""

from topicslab.model.closed_forms import closed_forms, persistent_forms
from topicslab.model.files import (
    export_release_parameters,
    import_release_parameters,
    load_model,
    save_model,
)
from topicslab.model.fit import (
    NOISE_AT_START,
    OPTIMIZERS,
    FitResult,
    FullObjective,
    PaperAdam,
    fit,
    resolve_device,
)
from topicslab.model.objective import Objective, QualityBar, exact_loss
from topicslab.model.sample import alias_tables, sample, sample_to_file, sampler, week_map
from topicslab.model.targets import (
    Targets,
    check_statistics,
    model_terms,
    n_terms,
    statistics_fingerprint,
    target_terms,
)
from topicslab.model.typemixture import TypeMixture
from topicslab.model.variants import (
    VARIANT_NAMES,
    ModelVariant,
    PaperTypes,
    PersistentTypes,
    make_variant,
)

__all__ = [
    "NOISE_AT_START",
    "OPTIMIZERS",
    "VARIANT_NAMES",
    "FitResult",
    "FullObjective",
    "ModelVariant",
    "Objective",
    "PaperAdam",
    "PaperTypes",
    "PersistentTypes",
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
    "make_variant",
    "model_terms",
    "n_terms",
    "persistent_forms",
    "resolve_device",
    "sample",
    "sample_to_file",
    "sampler",
    "save_model",
    "statistics_fingerprint",
    "target_terms",
    "week_map",
]
