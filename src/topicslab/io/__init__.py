"""File formats: readers and writers of topic-set sequences and site traces.

Files hold taxonomy ids; the in-memory ``TopicSets`` / ``SiteTraces`` hold dense indices.
Every reader raises ``InputError`` (one line naming file, row and field) on bad input, and
every writer is atomic (temporary file renamed into place; nothing left on failure).

Public functions:
    read_sets(path, *, taxonomy=None, format=None, k=None, weeks=None, strict=True)
    write_sets(path, sets, *, format=None, **options)
    iter_sets(path, batch_size=1_048_576, *, taxonomy=None, format=None, k=None, strict=True)
    read_traces(path, *, taxonomy=None, format=None, strict=True)
    write_traces(path, traces, *, format=None)
    detect_format(path)
    convert_sets(source, target, *, source_format=None, target_format=None, taxonomy=None, ...)

    read_sets_parquet / write_sets_parquet / iter_sets_parquet / SetsWriter   Parquet, per user
    read_traces_parquet / write_traces_parquet                       Parquet site traces
    read_sets_csv / write_sets_csv                                   CSV/TSV ``;``-lists
    read_sets_long / write_sets_long                                 user_id, week, topic_id
    read_sets_profiles / write_sets_profiles                         other tools' t1..tk rows
    detect_taxonomy                                                  v1 or v2 from the ids
    arrow_to_sets                                                    Arrow lists -> TopicSets
    read_sets_tfrecord / write_sets_tfrecord / iter_sets_tfrecord    the release's TFRecords
    iter_records / write_records / encode_example / decode_example   TFRecord building blocks
    crc32c / masked_crc32c                                           CRC32C (Castagnoli)
    read_domain_table / iter_visits / DomainTable                    ingest inputs (io.visits)
"""

from topicslab.io._crc32c import crc32c, masked_crc32c
from topicslab.io.arrow import arrow_to_sets
from topicslab.io.convert import convert_sets
from topicslab.io.csv_sets import read_sets_csv, write_sets_csv
from topicslab.io.detect import detect_taxonomy
from topicslab.io.generic import (
    detect_format,
    iter_sets,
    read_sets,
    read_traces,
    write_sets,
    write_traces,
)
from topicslab.io.long import read_sets_long, write_sets_long
from topicslab.io.parquet_sets import (
    SetsWriter,
    iter_sets_parquet,
    read_sets_parquet,
    write_sets_parquet,
)
from topicslab.io.parquet_traces import read_traces_parquet, write_traces_parquet
from topicslab.io.profiles import read_sets_profiles, write_sets_profiles
from topicslab.io.tfrecord import (
    decode_example,
    encode_example,
    iter_records,
    iter_sets_tfrecord,
    read_sets_tfrecord,
    write_records,
    write_sets_tfrecord,
)
from topicslab.io.visits import DomainTable, iter_visits, read_domain_table

__all__ = [
    "DomainTable",
    "SetsWriter",
    "arrow_to_sets",
    "convert_sets",
    "crc32c",
    "decode_example",
    "detect_format",
    "detect_taxonomy",
    "encode_example",
    "iter_records",
    "iter_sets",
    "iter_sets_parquet",
    "iter_sets_tfrecord",
    "iter_visits",
    "masked_crc32c",
    "read_domain_table",
    "read_sets",
    "read_sets_csv",
    "read_sets_long",
    "read_sets_parquet",
    "read_sets_profiles",
    "read_sets_tfrecord",
    "read_traces",
    "read_traces_parquet",
    "write_records",
    "write_sets",
    "write_sets_csv",
    "write_sets_long",
    "write_sets_parquet",
    "write_sets_profiles",
    "write_sets_tfrecord",
    "write_traces",
    "write_traces_parquet",
]
