"""The query engine: one logical plan, a lazy polars-flavoured API and SQL, executed next to
the data (filters, windows and partial aggregates on the nodes; exact merges on the driver).

See :class:`~hfq.engine.query.Query` (from :meth:`hfq.Table.query`) and
:func:`~hfq.engine.sql.compile_sql` (from :meth:`hfq.Database.sql`).
"""

from hfq.engine.exprs import Bucket, bucket, minute_of_day
from hfq.engine.query import GroupBy, Query

__all__ = ["Bucket", "GroupBy", "Query", "bucket", "minute_of_day"]
