"""Mutants of the API reference's guarantees (issue 25 item 4): every public callable has an
example, and the examples are exact (a planted bug in the code they show fails them).  The
pages' member lists (docs/api/*.md) are outside the copies this check runs on (run.py's COPY):
a page that renders a private name or misses a public one was planted by hand."""

from __future__ import annotations

from mutants import Mutant

API = "tests/docs/test_api_docs.py"

MUTANTS: list[Mutant] = [
    Mutant("docs-example-dropped", "docs", "hfq/reduce/basic.py",
           '        """The sum of two counts.\n\n        Examples\n        --------\n'
           "        >>> from hfq import reduce as hr\n        >>> hr.Count().merge(3, 4)\n"
           '        7\n        """',
           '        """The sum of two counts."""',
           "a public method of a public class without its example",
           (f"{API}::test_every_public_function_has_a_runnable_example",
            f"{API}::test_every_example_is_found_by_the_doctest_finder")),
    Mutant("docs-range-bucket-left", "docs", "hfq/partition.py",
           "return bisect.bisect_right(self.boundaries, _jsonable(value))",
           "return bisect.bisect_left(self.boundaries, _jsonable(value))",
           "a value equal to a boundary put in the bucket below it (b[i-1] <= v < b[i] broken): "
           "Range.bucket's example shows the boundary case",
           ("--doctest-modules", "hfq/partition.py")),
]
