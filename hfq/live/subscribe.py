"""Subscribing: the rows of a table as they are published, resumable from an offset.

``for batch in t.subscribe(symbols=["IBM"], start="sod"): ...`` yields one Arrow record batch
per published batch that holds rows of those symbols, each once the batch is acknowledged
(on every node it went to).  Per publisher, batches come in its order (so each symbol's rows
in the order they were published); a subscriber sees every row once.

**Offsets.**  ``sub.offset`` is where the subscriber is: per publisher, the last batch
delivered (``{"feed-a": 1234}``, or as text ``"feed-a:1234"``).  A subscriber that stores it
with what it did with each batch (in one transaction of its own) and, after a crash,
subscribes again with ``start=<the stored offset>`` gets every row exactly once: nothing
before the offset, everything after it.  Each batch carries the offset after it in its schema
metadata (``hfq.offset``).  ``start="sod"``: every live row not written down yet (the start
of the day); ``"now"``: only batches acknowledged from now on.

**Slow subscribers never slow publishers.**  A subscriber pulls: each poll asks every node
for the batches after its offset, at most ``max_rows`` rows at a time (so it holds about
``max_rows`` rows per node, whatever the rate), waiting up to ``wait_s`` for one when there
is none.  Publishers never wait for subscribers; the nodes keep a day's rows anyway (for
queries) until its write-down and ``live_grace_s`` after it.  A subscriber that falls further
behind -- resuming from an offset whose batches were written down and dropped meanwhile --
gets :class:`~hfq.live.node.SubscriberLagError`: those rows are in the table (read them with
``scan``), and it subscribes again from ``"now"``.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from hfq import faults
from hfq.errors import ArgumentError
from hfq.live.cut import cut_of, enable, live_spec
from hfq.live.node import fetch, report
from hfq.live.snapshot import visible
from hfq.query.plan import filter_columns
from hfq.session import TableLike, check_columns, read_filters

__all__ = ["Subscription", "parse_offset"]


def parse_offset(offset: Any) -> dict[str, int]:
    """An offset as ``{publisher: sequence number}`` from a dict or its text form.

    Examples
    --------
    >>> parse_offset("feed-a:12,feed-b:3")
    {'feed-a': 12, 'feed-b': 3}
    >>> parse_offset({"feed-a": 12})
    {'feed-a': 12}
    """
    if isinstance(offset, Mapping):
        items = list(offset.items())
    elif isinstance(offset, str):
        items = []
        for part in offset.split(","):
            if part.strip():
                pub, sep, seq = part.strip().rpartition(":")
                if not sep or not pub:
                    raise ArgumentError(f"start=: an offset looks like 'feed-a:12,feed-b:3', "
                                        f"not {offset!r}", argument="start")
                items.append((pub, seq))
    else:
        raise ArgumentError(f"start=: 'sod', 'now' or an offset, not {offset!r}",
                            argument="start")
    try:
        return {str(p): int(s) for p, s in items}
    except ValueError:
        raise ArgumentError(f"start=: an offset's sequence numbers are integers: {offset!r}",
                            argument="start") from None


def offset_text(offset: Mapping[str, int]) -> str:
    return ",".join(f"{p}:{s}" for p, s in sorted(offset.items()))


class Subscription:
    """An iterator of the record batches published to a table (see the module).

    Examples
    --------
    >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
    ...                                   partition_by=hfq.Value("date"))
    >>> pub = t.publisher(name="feed")
    >>> for symbols in (["IBM"], ["C"], ["MSFT"]):
    ...     _ = pub.publish(quotes.to_arrow(symbols=symbols))
    >>> sub = t.subscribe(symbols=["IBM", "MSFT"], wait_s=0)
    >>> [(b.num_rows, dict(sub.offset)) for b in iter(sub.poll, None)]
    [(41, {'feed': 1}), (196, {'feed': 3})]
    """

    def __init__(self, table: TableLike, *, symbols: Iterable[str] | str | None = None,
                 start: Any = "sod", columns: Sequence[str] | None = None,
                 max_rows: int = 100_000, wait_s: float = 0.2) -> None:
        self.session = table.session
        self.table = table.name
        self.manifest = enable(self.session, table.snapshot())
        self.spec = live_spec(self.session, self.manifest)
        filters = read_filters(self.manifest, symbols=symbols)
        self.symbols = filters.symbols
        _, self.symbol_column = filter_columns(self.manifest)
        self.bounds = filters.bounds() or None
        self.columns = check_columns(self.manifest, columns)
        self.schema = self.manifest.schema.select(self.columns).arrow
        if max_rows < 1 or wait_s < 0:
            raise ArgumentError("max_rows= must be >= 1 and wait_s= >= 0", argument="max_rows")
        self.max_rows = max_rows
        self.wait_s = wait_s
        offset = not (isinstance(start, str) and start in ("sod", "now"))
        self.cut = {} if offset else cut_of(self.manifest)
        """Rows this subscriber does not want: what the table's files held when it began
        from ``"sod"``/``"now"`` (nothing, from an offset)."""
        if start == "now":
            reports = self.session.nodes.call_each(report, self.spec, None, self.cut,
                                                   self.manifest.version)
            self._fetched = visible(reports)
        elif start == "sod":
            self._fetched = {}
        else:
            self._fetched = parse_offset(start)
        self._delivered = dict(self._fetched)
        self._ready: deque[tuple[str, int, pa.RecordBatch | None]] = deque()
        self.closed = False

    def __repr__(self) -> str:
        return f"<hfq.live.Subscription to {self.table!r} at {offset_text(self.offset)!r}>"

    @property
    def offset(self) -> dict[str, int]:
        """Per publisher, the last batch delivered (or passed: it had no rows asked for).

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> t.publisher(name="feed").publish(quotes.to_arrow(symbols="IBM"))
        1
        >>> sub = t.subscribe(wait_s=0)
        >>> sub.poll().num_rows, sub.offset
        (41, {'feed': 1})
        """
        return dict(self._delivered)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self

    def __next__(self) -> pa.RecordBatch:
        while True:
            got = self.poll()
            if got is not None:
                return got
            if self.closed:
                raise StopIteration

    def poll(self) -> pa.RecordBatch | None:
        """The next batch, or None when none came within ``wait_s``.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> sub = t.subscribe(symbols="IBM", wait_s=0)
        >>> sub.poll() is None                                     # nothing published yet
        True
        >>> _ = t.publisher(name="feed").publish(quotes.to_arrow(symbols=["IBM", "C"]))
        >>> sub.poll().schema.metadata[b"hfq.offset"]
        b'{"feed": 1}'
        """
        if not self._ready:
            self._fill()
        while self._ready:
            pub, seq, batch = self._ready.popleft()
            self._delivered[pub] = seq
            if batch is not None:
                faults.point("live.subscribe.after_batch")
                return batch
        return None

    def close(self) -> None:
        """Stop: iterating ends once what was fetched is delivered.

        Examples
        --------
        >>> t = hfq.connect(tmp).create_table("q", hfq.schemas.TAQ,
        ...                                   partition_by=hfq.Value("date"))
        >>> sub = t.subscribe(wait_s=0)
        >>> sub.close()
        >>> list(sub)
        []
        """
        self.closed = True

    def _fill(self) -> None:
        """One poll of every node: the batches after the offset that are visible and that
        every node has sent all of, in publication order per publisher."""
        nodes = self.session.nodes
        alive = nodes.alive()
        while True:   # each slice from the first of its nodes that answers: ask again when
            # a node thought alive did not (its slices are then served by the next copy)
            answers = nodes.call_each(fetch, self.spec, self._fetched, self.bounds,
                                      self.symbols, self.symbol_column, self.columns, alive,
                                      self.max_rows, self.wait_s, self.cut)
            if set(answers) >= set(alive):
                break
            alive = sorted(answers)
        upto = visible({n: {"pubs": a["pubs"]} for n, a in answers.items()})
        for answer in answers.values():
            for pub, seq in answer["covered"].items():
                if seq is not None:
                    upto[pub] = min(upto.get(pub, seq), seq)
        parts: dict[tuple[str, int], list[pa.Table]] = {}
        at: dict[tuple[str, int], float] = {}
        for answer in answers.values():
            for pub, seq, when, rows in answer["entries"]:
                if seq > upto.get(pub, 0):
                    continue
                key = (pub, seq)
                at[key] = when
                if rows is not None and rows.num_rows:
                    parts.setdefault(key, []).append(rows)
        for key in sorted(at, key=lambda k: (at[k], k)):
            pub, seq = key
            got = parts.get(key)
            batch = None
            if got:
                table = got[0] if len(got) == 1 else pa.concat_tables(got)
                table = table.cast(self.schema).combine_chunks()
                meta = {b"hfq.offset": json.dumps({**self._fetched, pub: seq}).encode(),
                        b"hfq.publisher": pub.encode(), b"hfq.seq": str(seq).encode()}
                batch = pa.RecordBatch.from_arrays(
                    [c.chunk(0) if c.num_chunks else pa.array([], c.type)
                     for c in table.columns], schema=self.schema.with_metadata(meta))
            self._ready.append((pub, seq, batch))
            self._fetched[pub] = max(self._fetched.get(pub, 0), seq)
        for pub, seq in upto.items():   # batches with nothing here for this subscriber
            if seq > self._fetched.get(pub, 0) and all(
                    pub not in a["covered"] for a in answers.values()):
                self._ready.append((pub, seq, None))
                self._fetched[pub] = seq
