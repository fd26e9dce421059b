"""The differential SQL fuzzer: adversarial tables (:mod:`.data`), a grammar of the supported
dialect (:mod:`.exprs`, :mod:`.queries`), hfq against DuckDB (:mod:`.differential`,
:mod:`.compare`), SQLancer's metamorphic oracles (:mod:`.metamorphic`), shrinking
(:mod:`.shrink`) and campaigns (:mod:`.campaign`).  Used by ``tests/fuzz`` and
``benchmarks/fuzz.py``."""

__all__: list[str] = []
