"""numba is imported on the first kernel call, not by ``import hfq`` (hfq.storage.jit)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import numpy as np

from hfq.storage import jit

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import pyarrow as pa
    import hfq
    assert "numba" not in sys.modules, "import hfq imported numba"
    db = hfq.connect(sys.argv[1])
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Hash("symbol", 2))
    data = hfq.synth.taq_table(rows_per_day=3000, symbols=7)
    t.append(data)
    assert "numba" in sys.modules, "writing a file compiled no kernel"
    cols = ["time", "bid", "ofr", "bidsiz", "ofrsiz"]
    def rows(table):
        return sorted(zip(*(table.column(c).to_pylist() for c in cols)))
    assert rows(t.scan().to_arrow()) == rows(data), "the rows read back differ"
    print("ok")
""")


def test_import_hfq_leaves_numba_to_the_first_kernel(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


READER = textwrap.dedent("""
    import sys
    import hfq
    from hfq.storage import light
    from hfq.storage.cache import clear_process_caches
    t = hfq.connect(sys.argv[1])["q"]
    cols = ["symbol", "time", "bid", "ofr", "bidsiz", "ofrsiz"]
    def rows(table):
        return sorted(zip(*(table.column(c).to_pylist() for c in cols)))
    first = rows(t.scan(symbols=["IBM"]).to_arrow())
    assert first, "no rows"
    assert "numba" not in sys.modules, "a small read loaded numba"
    light._numpy_left = 0   # the budget spent: the next decode is numba's
    clear_process_caches()   # decoded again, not served from the cache
    assert rows(t.scan(symbols=["IBM"]).to_arrow()) == first, "numba reads other rows"
    assert "numba" in sys.modules, "past the budget, numba did not decode"
    print("ok")
""")


def test_a_process_that_reads_a_little_decodes_in_numpy_then_in_numba(tmp_path):
    """Reading a symbol in a fresh process costs no numba start-up (about 0.5 s): the
    bit-packed columns decode in numpy; once the process has decoded ``NUMPY_VALUES`` values
    that way, numba's kernel takes over -- and reads the same rows."""
    import hfq
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Hash("symbol", 2),
                        sort_by=("symbol", "time"))
    t.append(hfq.synth.taq_table(rows_per_day=30_000, symbols=7))
    done = subprocess.run([sys.executable, "-c", READER, str(tmp_path / "db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


def test_kernels_calling_kernels_compile_together():
    """The first call turns every kernel of the module into a numba dispatcher (a kernel that
    calls another finds a dispatcher under the callee's name), the imported ones included."""
    home = types.ModuleType("home")
    user = types.ModuleType("user")
    exec(textwrap.dedent("""
        from hfq.storage.jit import njit
        @njit(cache=False)
        def square(x):
            return x * x
        @njit(cache=False)
        def total(v):
            s = 0
            for x in v:
                s += square(x)
            return s
    """), home.__dict__)
    user.__dict__.update(njit=jit.njit, total=home.total)
    exec(textwrap.dedent("""
        @njit(cache=False)
        def twice(v):
            return 2 * total(v)
    """), user.__dict__)
    assert isinstance(user.twice, jit.Kernel) and isinstance(home.square, jit.Kernel)
    assert user.twice(np.arange(4)) == 2 * (0 + 1 + 4 + 9)
    assert not isinstance(user.twice, jit.Kernel) and not isinstance(home.square, jit.Kernel)
    assert home.total(np.arange(3)) == 5 and type(home.total).__name__ == "CPUDispatcher"
