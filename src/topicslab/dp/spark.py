"""Spark backend of the DP statistics: bounding and counting as a Spark job over Parquet.

Plain PySpark, not PipelineDP: the release's guarantee rests on this package's exact
contribution bounding (``bounding``), discrete Gaussian noise and ledger (``statistics``);
Spark only runs the private, embarrassingly parallel part — bounding and counting — and the
driver then calls the shared ``release_counts``. See docs/cluster.md for the reasoning.

The job: ``spark.read.parquet(path)`` (any file system Spark reads, split by row group) →
``mapInArrow``: each partition turns its Arrow batches into dense sets (``io.arrow_to_sets``,
``topicslab.io``'s conversion rules), bounds and counts them with the same numba kernels as
the local engine (``stream.CountAccumulator``) and emits its non-zero counts as
``(query, pair code, count)`` rows plus audit rows → ``groupBy(query, code).sum`` → the driver
collects at most ``(2W-1)·m²`` rows (660K for two weeks of v2). Padding is keyed by
``(seed, user_id, week)`` with one seed for the whole job, so the counts equal the local
engine's exactly, whatever the partitioning.

Public names:
    spark_statistics(path, *, master, spark, ...) -> DPStatistics  (ledger engine "spark")
    spark_counts(path, *, master, spark, ...) -> BoundedCounts      exact bounded counts
    spark_session(master=None, spark=None)                         the session used

pyspark (with its ``sql`` extra: pandas, pyarrow) is imported lazily: the package works
without it, and using this module without it raises a one-line ``TopicsLabError`` naming
``pip install 'topicslab[spark]'``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import secrets
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from topicslab._json import dumps
from topicslab.dp.bounding import BoundingReport
from topicslab.dp.counts import PairCounts
from topicslab.dp.params import (
    Accounting,
    BoundMode,
    ContributionBound,
    PrivacyBudget,
    budget_of,
    contribution_of,
    refuse_overlap,
)
from topicslab.dp.statistics import DPStatistics
from topicslab.dp.stream import (
    BoundedCounts,
    CountAccumulator,
    ParquetPlan,
    check_split_early,
    multiset_fingerprint,
    parquet_plan,
    ranges_disjoint,
    release_bounded,
)
from topicslab.errors import InputError, TopicsLabError
from topicslab.io.arrow import arrow_to_sets
from topicslab.taxonomy import Taxonomy, resolve

__all__ = ["spark_counts", "spark_session", "spark_statistics"]

INSTALL_HINT = "pip install 'topicslab[spark]'"
#: Arrow batch size handed to each Python worker (users); bounds worker memory (~100 B/user).
BATCH_USERS = 1 << 18
_OUT_SCHEMA = "kind int, code long, value long, aux long, msg string"
# kinds of output rows: >= 0 the count query (within weeks, then across pairs)
_K_AUDIT, _K_ERROR, _K_LANES, _K_RANGE = -1, -2, -3, -4
_REPORT = tuple(f.name for f in dataclasses.fields(BoundingReport))
_N_USERS_CODE = len(_REPORT)
_LIMB = 16  # fingerprint lanes travel as 16-bit limbs: Spark's (ANSI) long sums never overflow


def _require_pyspark() -> None:
    try:
        import pandas  # noqa: F401  (pyspark's Arrow UDFs need it)
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise TopicsLabError(f"the Spark engine needs pyspark with pandas ({exc.name} is "
                             f"missing): {INSTALL_HINT}") from None


#: the log4j2 configuration of a quiet session: no log records at all (Spark's default
#: profile printed ~9 lines of start-up warnings above the command's one line)
_QUIET_LOG4J2 = """status = off
rootLogger.level = off
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %m%n
"""


def _quiet_config(config: dict[str, str], log4j2: str) -> dict[str, str]:
    """``config`` with Spark's console progress bars off and the driver's log4j2
    configuration ``log4j2`` (the user's own settings of these keys win)."""
    quiet = dict(config)
    quiet.setdefault("spark.ui.showConsoleProgress", "false")
    if "-Dlog4j2.configurationFile" not in quiet.get("spark.driver.extraJavaOptions", ""):
        options = quiet.get("spark.driver.extraJavaOptions", "")
        quiet["spark.driver.extraJavaOptions"] = (
            f"{options} -Dlog4j2.configurationFile=file:{log4j2}".strip())
    return quiet


@contextlib.contextmanager
def _jvm_output_aside(quiet: bool) -> Iterator[Any]:
    """While a new Spark JVM starts: its standard error (the JVM's own "WARNING: Using
    incubator modules", which no log configuration reaches, and anything it or its Python
    workers print later) goes to an unnamed temporary file, not the terminal; yields that file
    (``None`` when not ``quiet``), whose last line tells why a start failed."""
    if not quiet:
        yield None
        return
    import tempfile

    with tempfile.TemporaryFile() as aside:
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        saved = os.dup(2)
        try:
            os.dup2(aside.fileno(), 2)
            yield aside
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _last_line(aside: Any) -> str | None:
    """The last non-empty line the JVM wrote aside (why it could not start), if any."""
    if aside is None:
        return None
    try:
        aside.seek(0)
        lines = [ln.strip() for ln in aside.read().decode(errors="replace").splitlines()]
    except (OSError, ValueError):
        return None
    lines = [ln for ln in lines if ln and not ln.startswith("WARNING: Using incubator")]
    return lines[-1][:200] if lines else None


@contextlib.contextmanager
def spark_session(master: str | None = None, spark: Any = None,
                  config: dict[str, str] | None = None, *,
                  quiet: bool = False) -> Iterator[Any]:
    """The SparkSession to run on: ``spark`` if given, else the active session, else a new
    one (stopped on exit) on ``master`` with the extra Spark ``config``; ``master=None``
    means spark-submit's master when launched by spark-submit, else ``local[2]``.

    ``quiet``: a new session prints nothing on the terminal -- no log records, no ``[Stage
    N]`` progress bars, none of the JVM's own start-up lines (the command line's one-line
    contract; ``topicslab --debug`` shows them)."""
    _require_pyspark()
    if spark is not None:
        yield spark
        return
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    if quiet:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="topicslab-spark-") as tmp:
            # the JVM reads its log configuration once, at start-up
            log4j2 = os.path.join(tmp, "log4j2.properties")
            with open(log4j2, "w", encoding="utf-8") as fh:
                fh.write(_QUIET_LOG4J2)
            with _new_session(master, _quiet_config(config or {}, log4j2), True) as session:
                session.sparkContext.setLogLevel("OFF")  # a JVM started earlier, too
                yield session
        return
    with _new_session(master, config or {}, False) as session:
        yield session


@contextlib.contextmanager
def _new_session(master: str | None, config: dict[str, str], quiet: bool) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("topicslab-stats")
    for key, val in config.items():
        builder = builder.config(key, val)
    launched_by_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    url = master if master else (None if launched_by_submit else "local[2]")
    if url is not None:
        builder = builder.master(url)
    is_local = url is not None and url.startswith("local")
    set_python = is_local and "PYSPARK_PYTHON" not in os.environ
    if set_python:
        # local workers must run this interpreter (the one with topicslab installed)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if url is not None and not is_local:
        # executors may not be able to write numba's cache next to the installed package
        builder = builder.config("spark.executorEnv.NUMBA_CACHE_DIR",
                                 os.environ.get("NUMBA_CACHE_DIR",
                                                "/tmp/topicslab-numba-cache"))
    if url == "yarn" and not ({"HADOOP_CONF_DIR", "YARN_CONF_DIR"} & set(os.environ)):
        # Spark refuses it at start-up, and the line blamed Java and pyspark
        raise InputError("--master yarn reads the cluster from the environment: set "
                         "HADOOP_CONF_DIR or YARN_CONF_DIR to its configuration directory (or "
                         "use local[N] or spark://HOST:PORT)", field="--master")
    why = None
    try:
        with _jvm_output_aside(quiet) as aside:
            try:
                session = builder.getOrCreate()
            except Exception:
                why = _last_line(aside)
                raise
    except Exception as exc:  # py4j / pyspark raise many types; all mean "no Spark"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if why:  # (the JVM's own reason, which went aside)
            first = f"{first}: {why}"
        if url is not None and not is_local:  # (it blamed Java and pyspark, both there)
            raise InputError(f"Spark could not start on the master {url} ({first}): check "
                             "that the cluster is up and reachable from here",
                             field="--master") from None
        raise TopicsLabError(f"Spark could not start ({first}); the Spark engine needs Java "
                             f"17+ (JAVA_HOME) and {INSTALL_HINT}") from None
    finally:
        if set_python:  # read by the SparkContext at start-up; do not leak it further
            os.environ.pop("PYSPARK_PYTHON", None)
    try:
        yield session
    finally:
        session.stop()


@dataclass(frozen=True)
class _Job:
    """What every partition needs (pickled to the executors)."""

    taxonomy: Taxonomy
    fields: tuple[str, ...]
    k: int
    bound: BoundMode
    pad_seed: int
    strict: bool
    file: str
    threads: int


def _rows(kind: npt.ArrayLike, code: npt.ArrayLike, value: npt.ArrayLike,
          aux: npt.ArrayLike | None = None, msg: str | None = None) -> pa.RecordBatch:
    kind = np.asarray(kind, dtype=np.int32)
    n = kind.shape[0]
    return pa.RecordBatch.from_arrays(
        [pa.array(kind, pa.int32()), pa.array(np.asarray(code, dtype=np.int64), pa.int64()),
         pa.array(np.asarray(value, dtype=np.int64), pa.int64()),
         pa.array(np.zeros(n, np.int64) if aux is None else np.asarray(aux, np.int64),
                  pa.int64()),
         pa.array([msg] * n, pa.string())],
        names=["kind", "code", "value", "aux", "msg"])


def _partition_counts(job: _Job, batches: Iterator[pa.RecordBatch]
                      ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body (runs on the executors): bound + count this partition's users."""
    import numba
    from pyspark import TaskContext

    # one Spark task = spark.task.cpus cores: keep numba's pool to that
    limit = int(getattr(numba.config, "NUMBA_NUM_THREADS", 1))
    numba.set_num_threads(max(1, min(job.threads, limit)))
    ctx = TaskContext.get()
    pid = ctx.partitionId() if ctx is not None else 0
    m = job.taxonomy.size
    acc = CountAccumulator(m, len(job.fields), k=job.k, bound=job.bound, pad_seed=job.pad_seed)
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            got = arrow_to_sets([batch.column(i) for i in range(batch.num_columns)],
                                job.fields, taxonomy=job.taxonomy, strict=job.strict,
                                file=job.file, row_base=None, empty_k=1, name_users=True)
            acc.add(got.user_ids, got.sets, file=job.file)
    except TopicsLabError as exc:
        # an error row instead of a failed task: the driver raises it as one clean line
        # (its parts, not its line: the driver's line named the file twice, "F: F, field")
        parts = ({"message": exc.message, "file": exc.file, "row": exc.row, "field": exc.field}
                 if isinstance(exc, InputError) else {"message": str(exc)})
        yield _rows([_K_ERROR], [pid], [0], msg=dumps(parts))
        return
    flat = acc.hist.reshape(acc.hist.shape[0], -1)
    q, code = np.nonzero(flat)
    yield _rows(q, code, flat[q, code])
    audit = np.append(acc.report, acc.n_users)
    limbs = [(lane >> (_LIMB * j)) & ((1 << _LIMB) - 1) for lane in acc.lanes for j in range(4)]
    yield _rows(np.full(audit.shape[0], _K_AUDIT), np.arange(audit.shape[0]), audit)
    yield _rows(np.full(8, _K_LANES), np.arange(8), limbs)
    if acc.ranges:
        lo, hi = zip(*acc.ranges, strict=True)
        yield _rows(np.full(len(lo), _K_RANGE), (pid << 24) + np.arange(len(lo)), lo, hi)


def _footer_plan(path: str, taxonomy: Taxonomy | str | None) -> ParquetPlan | None:
    """The taxonomy from the first file's footer, when pyarrow can reach it."""

    try:
        if "://" in path and not path.startswith("file://"):
            import pyarrow.fs as pafs

            fs, inner = pafs.FileSystem.from_uri(path)
            info = fs.get_file_info(inner)
            if info.type == pafs.FileType.Directory:
                sel = fs.get_file_info(pafs.FileSelector(inner))
                names = sorted(f.path for f in sel if f.path.endswith((".parquet", ".pq"))
                               and not os.path.basename(f.path).startswith((".", "_")))
                inner = names[0]
            schema = pq.read_schema(inner, filesystem=fs)
        else:
            from topicslab.dp.stream import _parquet_files

            local = path.removeprefix("file://")
            schema = pq.read_schema(_parquet_files(local)[0])
    except (InputError, pa.ArrowException, OSError, IndexError, ValueError):
        return None
    try:
        return parquet_plan(schema, file=path, taxonomy=taxonomy)
    except InputError:
        return None


def spark_counts(
    path: str | os.PathLike[str],
    *,
    weeks: Sequence[int] | None = None,
    k: int | None = None,
    bound: BoundMode | None = None,
    seed: int | None = None,
    taxonomy: Taxonomy | str | None = None,
    strict: bool = True,
    master: str | None = None,
    spark: Any = None,
    batch_users: int = BATCH_USERS,
    contribution: ContributionBound | None = None,
    quiet: bool = False,
) -> BoundedCounts:
    """Exact pair counts of the contribution-bounded input, computed by a Spark job.

    Equal to the local engine's ``pair_counts(bound_contributions(...))`` and to
    ``stream_counts`` (same fingerprint as ``stream_counts`` too).

    Args:
        path: Parquet file or directory (any URI Spark reads: ``hdfs://``, ``s3a://`` ...),
            ``topicslab.io`` topic-set layout.
        master: Spark master URL (``None``: spark-submit's, else ``local[2]``); ignored when
            ``spark`` is given or a session is active.
        spark: an existing ``SparkSession`` to use (not stopped).
        batch_users: Arrow batch size per Python worker call.
        quiet: a new session prints nothing on the terminal (``spark_session``).
        Others: as ``stream_counts``.
    """
    if batch_users < 1:
        raise ValueError(f"batch_users must be positive, got {batch_users}")
    contribution = contribution_of(contribution, k=k, bound=bound, weeks=weeks)
    refuse_overlap(contribution, "spark")
    name = os.fspath(path)
    pad_seed = secrets.randbits(63) if seed is None else int(seed)
    with spark_session(master, spark, quiet=quiet) as session:
        return _run(session, name, contribution=contribution, pad_seed=pad_seed,
                    taxonomy=taxonomy, strict=strict, batch_users=batch_users)


def _run(session: Any, name: str, *, contribution: ContributionBound, pad_seed: int,
         taxonomy: Taxonomy | str | None, strict: bool, batch_users: int) -> BoundedCounts:
    from pyspark.sql import functions as F

    from topicslab.io._common import week_columns

    try:
        df = session.read.parquet(name)
    except Exception as exc:  # py4j / pyspark raise many types; all mean "cannot read it"
        # (a Java error, as an incomplete or unreachable URI's, was exit code 1: the JVM's
        # line is the one after "An error occurred while calling o30.parquet.")
        lines = [ln.strip().removeprefix(": ") for ln in str(exc).strip().splitlines()]
        first = next((ln for ln in lines if "Exception" in ln), lines[0] if lines else
                     "unreadable")
        raise InputError(f"cannot read as Parquet ({first})", file=name) from None
    if "user_id" not in df.columns:
        raise InputError("missing column", file=name, field="user_id")
    n_weeks = week_columns(df.columns, "epoch_{w}_topics", file=name)
    if n_weeks == 0:
        raise InputError("no week columns (expected epoch_0_topics, epoch_1_topics, ...)",
                         file=name, field="epoch_0_topics")
    plan = _footer_plan(name, taxonomy)
    tax = plan.taxonomy if plan is not None else resolve(taxonomy if taxonomy else "v2")
    w_sel = contribution.select_weeks(n_weeks)
    m = tax.size
    contribution.check_topics(m)
    k = contribution.k
    fields = tuple(f"epoch_{w}_topics" for w in w_sel)
    job = _Job(taxonomy=tax, fields=fields, k=k, bound=contribution.bound, pad_seed=pad_seed,
               strict=strict, file=name,
               threads=int(session.conf.get("spark.task.cpus", "1") or 1))
    conf_key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = session.conf.get(conf_key, None)
    session.conf.set(conf_key, str(int(batch_users)))
    try:
        rows = (df.select("user_id", *fields)
                .mapInArrow(functools.partial(_partition_counts, job), _OUT_SCHEMA)
                .groupBy("kind", "code")
                .agg(F.sum("value").alias("value"), F.sum("aux").alias("aux"),
                     F.max("msg").alias("msg")))
        table = rows.toArrow() if hasattr(rows, "toArrow") else pa.Table.from_pandas(
            rows.toPandas())
    finally:
        if old is None:
            session.conf.unset(conf_key)
        else:
            session.conf.set(conf_key, old)
    kind = np.asarray(table.column("kind").to_numpy(), dtype=np.int64)
    code = np.asarray(table.column("code").to_numpy(), dtype=np.int64)
    value = np.asarray(table.column("value").fill_null(0).to_numpy(), dtype=np.int64)
    errors = np.flatnonzero(kind == _K_ERROR)
    if errors.size:
        first_err = errors[np.argmin(code[errors])]
        parts = json.loads(table.column("msg")[int(first_err)].as_py())
        raise InputError(parts.pop("message"), **parts)
    n_q = 2 * len(w_sel) - 1
    hist = np.zeros((n_q, m * m), dtype=np.int64)
    sel = kind >= 0
    if sel.any() and (kind[sel].max() >= n_q or code[sel].max() >= m * m):
        raise RuntimeError("Spark returned counts outside the query range")
    hist[kind[sel], code[sel]] = value[sel]
    audit = np.zeros(_N_USERS_CODE + 1, dtype=np.int64)
    a_sel = kind == _K_AUDIT
    audit[code[a_sel]] = value[a_sel]
    lanes = [0, 0]
    for c, v in zip(code[kind == _K_LANES], value[kind == _K_LANES], strict=True):
        lanes[int(c) // 4] += int(v) << (_LIMB * (int(c) % 4))
    r_sel = np.flatnonzero(kind == _K_RANGE)
    aux = np.asarray(table.column("aux").fill_null(0).to_numpy(), dtype=np.int64)
    ranges = [(int(value[i]), int(aux[i])) for i in r_sel]
    if not ranges_disjoint(ranges):
        dup = (df.groupBy("user_id").count().where(F.col("count") > 1).limit(1).collect())
        if dup:
            raise InputError(f"user id {int(dup[0]['user_id'])} appears more than once",
                             file=name, field="user_id")
    hist3 = hist.reshape(n_q, m, m)
    nw = len(w_sel)
    report = BoundingReport(**{f: int(audit[i]) for i, f in enumerate(_REPORT)})
    n_users = int(audit[_N_USERS_CODE])
    fp = multiset_fingerprint(n_users, nw, k, m, (lanes[0], lanes[1]))
    return BoundedCounts(PairCounts(within=hist3[:nw], across=hist3[nw:]), report, n_users,
                         fp, w_sel, tax, k)


def spark_statistics(
    path: str | os.PathLike[str],
    *,
    master: str | None = None,
    spark: Any = None,
    weeks: Sequence[int] | None = None,
    k: int | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    split: Sequence[float] | None = None,
    accounting: Accounting | None = None,
    bound: BoundMode | None = None,
    seed: int | None = None,
    taxonomy: Taxonomy | str | None = None,
    strict: bool = True,
    batch_users: int = BATCH_USERS,
    budget: PrivacyBudget | None = None,
    contribution: ContributionBound | None = None,
    quiet: bool = False,
) -> DPStatistics:
    """DP statistics with bounding and counting on Spark; then the shared
    ``release_counts`` on the driver (same noise, post-processing and ledger as the other
    engines; the ledger records ``engine="spark"``).

    Args: as ``compute_statistics`` and ``spark_counts``.
    """
    from topicslab.dp.stream import _file_weeks, _is_wide_parquet, _parquet_files

    name = os.fspath(path)
    if "://" not in name:  # a local input is checked here, before Spark starts
        if not _is_wide_parquet(name):  # Spark read a CSV as Parquet: a Java trace, exit 1
            raise InputError("--engine spark reads topic sets in wide Parquet (the Parquet "
                             "files topicslab writes): convert the file first (topicslab "
                             "convert), or use --engine local", file=name, field="--engine")
        from topicslab.io._common import wrap_errors

        files = _parquet_files(name)
        with wrap_errors(files[0], "Parquet"):
            total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        if total == 0:
            # the local and stream engines refuse it; this one released noise only
            raise InputError("the topic sets hold no users", file=files[0])
    budget = budget_of(budget, epsilon=epsilon, delta=delta, split=split,
                       accounting=accounting)
    contribution = contribution_of(contribution, k=k, bound=bound, weeks=weeks)
    refuse_overlap(contribution, "spark")
    check_split_early(budget, contribution, _file_weeks(name) if "://" not in name else None)
    bc = spark_counts(name, seed=seed, taxonomy=taxonomy, strict=strict, master=master,
                      spark=spark, batch_users=batch_users, contribution=contribution,
                      quiet=quiet)
    return release_bounded(bc, budget=budget, bound=contribution.bound, seed=seed,
                           engine="spark")
