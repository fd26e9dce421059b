"""Planted bugs of the service (area "security"): each rule -- row policies and masks on
every path of a read, the counts and plans a restricted user sees, grants, tokens, lockouts,
quotas, the audit -- broken in one plausible way, and the fast, Ray-free tests that catch it."""

from __future__ import annotations

from mutants import Mutant

POLICIES = "tests/service/test_policies.py"
SECURITY = "tests/service/test_security.py"
AUTH = "tests/service/test_auth.py"
QUOTAS = "tests/service/test_quotas.py"
ADBC = "tests/service/test_adbc.py"

MUTANTS: list[Mutant] = [
    Mutant("security-rows-not-applied-at-read", "security", "hfq/session.py",
           "            where = policy.rows\n",
           "            pass\n",
           "the row policy resolved but never made the read's filter: every path (subquery, "
           "CTE, join, set operation, count) sees every row",
           (f"{POLICIES}::test_each_path_sees_only_the_visible_rows",)),
    Mutant("security-mask-forgotten-in-select-star", "security", "hfq/engine/query.py",
           "        schema = pl.Schema({n: t for n, t in full.items() if n not in hidden}) "
           "if hidden \\\n            else full\n",
           "        schema = full\n",
           "the table's columns given to SQL without the masks: SELECT * (and the columns "
           "listed in errors) name the masked column",
           (f"{POLICIES}::test_select_star_has_no_masked_column",
            f"{POLICIES}::test_a_masked_column_is_unknown_and_never_listed")),
    Mutant("security-mask-not-checked-at-read", "security", "hfq/session.py",
           "        cols = check_columns(manifest, columns, hidden=policy.hidden)\n",
           "        cols = check_columns(manifest, columns)\n",
           "the read itself trusting its caller to leave masked columns out: any entry "
           "that asks for a column by name (a scan, map_reduce) reads it",
           (f"{POLICIES}::test_the_session_refuses_hidden_columns_and_unsafe_filters",)),
    Mutant("security-user-filter-merged-with-policy", "security", "hfq/session.py",
           "            if where is not None:\n"
           "                raise AccessDeniedError(f\"a read of table {manifest.table!r} with "
           "where= \"\n"
           "                                        \"under a row policy: filter in a query "
           "instead\")\n"
           "            where = policy.rows\n",
           "            where = policy.rows if where is None else policy.rows & where\n",
           "the caller's filter and the policy's evaluated together: the caller's runs on the "
           "hidden rows too, and its errors (a division by zero there) tell that they exist",
           (f"{POLICIES}::test_the_session_refuses_hidden_columns_and_unsafe_filters",)),
    Mutant("security-plain-read-filter-before-policy", "security", "hfq/engine/query.py",
           "            columns, where = found\n"
           "            if where is not None and src.policy.rows is not None:\n"
           "                return None\n",
           "            columns, where = found\n",
           "a plain read with a WHERE under a row policy planned as a plain read: its filter "
           "would meet the hidden rows (the session refuses it, so the query fails)",
           (f"{POLICIES}::test_a_filter_never_runs_on_a_hidden_row",)),
    Mutant("security-node-stage-read-unfiltered", "security", "hfq/engine/execute.py",
           "    plan, spec = read.plan, read.spec\n",
           "    plan, spec = read.plan, dataclasses.replace(read.spec, where=None, "
           "where_columns=[])\n",
           "the node stage reading partitions without the read's filter (to read through the "
           "cache of decoded batches, say): aggregates, joins and windows see every row",
           (f"{POLICIES}::test_each_path_sees_only_the_visible_rows",)),
    Mutant("security-time-travel-as-trusted", "security", "hfq/db.py",
           "            m = self.session.snapshot(name, version)\n",
           "            return make_query(self.session._parent or self.session, name,\n"
           "                              self.session.snapshot(name, version), rowid=rowid)\n",
           "FROM t AT (VERSION => n) building its query over the database's own session: an "
           "old version read without the reader's policy",
           (f"{POLICIES}::test_time_travel_reads_an_old_version_under_the_policy",)),
    Mutant("security-count-from-the-catalog", "security", "hfq/engine/read.py",
           "        if self.where is None and all(u.exact for u in self.plan.units):\n",
           "        if all(u.exact for u in self.plan.units):\n",
           "count() answered from the catalog's row counts although the read has a filter "
           "(the policy's): a restricted user learns the table's true size",
           (f"{POLICIES}::test_counts_and_scans_count_only_visible_rows",)),
    Mutant("security-explain-shows-statistics", "security", "hfq/engine/query.py",
           "        if self.source.policy.restricted:\n            return _restricted_explain",
           "        if False:\n            return _restricted_explain",
           "EXPLAIN of a restricted user's query showing the partitions' rows and bytes and "
           "the policy's predicate",
           (f"{POLICIES}::test_explain_shows_no_statistics_nor_the_policy",)),
    Mutant("security-wildcard-covers-the-audit", "security", "hfq/service/state.py",
           "            for t in ((table,) if table in SYSTEM_TABLES else (table, \"*\")):\n",
           "            for t in (table, \"*\"):\n",
           "a grant on every table (*) letting its grantee read the audit log",
           (f"{POLICIES}::test_a_grant_on_every_table_does_not_cover_the_audit",)),
    Mutant("security-metadata-lists-every-table", "security", "hfq/service/server.py",
           "            return metadata.tables(sdb.tables(), schema_of,",
           "            return metadata.tables(self.db.tables(), schema_of,",
           "GetTables listing the tables of the database rather than the user's: ADBC's "
           "get_objects shows tables the user has no grant on",
           (f"{SECURITY}::test_attempt_refused_or_filtered_and_audited[meta-objects]",)),
    Mutant("security-ingest-outside-row-policy", "security", "hfq/service/server.py",
           "                    if policy.rows is not None and part.num_rows:\n",
           "                    if False:\n",
           "bulk ingest not checking the writer's rows against its row policy",
           (f"{SECURITY}::test_attempt_refused_or_filtered_and_audited"
            "[write-outside-row-policy]",)),
    Mutant("security-denial-audited-as-ok", "security", "hfq/service/server.py",
           "                              outcome=_outcome(exc, denied), detail=detail, "
           "peer=peer,\n",
           "                              outcome=\"ok\", detail=detail, peer=peer,\n",
           "a refused statement recorded in the audit as a success",
           (f"{SECURITY}::test_attempt_refused_or_filtered_and_audited[table-trades]",
            f"{SECURITY}::test_attempt_refused_or_filtered_and_audited[mask-select]")),
    Mutant("security-token-expiry-ignored", "security", "hfq/service/tokens.py",
           "    if now >= claims.expires:\n",
           "    if False:\n",
           "a token accepted after it expired",
           ("hfq/service/tokens.py",
            f"{AUTH}::test_a_password_gives_a_token_that_works_until_it_expires")),
    Mutant("security-token-outlives-password", "security", "hfq/service/auth.py",
           "            if claims.epoch != u.epoch:\n",
           "            if False:\n",
           "tokens issued before a password change (or to a removed user of the same name) "
           "still accepted",
           (f"{AUTH}::test_a_password_change_or_removal_refuses_older_tokens",)),
    Mutant("security-no-lockout", "security", "hfq/service/auth.py",
           "            if f is not None and now < f.locked_until:\n",
           "            if False:\n",
           "brute force unchecked: a locked-out user's next guess is tried anyway",
           ("hfq/service/auth.py", f"{AUTH}::test_brute_force_is_locked_out_then_let_in")),
    Mutant("security-max-rows-ignored", "security", "hfq/service/server.py",
           "                    if lim.max_rows is not None and rows > lim.max_rows:\n",
           "                    if False:\n",
           "the max_rows quota never enforced",
           (f"{QUOTAS}::test_max_rows_refuses_a_larger_answer",)),
    Mutant("security-timeout-ignored", "security", "hfq/service/quotas.py",
           "        if self.deadline is not None and self.clock() > self.deadline:\n",
           "        if False:\n",
           "a query past its timeout runs on",
           ("hfq/service/quotas.py",
            f"{QUOTAS}::test_a_query_past_its_timeout_stops_its_node_work")),
    Mutant("service-batch-sent-without-its-dictionaries", "service",
           "hfq/service/results.py",
           "    if not has_dictionaries(batch.schema):\n        return batch\n",
           "    if True:\n        return batch\n",
           "a batch with dictionary columns yielded bare: the GeneratorStream sends its indices "
           "but never its dictionaries, which clients cannot decode",
           (f"{ADBC}::test_categoricals_travel_as_dictionaries_replaced_batch_by_batch",
            f"{ADBC}::test_a_policy_filtered_day_through_the_driver_equals_the_visible_rows")),
    Mutant("service-max-bytes-ignored", "service", "hfq/service/server.py",
           "                    if lim.max_bytes is not None and nbytes > lim.max_bytes:\n",
           "                    if False:\n",
           "the max_bytes quota never enforced",
           (f"{QUOTAS}::test_max_bytes_counts_what_is_sent",)),
]
