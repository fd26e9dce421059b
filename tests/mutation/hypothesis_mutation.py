"""A pytest plugin for the mutation check's runs (``-p hypothesis_mutation``): a hypothesis
profile that stops at the first failing example instead of shrinking it (a mutant only needs
to be killed, and shrinking took minutes), with the same examples on every run
(``derandomize``: a mutant is killed or not, never by luck) and no example database.

Loaded before the repository's ``conftest.py``, which then loads the profile named by
``HYPOTHESIS_PROFILE`` -- ``mutation``, set by ``run.py``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "mutation",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    derandomize=True,
)
