"""Repository-wide pytest settings, here at the rootdir so they reach the doctests collected
from hfq/ as well as tests/: one hypothesis profile for every property test and doctest.

Slow data generation on a loaded machine (CI has 2 shared cores) is never a failure: the
"ci" profile suppresses the timing and size health checks and has no per-example deadline.
It is loaded by default and under CI=true; ``HYPOTHESIS_PROFILE=default`` gives hypothesis's
own settings back for local tuning.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
    deadline=None,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
