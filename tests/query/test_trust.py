"""Issue 24's list of silent differences, each pinned against DuckDB on the same rows: the
adversarial 4-row table ``m`` (NULL, NaN, +-inf, -0.0, int64 extremes, a Sunday, midnight,
duplicate timestamps) over several partitions (node stage + driver merge) and in one (``m1``),
and the 2,400-row ``w`` over 12 partitions.  Items 1-10 of "Why" answer exactly as DuckDB;
where DuckDB raises, hfq raises a named error."""

from __future__ import annotations

import pytest
from nasty import load, oracle
from oracle import assert_same

import hfq
from hfq.errors import HfqError


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = hfq.connect(str(tmp_path_factory.mktemp("trustdb")))
    load(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    return oracle(db)


# (id, SQL with {t} for the table, ordered)
SAME = [
    # 1. count(1), sum(1) and aggregates of constants count rows
    ("count_1", "SELECT count(1) AS a, sum(1) AS b, count(NULL) AS c, count('x') AS d, "
                "min(1) AS e, max(2.5) AS f, avg(1) AS g FROM {t}", False),
    ("count_1_grouped", "SELECT symbol, count(1) AS n, sum(1) AS s, sum(2) AS s2 FROM {t} "
                        "GROUP BY symbol", False),
    ("sum_1_no_rows", "SELECT sum(1) AS s, count(1) AS n, avg(1) AS a FROM {t} "
                      "WHERE bid > 100", False),
    # 2. IN / NOT IN and NULLs
    ("not_in_null", "SELECT count(*) AS n FROM {t} WHERE bid NOT IN (SELECT bidsiz FROM {t})",
     False),
    ("not_in_empty", "SELECT count(*) AS n FROM {t} WHERE bid NOT IN "
                     "(SELECT bidsiz FROM {t} WHERE bidsiz > 100)", False),
    ("in_values", "SELECT date, bid IN (1.0, NULL) AS a, bid NOT IN (1.0, NULL) AS b, "
                  "bidsiz IN (SELECT bidsiz FROM {t}) AS c, bidsiz NOT IN "
                  "(SELECT bidsiz FROM {t} WHERE bidsiz IS NOT NULL) AS d FROM {t} "
                  "ORDER BY time, ts", True),
    ("in_nan", "SELECT count(*) AS n FROM {t} WHERE bid IN ('nan'::DOUBLE, 2.0)", False),
    # 3. windows and NULL
    ("running_sum_nulls", "SELECT ts, sum(bidsiz) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING)"
                          " AS s FROM {t} ORDER BY ts", True),
    ("rank_null_keys", "SELECT ts, rank() OVER (ORDER BY bidsiz) AS r, "
                       "dense_rank() OVER (ORDER BY bid DESC) AS d FROM {t} ORDER BY ts", True),
    ("window_nulls_last", "SELECT ts, row_number() OVER (ORDER BY bidsiz, bid) AS a, "
                          "row_number() OVER (ORDER BY bid DESC, ts) AS b FROM {t} "
                          "ORDER BY ts", True),
    ("frame_only_nulls", "SELECT ts, sum(bidsiz) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW "
                         "AND CURRENT ROW) AS s, avg(bidsiz) OVER (ORDER BY ts ROWS BETWEEN 1 "
                         "PRECEDING AND CURRENT ROW) AS a, min(bid) OVER (ORDER BY ts ROWS "
                         "BETWEEN 1 PRECEDING AND CURRENT ROW) AS lo, max(bid) OVER (ORDER BY "
                         "ts) AS hi FROM {t} ORDER BY ts", True),
    ("rows_n_preceding", "SELECT ts, sum(bidsiz) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s "
                         "FROM {t} ORDER BY ts", True),
    ("count_window", "SELECT ts, count(bid) OVER (ORDER BY ts) AS c, count(*) OVER "
                     "(PARTITION BY symbol) AS n, count(bidsiz) OVER (ORDER BY ts ROWS BETWEEN "
                     "1 PRECEDING AND 1 FOLLOWING) AS r, count(bid) OVER (ORDER BY name) AS p "
                     "FROM {t} ORDER BY ts", True),
    # 4. NaN is the largest float
    ("max_nan", "SELECT max(bid) AS hi, min(bid) AS lo, max(f) AS fhi, min(f) AS flo "
                "FROM {t}", False),
    ("max_nan_grouped", "SELECT symbol, max(bid) AS hi, min(bid) AS lo FROM {t} "
                        "GROUP BY symbol", False),
    ("greatest_nan", "SELECT ts, greatest(bid, 1.5) AS g, least(bid, 1.5) AS l, "
                     "greatest(bid, NULL) AS gn FROM {t} ORDER BY ts", True),
    ("order_by_nan", "SELECT bid FROM {t} ORDER BY bid", True),
    ("order_by_nan_desc", "SELECT bid, ts FROM {t} ORDER BY bid DESC, ts", True),
    ("order_by_nulls_first", "SELECT bidsiz, ts FROM {t} ORDER BY bidsiz NULLS FIRST, ts",
     True),
    ("top_nan", "SELECT bid FROM {t} ORDER BY bid DESC LIMIT 2", True),
    # 6. EXTRACT
    ("extract_parts", "SELECT ts, EXTRACT(millisecond FROM ts) AS ms, EXTRACT(microsecond "
                      "FROM ts) AS us, EXTRACT(dow FROM date) AS dow, EXTRACT(isodow FROM "
                      "date) AS isodow, dayofweek(date) AS d2, EXTRACT(second FROM ts) AS s, "
                      "EXTRACT(week FROM date) AS w, EXTRACT(doy FROM date) AS doy, "
                      "EXTRACT(epoch FROM time) AS e, EXTRACT(quarter FROM date) AS q "
                      "FROM {t} ORDER BY ts", True),
    ("extract_time", "SELECT tod, EXTRACT(hour FROM tod) AS h, EXTRACT(millisecond FROM tod)"
                     " AS ms, EXTRACT(epoch FROM tod) AS e FROM {t} ORDER BY tod", True),
    # 7. time_bucket origins
    ("bucket_7m", "SELECT ts, time_bucket(INTERVAL '7 minutes', ts) AS b FROM {t} ORDER BY ts",
     True),
    ("bucket_week", "SELECT ts, time_bucket(INTERVAL '1 week', ts) AS b, time_bucket("
                    "INTERVAL '2 days', time) AS c, time_bucket(INTERVAL '7 days', date) AS d "
                    "FROM {t} ORDER BY ts", True),
    ("bucket_month", "SELECT ts, time_bucket(INTERVAL '1 month', ts) AS b, time_bucket("
                     "INTERVAL '3 months', date) AS c FROM {t} ORDER BY ts", True),
    ("bucket_time", "SELECT tod, time_bucket(INTERVAL '7 minutes', tod) AS b FROM {t} "
                    "ORDER BY tod", True),
    ("bucket_time_tiles", "SELECT tod, time_bucket(INTERVAL '10 minutes', tod) AS a, time_bucket("
                          "INTERVAL '1 hour', tod) AS b, time_bucket(INTERVAL '90 seconds', tod) "
                          "AS c, time_bucket(INTERVAL '1 microsecond', tod) AS d, time_bucket("
                          "INTERVAL '1 day', tod) AS e, time_bucket(INTERVAL '10 minutes', tod, "
                          "INTERVAL '5 minutes') AS f, time_bucket(INTERVAL '10 minutes', tod, "
                          "TIME '09:30:00') AS g, time_bucket(INTERVAL '1 hour', tod, TIME "
                          "'00:20:00') AS h, time_bucket(INTERVAL '7 minutes', tod, TIME "
                          "'00:07:00') AS i, time_bucket(INTERVAL '300000 days', tod, TIME "
                          "'00:00:00') AS j FROM {t} ORDER BY tod", True),
    ("bucket_origin", "SELECT ts, time_bucket(INTERVAL '45 minutes', ts, TIMESTAMP "
                      "'2016-11-13 09:30:00') AS b FROM {t} ORDER BY ts", True),
    # 8. round, substr
    ("round_half_away", "SELECT round(2.5) AS a, round(-2.5) AS b, round(0.125, 2) AS c, "
                        "round(2.5::DOUBLE) AS d, round(-0.5::DOUBLE) AS e, "
                        "round(1.005::DOUBLE, 2) AS f", False),
    ("round_column", "SELECT ts, round(bid / 4, 1) AS r, round(bidsiz / 2) AS s FROM {t} "
                     "ORDER BY ts", True),
    ("substr", "SELECT substr('hello', 0, 3) AS a, substr('hello', -3, 2) AS b, "
               "substr('hello', -3) AS c, substr('hello', 2) AS d, substr('hello', 0) AS e, "
               "substr('hello', -10, 3) AS f, substr('hello', 3, 0) AS g", False),
    ("substr_column", "SELECT ts, substr(name, 2, 3) AS a, substr(name, -2) AS b, "
                      "substr(name, 0, 2) AS c FROM {t} ORDER BY ts", True),
    # 9. integers, decimals, division, arg_min/arg_max, sign, variance
    ("decimal_literals", "SELECT 0.1 + 0.2 = 0.3 AS a, 1.5 * 2 AS b, 0.1 * 3 AS c", False),
    ("decimal_with_column", "SELECT ts, bidsiz * 0.1 AS a, bidsiz * 0.1 = 0.7 AS b, "
                            "bid * 0.1 AS c FROM {t} ORDER BY ts", True),
    ("int_division", "SELECT ts, bidsiz // 2 AS a, bidsiz % 2 AS b, -7 // 2 AS c, "
                     "-7 % 2 AS d, bidsiz / 0 AS e FROM {t} ORDER BY ts", True),
    ("big_sums", "SELECT sum(big) AS s, sum(bidsiz) AS t, sum(small) AS u FROM {t} "
                 "WHERE big > 0 OR big IS NULL", False),
    ("big_sum_wide", "SELECT sum(big) AS s FROM {t} WHERE big > 0 OR big = 0", False),
    ("arg_min_max", "SELECT arg_min(bid, ts) AS a, arg_max(bid, ts) AS b, arg_min(ts, bid) AS c,"
                    " arg_max(ts, bid) AS d, arg_max(bidsiz, ts) AS e, arg_min(bid, bidsiz) "
                    "AS f, max_by(bidsiz, ts) AS g FROM {t}", False),
    ("sign", "SELECT ts, sign(bid) AS a, sign(f) AS b, sign(big) AS c FROM {t} ORDER BY ts",
     True),
    ("var_inf_nan", "SELECT var_samp(f) AS a, var_pop(f) AS b, stddev_samp(bid) AS c, "
                    "var_samp(bidsiz) AS d, stddev_pop(bidsiz) AS e FROM {t}", False),
    ("first_last_nulls", "SELECT first(bidsiz ORDER BY ts DESC) AS a, last(bid ORDER BY "
                         "ts) AS b, first(bid ORDER BY ts) AS c, last(bidsiz ORDER BY bid "
                         "NULLS FIRST) AS d FROM {t}", False),
    # 10. TIMESTAMP literals against DATETIME columns, TIMESTAMPTZ, intervals
    ("timestamp_literal", "SELECT count(*) AS n FROM {t} WHERE time >= "
                          "TIMESTAMP '2016-11-14 00:00:00'", False),
    ("timestamp_literal_ns", "SELECT count(*) AS n FROM {t} WHERE ts > "
                             "TIMESTAMP '2016-11-14 00:00:00'", False),
    ("timestamp_literal_frac", "SELECT count(*) AS n FROM {t} WHERE time < "
                               "TIMESTAMP '2016-11-15 23:59:59.5'", False),
    ("timestamptz_literal", "SELECT count(*) AS n FROM {t} WHERE time >= "
                            "TIMESTAMPTZ '2016-11-14 01:00:00+01'", False),
    ("date_vs_timestamp", "SELECT count(*) AS n FROM {t} WHERE date < "
                          "TIMESTAMP '2016-11-14 00:00:01'", False),
    ("string_vs_time", "SELECT count(*) AS n FROM {t} WHERE time BETWEEN '2016-11-14' AND "
                       "'2016-11-14 12:00:00'", False),
    ("multi_unit_interval", "SELECT ts, ts + INTERVAL '8 hours 30 minutes' AS a, time - "
                            "INTERVAL 30 SECONDS AS b FROM {t} ORDER BY ts", True),
    ("infinity_timestamp", "SELECT count(*) AS n FROM {t} WHERE ts > '-infinity'::TIMESTAMP "
                           "AND time < 'infinity'::TIMESTAMP", False),
    ("time_cast", "SELECT ts, ts::TIME AS a, time::DATE AS b, ts::DATE AS d, "
                  "date::TIMESTAMP AS c FROM {t} ORDER BY ts", True),
    # casts
    ("casts", "SELECT ts, CAST(bid AS INTEGER) AS a, CAST(bidsiz AS DOUBLE) AS b, "
              "CAST(small AS VARCHAR) AS c, CAST(2.5 AS INTEGER) AS d, "
              "CAST(-2.5 AS INTEGER) AS e, CAST('12' AS INT) AS f, TRY_CAST(name AS INT) AS g "
              "FROM {t} WHERE bid IS NULL OR NOT isnan(bid) ORDER BY ts", True),
    # scalar functions over the nasty values
    ("math", "SELECT ts, abs(bid) AS a, ceil(bid / 3) AS b, floor(-bid / 3) AS c, "
             "exp(bid / 10) AS d, ln(abs(bid) + 1) AS e, log(2, abs(bid) + 1) AS g, "
             "log10(abs(bid) + 1) AS h, sqrt(abs(bid)) AS i, pow(bid, 2) AS j, abs(big // 2) "
             "AS k, isinf(f) AS l, nullif(bidsiz, 5) AS n, floor(bidsiz) AS o FROM {t} "
             "ORDER BY ts", True),
    ("strings", "SELECT ts, lower(name) AS a, upper(name) AS b, length(name) AS c, "
                "trim('  ' || name || ' ') AS d, concat(name, '-', symbol) AS e, "
                "name ILIKE 'H%' AS f, name || '!' AS g FROM {t} ORDER BY ts", True),
    ("time_functions", "SELECT ts, second(ts) AS a, epoch(time) AS b, date_trunc('hour', ts) "
                       "AS c, date_trunc('month', date) AS d, date_trunc('week', time) AS e "
                       "FROM {t} ORDER BY ts", True),
    ("more_aggregates", "SELECT any_value(name) AS a, quantile(bidsiz, 0.5) AS b, "
                        "stddev(bidsiz) AS c, CAST(sum(bidsiz) AS DECIMAL(10, 2)) AS d "
                        "FROM {t}", False),
    # the fuzzer's findings F2, F3, F7, F13, F16 (notes/sql-findings.md)
    ("constant_items", "SELECT NULL AS a, 1 AS b, 'x' AS c FROM {t}", False),
    ("window_by_symbol", "SELECT ts, count(*) OVER (ORDER BY name) AS a, row_number() OVER "
                         "(ORDER BY symbol DESC, ts) AS b FROM {t} ORDER BY ts", True),
    ("join_keeps_both_keys", "SELECT a.ts, b.symbol, b.bidsiz FROM {t} a LEFT JOIN {t} b "
                             "ON a.bidsiz = b.bidsiz ORDER BY a.ts", True),
    ("pop_of_one", "SELECT symbol, stddev_pop(bid) AS a, var_pop(f) AS b FROM {t} "
                   "WHERE bid IS NOT NULL GROUP BY symbol", False),
    ("date_arithmetic", "SELECT ts, date - DATE '2016-11-01' AS a, date + 1 AS b, "
                        "2 + date AS c FROM {t} ORDER BY ts", True),
    # the fuzzer's findings F17 (RANGE frames over NULL and wide keys), F27 (LIMIT 0)
    ("range_null_keys", "SELECT ts, sum(bidsiz) OVER (ORDER BY small RANGE BETWEEN 70000 "
                        "PRECEDING AND CURRENT ROW) AS a, count(*) OVER (ORDER BY bidsiz RANGE "
                        "BETWEEN 5 PRECEDING AND CURRENT ROW) AS b, avg(bid) OVER (ORDER BY "
                        "bidsiz RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS c, max(bid) OVER "
                        "(ORDER BY small RANGE 40000 PRECEDING) AS d FROM {t} ORDER BY ts", True),
    ("range_time_keys", "SELECT ts, sum(small) OVER (ORDER BY time RANGE BETWEEN INTERVAL 1 "
                        "DAY PRECEDING AND CURRENT ROW) AS a, min(bid) OVER (ORDER BY tod RANGE "
                        "BETWEEN INTERVAL 10 HOURS PRECEDING AND CURRENT ROW) AS b, count(bid) "
                        "OVER (ORDER BY date RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT "
                        "ROW) AS c FROM {t} ORDER BY ts", True),
    ("running_wide_keys", "SELECT ts, sum(bidsiz) OVER (ORDER BY big) AS a, count(bid) OVER "
                          "(ORDER BY small) AS b, avg(bid) OVER (ORDER BY bidsiz) AS c, "
                          "max(small) OVER (ORDER BY bidsiz NULLS FIRST) AS d, min(bid) OVER "
                          "(ORDER BY big DESC) AS e, sum(bidsiz) OVER (ORDER BY ts) AS f "
                          "FROM {t} ORDER BY ts", True),
    ("limit_0", "SELECT bid FROM {t} ORDER BY bid LIMIT 0", True),
    # LIMIT p% as DuckDB: trunc(p / 100 * rows) after OFFSET, of the rows before it
    ("limit_percent", "SELECT ts, bid FROM {t} ORDER BY ts LIMIT 66.67%", True),
    ("limit_percent_offset", "SELECT ts FROM {t} ORDER BY ts DESC LIMIT 50% OFFSET 1", True),
    ("limit_percent_null", "SELECT ts FROM {t} ORDER BY ts LIMIT NULL%", True),
    # F28, F35: ASOF joins keep the right side's keys; USING keys and * over joins
    ("asof_keeps_right_keys", "SELECT a.ts, b.symbol AS s, b.date AS d, b.ts AS bts, b.bid "
                              "FROM {t} a ASOF LEFT JOIN {t} b ON a.symbol = b.symbol AND "
                              "a.date = b.date AND a.ts > b.ts ORDER BY a.ts", True),
    ("asof_using_right_time", "SELECT a.ts, b.ts AS bts, symbol, b.symbol AS bs, b.bid FROM {t}"
                              " a ASOF JOIN (SELECT symbol, ts - INTERVAL 1 SECOND AS ts, bid "
                              "FROM {t}) b USING (symbol, ts) ORDER BY a.ts", True),
    ("left_join_using", "SELECT a.ts, b.symbol AS bs, symbol, b.bidsiz FROM {t} a LEFT JOIN "
                        "(SELECT * FROM {t} WHERE bidsiz > 5) b USING (symbol) ORDER BY a.ts",
     True),
    ("star_over_join", "SELECT * FROM {t} a JOIN {t} b ON a.bidsiz = b.bidsiz ORDER BY a.ts",
     True),
    # F30-F33, F36-F40
    ("window_of_constants", "SELECT ts, lag('x') OVER (ORDER BY ts) AS a, lead(0.1, 2) OVER "
                            "(ORDER BY ts) AS b, lag(1.5, 1, 2.5) OVER (ORDER BY ts) AS c, "
                            "count(NULL) OVER (ORDER BY ts) AS d, sum(7) OVER (ORDER BY ts ROWS "
                            "BETWEEN 1 PRECEDING AND CURRENT ROW) AS e, lag(bidsiz, 1, 2.5) OVER "
                            "(ORDER BY ts) AS f, lead(bid, 1, 7) OVER (ORDER BY ts) AS g, "
                            "lag(name, 2, 'z') OVER (PARTITION BY symbol ORDER BY ts) AS h "
                            "FROM {t} ORDER BY ts", True),
    ("grouped_constants", "SELECT 'x' AS k, 1 AS one FROM {t} GROUP BY date", False),
    ("group_all_constants", "SELECT 2 AS two, NULL AS n FROM {t} GROUP BY ALL", False),
    ("constant_key_no_rows", "SELECT min(NULL) AS a, count(*) AS n FROM {t} WHERE bid > 100 "
                             "GROUP BY '2024-01-05'", False),
    ("constant_key_no_rows_2", "SELECT min(NULL) AS a FROM (SELECT 1 AS x WHERE FALSE) s "
                               "GROUP BY 'a'", False),
    ("pivot_count_zero", "SELECT * FROM (PIVOT {t} ON symbol USING count(bid) GROUP BY date) p",
     False),
    ("float_functions", "SELECT ts, least(exp(f), 2.5) AS a, sqrt(abs(f)) AS b, "
                        "ln(abs(f) + 1) AS c, greatest(log10(abs(f) + 2), 0.25) AS d "
                        "FROM {t} ORDER BY ts", True),
    ("null_mod_zero", "SELECT ts, bid % 0 AS a, NULL % 0 AS b, NULL // 0 AS c, "
                      "CASE WHEN bidsiz > 100 THEN bidsiz END % 0 AS d FROM {t} ORDER BY ts",
     True),
    ("infinite_timestamps", "SELECT count(*) AS n FROM {t} WHERE ts > CAST('-infinity' AS "
                            "TIMESTAMP) AND ts < CAST('infinity' AS TIMESTAMP)", False),
    ("casts_decimal_boolean", "SELECT ts, TRY_CAST(bid AS DECIMAL(10, 2)) AS a, TRY_CAST(name "
                              "AS BOOLEAN) AS b, CAST('Yes' AS BOOLEAN) AS c, TRY_CAST(f AS "
                              "DECIMAL(6, 3)) AS d, CAST(bid / 3 AS DECIMAL(18, 4)) AS e FROM "
                              "{t} WHERE NOT isnan(bid) ORDER BY ts", True),
    ("least_text_symbol", "SELECT ts, least(name, symbol) AS a, greatest(symbol, 'M') AS b "
                          "FROM {t} ORDER BY ts", True),
    # F42, F44
    ("count_distinct_constant", "SELECT count(DISTINCT 1) AS a, count(DISTINCT 'x') AS b FROM "
                                "{t} WHERE bid > 100 AND bid < 0", False),
    ("window_decimal_frames", "SELECT ts, avg(0.0) OVER (ORDER BY name DESC, ts ROWS BETWEEN 1 "
                              "PRECEDING AND CURRENT ROW) AS a, sum(0.5) OVER (ORDER BY ts ROWS "
                              "BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS b, max(bidsiz * 0.25) OVER "
                              "(ORDER BY ts RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT "
                              "ROW) AS c, sum(bidsiz * 0.1) OVER (ORDER BY ts) AS d, min(bidsiz * "
                              "0.5) OVER (ORDER BY small RANGE 40000 PRECEDING) AS e FROM {t} "
                              "ORDER BY ts", True),
    ("star_over_using", "SELECT * FROM {t} a LEFT JOIN (SELECT symbol, date, max(bid) AS hi "
                        "FROM {t} GROUP BY ALL) b USING (symbol, date) ORDER BY a.ts", True),
    # F48: the variance family as DuckDB's Welford updates answer: NaN for inf/NaN among two or
    # more values (a constant inf too), 0 for one value, exactly 0 for a constant, corr NaN
    # without spread, +-inf when the squares leave DOUBLE
    ("spread_special", "SELECT var_pop(CAST('inf' AS DOUBLE)) AS a, var_samp(CAST('NaN' AS "
                       "DOUBLE)) AS b, stddev_pop(2.5) AS c, covar_pop(bidsiz, f) AS d, "
                       "covar_samp(bid, 1.5) AS e, corr(bidsiz, small) AS g, corr(small, 3) AS h,"
                       " regr_slope(bid, small) AS i, regr_r2(small, 0.5) AS j, regr_sxx(f, bid)"
                       " AS k, var_pop(f) AS l, stddev_samp(bid) AS m, regr_intercept(bidsiz, "
                       "small) AS n, covar_pop(small, bidsiz) AS o, regr_syy(f, bidsiz) AS p "
                       "FROM {t}", False),
    ("spread_special_grouped", "SELECT symbol, var_pop(f) AS a, var_samp(CAST('-inf' AS DOUBLE))"
                               " AS b, covar_pop(f, small) AS c, corr(bid, small) AS d, "
                               "covar_pop(small, 7) AS e, regr_slope(small, bid) AS g, "
                               "stddev_pop(CAST('NaN' AS DOUBLE)) AS h FROM {t} GROUP BY symbol",
     False),
    ("spread_of_inf_literals", "SELECT symbol, covar_pop(greatest(bid, CAST('inf' AS DOUBLE)), "
                               "2.5) AS a, var_pop(greatest(bid, CAST('inf' AS DOUBLE))) AS b, "
                               "corr(least(bid, CAST('-inf' AS DOUBLE)), bidsiz) AS c, "
                               "sum(small) AS d FROM {t} GROUP BY symbol", False),
    ("spread_overflow", "SELECT var_pop(small * 1e303) AS a, stddev_samp(small * 1e303) AS b, "
                        "covar_pop(small * 1e303, small * 1e303) AS c, var_samp(big * 1e290) AS d"
                        ", var_pop(CASE WHEN bidsiz = 7 THEN 1.0 ELSE 1.7e308 END) AS e, "
                        "stddev_pop(CASE WHEN bidsiz = 7 THEN 1.0 ELSE 1.7e308 END) AS g "
                        "FROM {t}", False),
    # F49: FILTER (WHERE <constant>) holds (or not) on every row, not once
    ("filter_constant", "SELECT count(*) FILTER (WHERE TRUE) AS a, count(*) FILTER (WHERE "
                        "FALSE) AS b, sum(2) FILTER (WHERE 1 < 2) AS c, count(bid) FILTER (WHERE"
                        " NULL) AS d, sum(bidsiz) FILTER (WHERE TRUE) AS e, avg(1) FILTER (WHERE"
                        " TRUE) AS g, count(2) FILTER (WHERE NOT FALSE) AS h, max(bid) FILTER "
                        "(WHERE TRUE) AS i, var_pop(f) FILTER (WHERE TRUE) AS j FROM {t}", False),
    ("filter_constant_grouped", "SELECT symbol, count(*) FILTER (WHERE TRUE) AS a, sum(-7) "
                                "FILTER (WHERE TRUE) AS b, count(name) FILTER (WHERE 2 > 1) AS c"
                                " FROM {t} GROUP BY symbol", False),
    ("filter_constant_no_rows", "SELECT count(*) FILTER (WHERE TRUE) AS a, sum(7) FILTER (WHERE"
                                " TRUE) AS b, avg(1) FILTER (WHERE TRUE) AS c FROM {t} "
                                "WHERE bid > 100", False),
    # F50: first/last(x ORDER BY ...) over a filtered input: a partition that kept no row has
    # no value (its NULL keys sorted last and won a last())
    ("first_last_filtered", "SELECT last(bid ORDER BY ts) AS a, first(name ORDER BY ts DESC "
                            "NULLS FIRST) AS b, last(ts ORDER BY bidsiz, ts) AS c, first(small "
                            "ORDER BY big NULLS FIRST) AS d, last(f ORDER BY tod DESC) AS e FROM"
                            " {t} WHERE bidsiz IS NOT NULL", False),
    ("first_last_filtered_grouped", "SELECT date, last(name ORDER BY ts) AS a, first(bid ORDER "
                                    "BY small DESC NULLS FIRST) AS b FROM {t} WHERE symbol = 'A'"
                                    " OR bidsiz IS NULL GROUP BY date", False),
    ("first_last_null_keys", "SELECT last(name ORDER BY bidsiz, ts) AS a, first(tod ORDER BY bidsiz"
                             " NULLS FIRST, ts) AS b, last(bid ORDER BY flag, ts) AS c FROM {t}",
     False),
    # F51: continuous quantiles interpolate lo * (1 - d) + hi * d (-inf beside a number is -inf);
    # FLOAT in DOUBLE (F57: DuckDB's FLOAT rule differs by design; test_regressions F57)
    ("quantile_infinite", "SELECT median(CAST(f AS DOUBLE)) AS a, quantile_cont(CAST(f AS "
                          "DOUBLE), 0.7) AS b, median(bid) AS c, quantile_cont(small, 0.9) AS d,"
                          " percentile_cont(0.25) WITHIN GROUP (ORDER BY CAST(f AS DOUBLE)) AS e,"
                          " percentile_cont(0.4) WITHIN GROUP (ORDER BY CAST(f AS DOUBLE) DESC)"
                          " AS g, quantile_cont(bidsiz, 0.5) AS h, quantile_cont(CAST(f AS "
                          "DOUBLE), 0.3) AS i, percentile_cont(0.6) WITHIN GROUP (ORDER BY "
                          "CAST(f AS DOUBLE) DESC) AS j FROM {t}", False),
    ("quantile_infinite_grouped", "SELECT date, median(CAST(f AS DOUBLE)) AS a, quantile_cont("
                                  "CAST(f AS DOUBLE), 0.1) AS b FROM {t} GROUP BY date", False),
    # an integer column compared with a constant in its stored type's range is compared as
    # stored; at and past the range's ends, flipped, NULL-safe, in CASE and FILTER
    ("integer_comparisons", "SELECT small >= -32768 AS a, small < 32768 AS b, small = 32767 AS c,"
                            " -32768 = small AS d, small > -32769 AS e, bidsiz <> 7 AS g, "
                            "7 <= bidsiz AS h, small IS NOT DISTINCT FROM 0 AS i, bidsiz IS "
                            "DISTINCT FROM 5 AS j, small <= 2147483648 AS k, bidsiz = "
                            "2147483647 AS l, bidsiz > -2147483649 AS m, CASE WHEN small < 0 "
                            "THEN 'n' ELSE 'p' END AS o, small != CAST(NULL AS INTEGER) AS p, "
                            "small BETWEEN -32768 AND 0 AS q, bidsiz BETWEEN 6 AND 2147483648"
                            " AS r, 5 BETWEEN small AND bidsiz AS s FROM {t}", False),
    ("integer_comparisons_filtered", "SELECT count(*) FILTER (WHERE small >= 0) AS a, count(*) "
                                     "AS b, sum(bidsiz) FILTER (WHERE bidsiz < 100) AS c FROM "
                                     "{t} WHERE small <> 32767 OR bidsiz >= -5", False),
    # continuous quantiles of integers select their two values among the integers as stored
    # (SMALLINT, INTEGER, BIGINT: the BIGINT extremes interpolated in DOUBLE), NULLs skipped
    ("quantile_integers", "SELECT median(small) AS a, quantile_cont(bidsiz, 0.9) AS b, median(big)"
                          " AS c, quantile_cont(big, 0.3) AS d, percentile_cont(0.6) WITHIN GROUP"
                          " (ORDER BY small DESC) AS e, quantile_cont(CAST(small AS BIGINT) * 3, "
                          "0.25) AS g, median(bidsiz) FILTER (WHERE small > 0) AS h, "
                          "quantile_cont(bidsiz, 0) AS i, quantile_cont(big, 1) AS j FROM {t}",
     False),
    ("quantile_integers_grouped", "SELECT symbol, median(small) AS a, quantile_cont(big, 0.7) AS b,"
                                  " percentile_cont(0.2) WITHIN GROUP (ORDER BY bidsiz DESC) AS c "
                                  "FROM {t} GROUP BY symbol", False),
    # F52: count(<a constant that is NULL>) is 0 (count(CAST(NULL AS INTEGER)) counted the
    # rows); a CTE's constant column is one value per row in an aggregate
    ("aggregates_of_cte_constants", "WITH s AS (SELECT symbol, bid, 100 AS c, CAST(NULL AS "
                                    "INTEGER) AS z, 'k' AS w FROM {t}) SELECT sum(c) AS a, "
                                    "count(c) AS b, count(z) AS d, "
                                    "count(DISTINCT c) AS g, avg(c) AS h, max(w) AS i, count(*) "
                                    "FILTER (WHERE c > 50) AS j, count(CAST(NULL AS INTEGER)) AS"
                                    " k, sum(c) FILTER (WHERE bid > 1) AS l FROM s", False),
    ("aggregates_of_cte_constants_grouped", "WITH s AS (SELECT symbol, 100 AS c FROM {t}) SELECT"
                                            " symbol, sum(c) AS a, count(c) AS b, sum(c + 1) AS"
                                            " d FROM s GROUP BY symbol", False),
    # F53: quantile_disc of BIGINT is exact (polars' quantile passed through doubles)
    ("quantile_disc_exact", "SELECT quantile_disc(big, 0.1) AS a, quantile_disc(big // 3, 0.5) "
                            "AS b, quantile_disc(big, 0.9) AS c, percentile_disc(0.4) WITHIN "
                            "GROUP (ORDER BY big // 7 DESC) AS d, quantile_disc(bidsiz, 0.5) AS"
                            " e, quantile_disc(small, 1) AS g FROM {t}", False),
    ("quantile_disc_exact_grouped", "SELECT symbol, quantile_disc(big // 3, 0.5) AS a, "
                                    "percentile_disc(0.75) WITHIN GROUP (ORDER BY big DESC) AS"
                                    " b FROM {t} GROUP BY symbol", False),
    # F56: median/quantile_cont of a DECIMAL is that DECIMAL (interpolated over the unscaled
    # integers, truncated toward zero); a descending order's quantile from the exact q.  (hfq
    # computes integer columns as BIGINT: small * 0.01 is DuckDB's DECIMAL(21, 2), whose
    # interpolation truncates the step, not the sum -- F92; DuckDB's SMALLINT product is
    # DECIMAL(8, 2), hence the CAST for the oracle)
    ("quantile_decimal", "SELECT median(small * 0.01) AS a, quantile_cont(small * 0.01, 0.7) AS "
                         "b, percentile_cont(0.3) WITHIN GROUP (ORDER BY CAST(small AS BIGINT) "
                         "* 0.01 DESC) AS c,"
                         " median(bidsiz * 0.25) AS d, median(round(100.25)) AS e, "
                         "quantile_cont(2.5, 0.5) AS g, median(CASE WHEN bidsiz = 5 THEN 1.25 "
                         "WHEN bidsiz = 7 THEN 2.50 END) AS h FROM {t}", False),
    ("quantile_decimal_grouped", "SELECT date, median(small * 0.01) AS a, percentile_cont(0.9) "
                                 "WITHIN GROUP (ORDER BY big * 0.5) AS b FROM {t} GROUP BY date",
     False),
    # NULL-safe comparisons, IS TRUE
    # F65: count() of a constant expression counts the rows where it is not NULL
    ("count_null_constant", "SELECT count(CAST(NULL AS INTEGER)) AS a, count(nullif(1, 1)) AS b, "
                            "count(2 + 3) AS c, count(nullif(1, 1)) FILTER (WHERE bid > 0) AS d "
                            "FROM {t}", False),
    # F66: weighted_avg of integers: exact sums (doubles lost the small weights)
    ("weighted_avg_integers", "SELECT weighted_avg(bidsiz, small) AS a, weighted_avg(big, 1) "
                              "AS b, weighted_avg(small, bidsiz) AS c FROM {t} WHERE big <> 0",
     False),
    # F67: DECIMAL products at the sum of the scales; round() keeps integers and scales
    ("decimal_products", "SELECT 0.1 * 0.5 AS a, (100 - 0.5) * abs(2.5) AS b, "
                         "sum(0.5 * 1.5) AS c, -(100.25 * 2.5) AS d, 3 * 0.25 AS e, "
                         "max(bidsiz * 0.25) AS f FROM {t}", False),
    ("round_keeps_types", "SELECT round(round(2.5), 1) AS a, round(floor(-2.5), 1) AS b, "
                          "round(2.567, 5) AS c, round(-15, -1) AS d, "
                          "sum(round(bidsiz, -1)) AS e FROM {t}", False),
    # F70: avg of integers summed exactly (a mean in doubles lost 2^63's cancellation)
    ("avg_bigint_exact", "SELECT avg(big) AS a, avg(bidsiz) AS b, avg(small) AS c FROM {t}",
     False),
    # F75: round(NULL) is a BIGINT NULL (DuckDB binds its BIGINT overload)
    ("round_null_bigint", "SELECT ts, round(NULL, 1) AS a, least(bidsiz, round(NULL)) AS b, "
                          "lag(round(NULL, 1), 1, 2.5) OVER (ORDER BY ts) AS c FROM {t} "
                          "ORDER BY ts", True),
    # F73: the same over a whole-partition window frame
    ("avg_bigint_exact_window", "SELECT ts, avg(big) OVER () AS a, avg(small) OVER "
                                "(PARTITION BY date) AS b, avg(bidsiz) OVER () AS c FROM {t} "
                                "ORDER BY ts", True),
    # F64: DECIMAL casts round half away from zero; lag/lead defaults in DuckDB's types
    ("decimal_cast_rounds", "SELECT ts, CAST(1.25 AS DECIMAL(2, 1)) AS a, CAST(-0.05 AS "
                            "DECIMAL(3, 1)) AS b, CAST(bidsiz AS DECIMAL(4, 1)) AS c, "
                            "lag(2.5, 1, 1.25) OVER (ORDER BY ts) AS d, lag(2, 1, 2.7) OVER "
                            "(ORDER BY ts) AS e, lead(sign(1) + 1, 1, 127) OVER (ORDER BY ts) "
                            "AS f FROM {t} ORDER BY ts", True),
    ("distinct_from", "SELECT ts, bidsiz IS DISTINCT FROM 5 AS a, bid IS NOT DISTINCT FROM "
                      "NULL AS b, flag IS TRUE AS c, flag IS NOT FALSE AS d FROM {t} "
                      "ORDER BY ts", True),
]


@pytest.mark.parametrize("table", ["m", "m1"])
@pytest.mark.parametrize("case", SAME, ids=[c[0] for c in SAME])
def test_same_as_duckdb(db, duck, table, case):
    what, text, ordered = case
    sql = text.format(t=table)
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=ordered, what=what)


# (id, SQL, the message hfq gives) -- DuckDB raises on each too
RAISES = [
    ("int_overflow_add", "SELECT big + 1 AS x FROM {t}", "integer overflow in big + 1"),
    ("int_overflow_mul", "SELECT big * 2 AS x FROM {t}", "integer overflow in big * 2"),
    ("int_overflow_neg", "SELECT -big AS x FROM {t}", "integer overflow in -big"),
    ("int_div_zero", "SELECT bidsiz // 0 AS x FROM {t}", "division by zero in bidsiz // 0"),
    ("int_mod_zero", "SELECT bidsiz % 0 AS x FROM {t}", "division by zero in bidsiz % 0"),
    ("cast_range", "SELECT CAST(big AS INTEGER) AS x FROM {t}", "conversion failed"),
    ("cast_text", "SELECT CAST(name AS INTEGER) AS x FROM {t}", "conversion failed"),
    ("cast_decimal_nan", "SELECT CAST(bid AS DECIMAL(10, 2)) AS x FROM {t}",
     "conversion failed"),
    ("timestamp_past_ns", "SELECT count(*) AS x FROM {t} WHERE ts < TIMESTAMP '2300-01-01'",
     "outside years 1678-2261"),
    ("range_start_overflow", "SELECT sum(bidsiz) OVER (ORDER BY big RANGE BETWEEN 5 PRECEDING "
                             "AND CURRENT ROW) AS x FROM {t}", "integer overflow"),
    # F64: a lag/lead default is cast to DuckDB's type of the value (INTEGER, DECIMAL(2,1))
    ("lag_default_past_integer", "SELECT lag(2, 1, 9223372036854775807) OVER (ORDER BY ts) "
                                 "AS x FROM {t}", "conversion failed (CAST to INT"),
    ("lead_default_past_decimal", "SELECT lead(-2.5, 1, 100.25) OVER (ORDER BY ts) AS x "
                                  "FROM {t}", "conversion failed (CAST to DECIMAL(2, 1))"),
    ("lead_default_past_tinyint", "SELECT lead(sign(1), 1, 32767) OVER (ORDER BY ts) AS x "
                                  "FROM {t}", "conversion failed (CAST to TINYINT)"),
    ("decimal_cast_rounds_past", "SELECT CAST(9.96 AS DECIMAL(2, 1)) AS x FROM {t}",
     "conversion failed (CAST to DECIMAL(2, 1))"),
    ("count_failing_constant", "SELECT count(CAST('None' AS INTEGER)) AS x FROM {t}",
     "conversion failed"),
    ("weighted_avg_product_overflow", "SELECT weighted_avg(big, bidsiz) AS x FROM {t}",
     "integer overflow (value * weight leaves BIGINT)"),
    # F63: first/last evaluate their argument on every row (polars only at the row picked)
    ("last_value_every_row", "SELECT last_value(-big) OVER () AS x FROM m1",
     "integer overflow in -big"),
    ("first_value_every_row", "SELECT first_value(CAST(bid AS BIGINT)) OVER (ORDER BY ts ROWS "
                              "BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS x "
                              "FROM m1", "conversion failed"),
    ("last_every_row", "SELECT last(-big) AS x, first(CAST(bid AS BIGINT)) AS y FROM m1",
     "integer overflow in -big"),
]


@pytest.mark.parametrize("case", RAISES, ids=[c[0] for c in RAISES])
def test_raises_like_duckdb(db, duck, case):
    what, text, message = case
    sql = text.format(t="m")
    with pytest.raises(Exception):   # noqa: B017 - DuckDB's own error types
        duck.sql(sql).fetchall()
    with pytest.raises(HfqError) as info:
        db.sql(sql).collect()
    assert message in str(info.value), str(info.value)
    assert "hfq-error" not in str(info.value) and "polars" not in str(info.value).lower()


def test_errors_guarded_by_case_do_not_fire(db, duck):
    """DuckDB evaluates a CASE branch only for its rows: nothing raises there."""
    sql = ("SELECT ts, CASE WHEN bidsiz IS NOT NULL AND bidsiz <> 7 THEN big // (bidsiz - 7) "
           "ELSE 0 END AS x FROM m ORDER BY ts")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what="guarded")


# the same guarantees over 2,400 rows in 12 partitions: node stages and driver merges
WIDE = [
    ("w_aggregates", "SELECT symbol, count(1) AS n, sum(1) AS s, max(bid) AS hi, min(bid) AS lo,"
                     " sum(bidsiz) AS t, sum(big) AS b, avg(bid) AS a, var_samp(bid) AS v, "
                     "arg_max(bidsiz, ts) AS am, arg_min(name, bid) AS an, "
                     "first(bid ORDER BY ts) AS f, last(bidsiz ORDER BY ts) AS l "
                     "FROM w GROUP BY symbol", False),
    ("w_global", "SELECT count(1) AS n, max(bid) AS hi, min(bid) AS lo, sum(big) AS b, "
                 "count(DISTINCT name) AS d, median(bid) AS m, quantile_disc(bidsiz, 0.3) AS q"
                 " FROM w", False),
    ("w_not_in", "SELECT symbol, count(*) AS n FROM w WHERE bidsiz NOT IN (SELECT bidsiz "
                 "FROM w WHERE symbol = 'G') GROUP BY symbol", False),
    ("w_windows_local", "SELECT ts, sum(bidsiz) OVER (PARTITION BY symbol, date ORDER BY ts "
                        "ROWS UNBOUNDED PRECEDING) AS s, rank() OVER (PARTITION BY symbol, date "
                        "ORDER BY bidsiz DESC) AS r, max(bid) OVER (PARTITION BY symbol, date "
                        "ORDER BY ts ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING) AS m, "
                        "min(bid) OVER (PARTITION BY symbol, date ORDER BY ts ROWS BETWEEN "
                        "2 FOLLOWING AND 5 FOLLOWING) AS n, avg(bidsiz) OVER (PARTITION BY "
                        "symbol, date ORDER BY ts ROWS BETWEEN 4 PRECEDING AND 1 PRECEDING) AS a,"
                        " count(bid) OVER (PARTITION BY symbol, date ORDER BY time) AS c "
                        "FROM w", False),
    ("w_windows_global", "SELECT ts, row_number() OVER (ORDER BY bidsiz DESC, ts) AS r, "
                         "dense_rank() OVER (PARTITION BY name ORDER BY flag, bid DESC) AS d, "
                         "sum(bid) OVER (PARTITION BY symbol ORDER BY ts RANGE BETWEEN "
                         "INTERVAL '1 hour' PRECEDING AND CURRENT ROW) AS h FROM w", False),
    ("w_time", "SELECT time_bucket(INTERVAL '7 minutes', time) AS b, EXTRACT(dow FROM date) "
               "AS d, count(*) AS n, round(max(bid) / 3, 1) AS a FROM w WHERE time >= "
               "TIMESTAMP '2016-11-14 09:30:00' GROUP BY ALL", False),
    # F33: functions of FLOAT columns are DOUBLE
    ("w_float_functions", "SELECT ts, least(exp(f), 2.5) AS a, greatest(sqrt(abs(f)), 0.5) AS b,"
                          " ln(abs(f)) AS c, log10(abs(f)) AS d FROM w", False),
    ("w_limit_percent", "SELECT symbol, count(*) AS n FROM (SELECT * FROM w ORDER BY ts, "
                        "symbol LIMIT 33.3%) s GROUP BY symbol", False),
    ("w_limit_percent_groups", "SELECT symbol, date, count(*) AS n FROM w GROUP BY ALL ORDER "
                               "BY n, symbol, date LIMIT 15%", True),
    # F26: a constant beside a column in an aggregate (polars read past a filtered literal)
    ("w_arg_of_constant", "SELECT symbol, date, arg_max('f26-a', ts) AS a, arg_min(NULL, bid) "
                          "AS b, arg_min(3, bidsiz) AS c, covar_pop(1.5, bid) AS d, "
                          "weighted_avg(bid, 2) AS e, arg_max('f26-b', bid) FILTER (WHERE "
                          "bidsiz > 5) AS f, arg_min('f26-c', name) AS g, arg_max('f26-d', "
                          "bidsiz) FILTER (WHERE bidsiz IS NULL) AS h FROM w "
                          "GROUP BY symbol, date", False),
]


@pytest.mark.parametrize("case", WIDE, ids=[c[0] for c in WIDE])
def test_same_as_duckdb_over_many_partitions(db, duck, case):
    what, sql, ordered = case
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=ordered, what=what)


def test_range_offsets_over_other_keys_are_refused(db):
    """DuckDB frames RANGE offsets over DOUBLE keys too; hfq refuses them by name."""
    with pytest.raises(HfqError, match=r"RANGE frames with an offset over ORDER BY bid \(a "
                                       "number"):
        db.sql("SELECT sum(bidsiz) OVER (ORDER BY bid RANGE BETWEEN 1 PRECEDING AND CURRENT "
               "ROW) AS s FROM m").collect()


def test_wide_limit_0_over_many_partitions(db, duck):
    sql = "SELECT ts, bid FROM w ORDER BY bid DESC, ts LIMIT 0"
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what="limit 0")
