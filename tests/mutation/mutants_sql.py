"""Mutants of the SQL compiler that the differential fuzzer must find (issue 24, "Done when":
the CI budget finds each of 10 planted compiler bugs).  Area "sql".

Each plants back one of the silent differences issue 24 found, or a plausible slip in today's
compiler (``hfq/engine/sql/``), and names the CI fuzz budget (``tests/fuzz/test_fuzz.py``:
seed 24, 2,000 queries, Ray-free) as the test that must fail: the fuzzer, not a hand-written
case, has to notice.  The conformance corpus (``tests/sql``) kills each of them too (checked by
hand: ``python tests/mutation/run.py --only <id>`` with the corpus named instead).  In the
mutation check the budget stops at the first mismatch and does not shrink it.
"""

from __future__ import annotations

from mutants import Mutant

AREA = "sql"
SQL = "hfq/engine/sql/"
FUZZ = ("tests/fuzz/test_fuzz.py",)

MUTANTS: list[Mutant] = [
    Mutant("fuzz-not-in-drops-nulls", AREA, SQL + "subqueries.py",
           "        if values.null_count():\n",
           "        if False:\n",
           "x NOT IN (subquery) ignores the subquery's NULLs: rows pass that DuckDB's "
           "three-valued logic filters out (issue 24 item 2)", FUZZ),
    Mutant("fuzz-exclude-dropped", AREA, SQL + "star.py",
           "    items = [(n, x) for n, x in items if n not in drop]\n",
           "",
           "SELECT * EXCLUDE (...) answered as SELECT * (a clause silently dropped, issue 24 "
           "item 5)", FUZZ),
    Mutant("fuzz-max-skips-nan", AREA, SQL + "aggregates.py",
           "        return x.nan_max() if self.dtype(x).is_float() else x.max()",
           "        return x.max()",
           "max() skips NaN (polars' max) where DuckDB orders NaN above +inf (issue 24 item 4)",
           FUZZ),
    Mutant("fuzz-frame-off-by-one", AREA, SQL + "windows.py",
           "    head = fwd(before + 1, 0)",
           "    head = fwd(before, 0)",
           "ROWS BETWEEN n PRECEDING AND ... frames one row short (issue 24 item 3)", FUZZ),
    Mutant("fuzz-nulls-first-on-desc", AREA, SQL + "select.py",
           '                nulls_first = o.args.get("nulls_first")',
           '                nulls_first = o.args.get("nulls_first") or desc',
           "ORDER BY ... DESC puts NULLs first, as Postgres does (DuckDB: last in both "
           "directions)", FUZZ),
    Mutant("fuzz-count-literal", AREA, SQL + "aggregates.py",
           "            n = where.cast(pl.Int64).sum() if where is not None else "
           "pl.len().cast(pl.Int64)\n            if inner is None",
           "            n = pl.lit(1, dtype=pl.Int64)\n            if inner is None",
           "count(*) / count(1) give 1 instead of counting rows (issue 24 item 1)",
           FUZZ),
    Mutant("fuzz-round-half-even", AREA, SQL + "functions.py",
           '        return x.round(0, mode="half_away_from_zero")',
           "        return x.round(0)",
           "round() half to even (polars' default) where DuckDB rounds half away from zero "
           "(issue 24 item 8)", FUZZ),
    Mutant("fuzz-bucket-epoch-origin", AREA, SQL + "functions.py",
           "_ORIGIN_US = 946857600 * 10**6",
           "_ORIGIN_US = 0",
           "time_bucket aligned to 1970-01-01 (a Thursday) instead of DuckDB's 2000-01-03 "
           "(issue 24 item 7)", FUZZ),
    Mutant("fuzz-overflow-wraps", AREA, SQL + "expressions.py",
           "            bad = (left.xor(out) & right.xor(out)) < 0",
           "            bad = pl.lit(False)",
           "64-bit integer addition wraps silently where DuckDB raises (issue 24 item 9)",
           FUZZ),
    Mutant("fuzz-distinct-dropped", AREA, SQL + "select.py",
           "            q = q.unique()\n",
           "            q = q\n",
           "SELECT DISTINCT answered as SELECT (a clause silently dropped)", FUZZ),
]

#: the corpus of answers that were refusals in polars' words (tests/sql/leaks.test)
LEAKS = "tests/sql/test_corpus.py::test_record[leaks.test:{}]"


def _leaks(*lines: int) -> tuple[str, ...]:
    return tuple(LEAKS.format(n) for n in lines)


MUTANTS += [
    Mutant("sql2-group-by-repeated-key", AREA, SQL + "select.py",
           "                if g_expr in key_nodes:   # a repeated key is the same key (GROUP BY "
           "a, a)\n                    continue\n",
           "",
           "GROUP BY id, id refused with polars' 'group_by keys contained duplicate output "
           "name' (DuckDB answers: a repeated key is the same key)", _leaks(28, 63)),
    Mutant("sql2-pivot-by-its-own-column", AREA, SQL + "pivot.py",
           '        spread = "__on" if on in index else on\n',
           "        spread = on\n",
           "PIVOT (... FOR sym IN (...) GROUP BY sym) refused with polars' duplicate-key error",
           _leaks(116, 135)),
    Mutant("sql2-pivot-repeated-group-column", AREA, SQL + "pivot.py",
           "        if group is not None and len(keys) > len(index):",
           "        if False:",
           "PIVOT ... GROUP BY date, date gives the column once (DuckDB: date, date_1)",
           _leaks(146, 153)),
    Mutant("sql2-not-bitwise", AREA, SQL + "expressions.py",
           '        return ~self.condition(self.expr(node.this), node.this, "NOT")',
           "        return ~self.expr(node.this)",
           "NOT of an integer is polars' bitwise ~ (NOT 5 = -6, DuckDB FALSE) and NOT NULL is "
           "refused in polars' words", _leaks(222, 246, 251)),
    Mutant("sql2-logical-and-of-null", AREA, SQL + "expressions.py",
           "        return a & b if isinstance(node, exp.And) else a | b",
           "        a, b = self.expr(node.this), self.expr(node.expression)\n"
           "        return a & b if isinstance(node, exp.And) else a | b",
           "NULL AND NULL refused with polars' '`bitand` operation not supported for dtype "
           "`null`'", _leaks(232, 246)),
    Mutant("sql2-constant-in-list", AREA, SQL + "expressions.py",
           "                if not test.meta.root_names():",
           "                if False:",
           "2 IN (1, 2) in a select list is one row, not one per row: polars' 'Series c2, "
           "length 1 doesn't match the DataFrame height'", _leaks(282, 296)),
    Mutant("fuzz-leak-only-a-plan", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "    return _POLARS.search(text) is not None",
           "    return re.search(r'col\\(\"|\\.alias\\(', text) is not None",
           "the fuzzer counts as leaked only errors quoting a polars plan: polars' messages "
           "(dtype Null not supported, `neg` operation not supported...) pass as refusals by "
           "name", ("tests/fuzz/test_fuzzer.py::"
                    "test_an_error_in_polars_words_is_a_defect_whatever_duckdb_did",)),
]

#: the text functions and boolean aggregates added for the DuckDB dialect (tests/sql/strings.test)
STRINGS = "tests/sql/test_corpus.py::test_record[strings.test:{}]"

MUTANTS += [
    Mutant("sql2-strpos-in-bytes", AREA, SQL + "strings.py",
           '    before = s.str.splitn(needle, 2).struct.field("field_0").str.len_chars()'
           '.cast(pl.Int64)',
           "    before = s.str.find(needle, literal=True).cast(pl.Int64)",
           "strpos counts bytes (polars' str.find) where DuckDB counts characters: "
           "strpos('日本株', '株') = 7, not 3", (STRINGS.format(93),)),
    Mutant("sql2-replace-empty-pattern", AREA, SQL + "strings.py",
           '    return s if old == "" else s.str.replace_all(old, new, literal=True)',
           "    return s.str.replace_all(old, new, literal=True)",
           "replace(s, '', 'X') puts X between every character (polars) where DuckDB leaves "
           "s alone", (STRINGS.format(51),)),
    Mutant("sql2-bool-agg-of-no-value", AREA, SQL + "aggregates.py",
           "ones.max()) == 1\n        return pl.when(x.count() > 0).then(out)",
           "ones.max()) == 1\n        return out",
           "bool_and/bool_or/count_if over no value (no rows, only NULLs) give TRUE/FALSE/0 "
           "where DuckDB gives NULL", (STRINGS.format(190), STRINGS.format(195))),
]

MUTANTS += [
    Mutant("sql2-neg-of-a-date", AREA, SQL + "expressions.py",
           "        if not dtype.is_numeric() and not isinstance(dtype, pl.Duration):",
           "        if False:",
           "-date reaches polars: '`neg` operation not supported for dtype `date`' in polars' "
           "words instead of hfq's refusal by name", (LEAKS.format(330),)),
    Mutant("sql2-join-condition-as-is", AREA, SQL + "joins.py",
           '        predicate = c.condition(cond, combined, "JOIN ... ON")   # ON NULL: no row',
           "        predicate = c.expr(cond, combined)",
           "JOIN ... ON a = b AND NULL refused with polars' 'filter predicate must be of type "
           "Boolean, got Null' (DuckDB: no row); an integer condition likewise",
           (LEAKS.format(303), LEAKS.format(308))),
    Mutant("sql2-trim-ascii-space", AREA, SQL + "strings.py",
           "    chars: str | None = _SPACES",
           '    chars: str | None = " "',
           "trim/ltrim/rtrim remove only ASCII spaces where DuckDB removes every Unicode space "
           "separator (NBSP, U+2003, U+3000)", (STRINGS.format(123),)),
]

#: the fuzzer's classes apart from mismatches (docs/sql.md, "Evaluation order"): each as strict
#: as documented, or DuckDB's instability would hide hfq's bugs
FUZZER = "tests/fuzz/test_fuzzer.py::{}"
MUTANTS += [
    Mutant("fuzz-unstable-any-count", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "    if len(got.rows) != len(want.rows) or len(got.kinds) != len(want.kinds):",
           "    if len(got.kinds) != len(want.kinds):",
           "'unstable' for an answer with fewer rows than DuckDB gives on any order, when "
           "DuckDB's answers move in every column",
           (FUZZER.format("test_a_difference_is_unstable_only_where_duckdb_disagrees_with_"
                          "itself"),)),
    Mutant("fuzz-plan-error-any-answer", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "        if isinstance(plain, Answer) and differ(got, plain, ordered=ordered,",
           "        if isinstance(plain, Answer) and None is differ(got, got, ordered=ordered,",
           "'plan_error' without DuckDB's unoptimized answer being hfq's",
           (FUZZER.format("test_duckdb_raising_on_rows_its_plan_drops_is_counted_apart"),)),
    Mutant("fuzz-plan-answer-any-answer", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "        if isinstance(operator, Answer) and differ(got, operator, ordered=ordered,",
           "        if isinstance(operator, Answer) and None is differ(got, got, ordered=ordered,",
           "'plan_answer' without DuckDB's ASOF operator answering as hfq",
           (FUZZER.format("test_duckdb_answering_otherwise_only_in_its_small_asof_plan_is_"
                          "apart"),)),
    Mutant("fuzz-plan-answer-any-difference", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "isinstance(want, Answer) and differ(_unsigned(want), _unsigned(operator),",
           "isinstance(want, Answer) and None is differ(want, want,",
           "'plan_answer' whatever DuckDB's two plans' answers differ in, not only the signs "
           "of floats",
           (FUZZER.format("test_duckdb_answering_otherwise_only_in_its_small_asof_plan_is_"
                          "apart"),)),
    Mutant("fuzz-optimizer-moved-any-answer", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "    if not isinstance(plain, Answer) or differ(got, plain, ordered=ordered,",
           "    if not isinstance(plain, Answer) or differ(got, got, ordered=ordered,",
           "'plan_answer' whenever DuckDB without its optimizer answers, not only as hfq",
           (FUZZER.format("test_an_answer_duckdbs_optimizer_moves_is_apart_when_unoptimized_"
                          "agrees"),)),
    Mutant("fuzz-more-shuffles-excuse-anything", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "        if again.status != \"wrong\":\n            return again\n",
           "        return Outcome(\"unstable\", again.detail)\n",
           "a difference still 'wrong' on 24 more shuffles passed as 'unstable'",
           (FUZZER.format("test_a_float_on_few_row_orders_is_unstable_by_more_shuffles"),)),
    Mutant("fuzz-more-shuffles-one-order", AREA, "tests/fuzz/sqlfuzz/data.py",
           "            random.Random(seed if not k else seed * 1000 + int(k)).shuffle(idx)",
           "            random.Random(seed).shuffle(idx)",
           "the 24 more shuffles all the one 'shuffled' order: corr(id, id) = 1.0 on few "
           "orders stays a mismatch (F140)",
           (FUZZER.format("test_a_float_on_few_row_orders_is_unstable_by_more_shuffles"),)),
    Mutant("fuzz-sorted-orders-unsorted", AREA, "tests/fuzz/sqlfuzz/data.py",
           '                table = table.take(pc.sort_indices(table, [(column, way, "at_end")]))',
           "                table = table",
           "the oracle's sorted row orders left in the stored order: a float sum that is NaN "
           "only when its largest values come first stays a mismatch",
           (FUZZER.format("test_a_sum_past_the_range_before_an_infinity_is_unstable_by_a_"
                          "sorted_order"),)),
    Mutant("fuzz-near-tie-slice-any-slice", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "mine.rows[start:end], mine.narrow),", "got.rows, mine.narrow),",
           "an ulp in a sort key excuses any rows under LIMIT, not only the engine's own "
           "whole answer's slice",
           (FUZZER.format("test_an_ulp_in_a_sort_key_may_move_the_rows_a_limit_keeps"),)),
    Mutant("fuzz-near-tie-slice-any-whole", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "differ(mine, theirs, ordered=True, keys=keys) is not None:",
           "differ(mine, mine, ordered=True, keys=keys) is not None:",
           "an ulp in a sort key excuses a LIMIT's rows whatever the whole answers differ in",
           (FUZZER.format("test_an_ulp_in_a_sort_key_may_move_the_rows_a_limit_keeps"),)),
    Mutant("fuzz-near-tie-limit-percent-as-rows", AREA, "tests/fuzz/sqlfuzz/differential.py",
           'for k in ("percent", "rows", "with_ties"))):', 'for k in ())):',
           "LIMIT 10% read as 10 rows: a wrong row count passes as a near tie",
           (FUZZER.format("test_no_near_tie_excuses_a_wrong_count_or_an_order_wrong_by_its_"
                          "own_values"),)),
    Mutant("fuzz-near-tie-own-order-unchecked", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "    if any(not _in_order(a, b, terms) for a, b in zip(mine.rows, mine.rows[1:])):",
           "    if False:",
           "a whole answer sorted otherwise than by its own values passes as a near tie",
           (FUZZER.format("test_no_near_tie_excuses_a_wrong_count_or_an_order_wrong_by_its_"
                          "own_values"),)),
    Mutant("fuzz-unstable-any-value", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "        if not _moving_rows(got, want, answers, moving) and not any(",
           "        if False and not any(",
           "'unstable' for a difference in a row whose value DuckDB gives the same on every "
           "order, because the column moves in another row",
           (FUZZER.format("test_a_difference_is_unstable_only_where_duckdb_disagrees_with_"
                          "itself"),)),
    Mutant("fuzz-tlp-distinct-whole-exact", AREA, "tests/fuzz/sqlfuzz/metamorphic.py",
           "        parts, whole = _distinct(parts), _distinct(whole)",
           "        parts = _distinct(parts)",
           "TLP DISTINCT making only the parts distinct as floats: two DECIMALs a unit apart "
           "near 2^63 are a false 'tlp' finding",
           (FUZZER.format("test_tlp_distinct_compares_both_sides_as_the_answers_hold_them"),)),
    Mutant("fuzz-near-ties-any-key", AREA, "tests/fuzz/sqlfuzz/compare.py",
           "                return False   # decided by an exact key or past the tolerance",
           "                break",
           "any reordering of the same rows accepted under ORDER BY, not only rows an ulp "
           "apart in a float key",
           (FUZZER.format("test_rows_an_ulp_apart_in_a_sort_key_may_stand_in_either_order"),)),
    Mutant("fuzz-row-mix-any-group", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "    if differ(only(got, got.rows, fixed), only(want, want.rows, fixed),",
           "    if False and differ(only(got, got.rows, fixed), only(want, want.rows, fixed),",
           "hfq's rows accepted as a mix of DuckDB's answers on several orders even when a "
           "group is there twice and another missing",
           (FUZZER.format("test_float_values_two_groups_swap_between_row_orders_are_unstable_"
                          "row_by_row"), FUZZER.format("test_row_mix_never_counts_a_row_twice"))),
    Mutant("fuzz-row-mix-any-order", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "    if not all(_in_order(a, b, terms) for a, b in zip(mine.rows, mine.rows[1:])):",
           "    if False:",
           "hfq's rows accepted as a mix of DuckDB's answers whatever their order under ORDER "
           "BY",
           (FUZZER.format("test_float_values_two_groups_swap_between_row_orders_are_unstable_"
                          "row_by_row"),)),
    Mutant("fuzz-alone-any-value", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "        if not any(differ(_only(got, [0, c]), t, ordered=False) is None",
           "        if False and not any(differ(_only(got, [0, c]), t, ordered=False) is None",
           "a column DuckDB answers otherwise alone accepted whatever hfq's value in it",
           (FUZZER.format("test_a_column_duckdb_answers_otherwise_alone_is_unstable"),)),
    Mutant("fuzz-qualify-alone-any-values", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "        if differ(got, rows, ordered=False) is None:",
           "        if True:",
           "rows DuckDB's QUALIFY keeps with id alone accepted whatever hfq's values in them",
           (FUZZER.format("test_rows_duckdb_qualify_keeps_otherwise_alone_are_unstable"),)),
    Mutant("fuzz-qualify-alone-any-rows", AREA, "tests/fuzz/sqlfuzz/differential.py",
           "        if differ(mine, k, ordered=False) is not None:   # type: ignore[arg-type]",
           "        if False:",
           "any rows hfq's QUALIFY keeps accepted when DuckDB's move with the other items",
           (FUZZER.format("test_rows_duckdb_qualify_keeps_otherwise_alone_are_unstable"),)),
]
