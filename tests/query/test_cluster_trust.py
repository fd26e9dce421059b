"""Issue 24's semantics on a 3-node local cluster: node stages on the servers holding the
partitions of the 12-partition adversarial table ``w``, partial states merged on the driver
-- the new aggregates (corr, covar, regr_*, weighted_avg, quantiles, arg_min/arg_max) and the
NULL/NaN rules of windows and set operations equal DuckDB's on the same rows."""

from __future__ import annotations

import pytest
from nasty import load, oracle
from oracle import assert_same
from test_dialect import DIALECT
from test_trust import WIDE

pytestmark = pytest.mark.timeout(400)

CHOSEN = WIDE + [c for c in DIALECT if c[0] in (
    "corr_covar", "regr", "regr_global", "weighted_avg", "median_quantiles", "within_group",
    "arg_min_max", "first_last_order", "filter", "qualify", "union", "intersect",
    "exists_correlated", "in_correlated", "scalar_correlated", "mixed_directions",
    "last_value_ignore_nulls", "pivot_statement")]


@pytest.fixture(scope="module")
def cluster():
    from hfq.testing import local_cluster
    with local_cluster(nodes=3, cpus_per_node=1, object_store_mb=150) as c:
        yield c


@pytest.fixture(scope="module")
def db(cluster):
    d = cluster.connect()
    load(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    return oracle(db)


def test_partitions_are_spread_over_the_nodes(db):
    nodes = {n for ns in db["w"].partitions()["nodes"].to_list() for n in ns}
    assert len(nodes) == 3


@pytest.mark.parametrize("case", CHOSEN, ids=[c[0] for c in CHOSEN])
def test_same_as_duckdb_on_the_cluster(db, duck, case):
    what, sql, ordered = case
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=ordered, what=what)
