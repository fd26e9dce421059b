"""Mutants of issue 25's guarantees: the one read type, CSV loads in one pass, the NULL rule."""

from __future__ import annotations

from mutants import Mutant

ONE_PASS = "tests/unit/test_csv_one_pass.py"

MUTANTS: list[Mutant] = [
    Mutant("csv-hashed-before-the-load", "ingest", "hfq/ingest/files.py",
           "            if f.size not in self.sizes and counts[f.size] == 1:",
           "            if False:",
           "every file hashed before it is parsed (what the old ledger did): each CSV read "
           "twice", (f"{ONE_PASS}::test_each_file_is_read_once_while_it_is_hashed",)),
    Mutant("csv-nodes-drop-storage-options", "ingest", "hfq/ingest/files.py",
           "    fs, path = fsspec.core.url_to_fs(f.url, **f.storage_options)",
           "    fs, path = fsspec.core.url_to_fs(f.url)",
           "the nodes open the files without the load's storage_options (an s3:// load that "
           "needs an endpoint or credentials fails there)",
           ("tests/integration/test_csv_s3.py",)),
    Mutant("csv-empty-text-is-text", "ingest", "hfq/ingest/csv.py",
           "strings_can_be_null=ctx.text_nulls, quoted_strings_can_be_null=ctx.text_nulls",
           "strings_can_be_null=False, quoted_strings_can_be_null=False",
           "empty SYMBOL/CHAR/STRING fields loaded as '' (count(mmid) 3 where DuckDB says 1)",
           (f"{ONE_PASS}::test_empty_fields_are_null_for_every_type_as_duckdb_reads_them",)),
    Mutant("csv-second-refuses-zero-fraction", "ingest", "hfq/ingest/parse.py",
           '_TIME_RE = {"SECOND": _HOURS + r"(?:\\.0{1,9})?",',
           '_TIME_RE = {"SECOND": _HOURS,',
           "a SECOND written by hfq as 09:00:00.000000000 refused when loaded back",
           (f"{ONE_PASS}::test_what_hfq_writes_loads_back_unchanged",)),
    Mutant("plain-read-takes-a-window-filter", "read", "hfq/engine/query.py",
           "        if isinstance(op, Filter) and op.local(frozenset()):",
           "        if isinstance(op, Filter):",
           "a filter that is not row-wise (an aggregate or window over all rows) run "
           "partition by partition as a plain read's row filter: a different answer",
           ("tests/unit/test_one_query.py::test_a_filter_over_all_rows_is_not_a_plain_read",)),
    Mutant("plain-read-drops-source-filters", "read", "hfq/engine/query.py",
           "            filters = Filters(src.date_column, lo, hi, src.symbol_column, symbols)",
           "            filters = Filters()",
           "a chained plain read forgetting the query's dates=/symbols=",
           ("tests/unit/test_one_query.py::test_every_read_path_gives_the_same_rows",)),
]
