"""An embedded Ray keeps to the database root and says when it starts.

Each case runs a fresh Python process with ``HOME`` pointed at an empty temp dir and Ray's
variables as a user has them (``RAY_TMPDIR``/``RAY_AUTH_MODE`` unset, unlike the rest of the
suite), so a token or temp file written to the home directory would show.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Unix sockets")]

SCRIPT = textwrap.dedent("""
    import sys
    import hfq
    from hfq import reduce as hr
    db = hfq.connect(sys.argv[1], threads=1)
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Hash("symbol", 2))
    t.append(hfq.synth.taq_table(rows_per_day=500, symbols=5))
    assert t.map_reduce(lambda df: df.height, hr.Sum()) == 500   # starts Ray
    assert t.map_reduce(lambda df: df.height, hr.Sum()) == 500   # and reuses it
    db.close()
    print("done")
""")


def _run(root: str, home: str, tmp: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RAY_") and k not in ("HOME", "TMPDIR")}
    env.update(HOME=home, TMPDIR=tmp, **extra)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, root], env=env, capture_output=True,
                          text=True, timeout=200)
    assert proc.returncode == 0 and "done" in proc.stdout, proc.stderr[-4000:]
    return proc


@pytest.fixture
def short_dir():
    """A short path: Ray's Unix socket paths under ``<root>/.ray`` must fit in 107 bytes."""
    path = tempfile.mkdtemp(prefix="hm", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_embedded_ray_files_and_token_live_under_the_root_and_startup_is_announced(short_dir):
    home, tmp, root = (os.path.join(short_dir, d) for d in ("home", "tmp", "db"))
    os.makedirs(home)
    os.makedirs(tmp)
    proc = _run(root, home, tmp)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("hfq: started")]
    assert len(lines) == 1, proc.stderr                       # once, not per call
    assert re.fullmatch(r"hfq: started an embedded Ray \(1 node, 1 CPUs\) in \d+\.\d s; "
                        rf"its files: {re.escape(os.path.join(root, '.ray'))}", lines[0])
    assert os.listdir(home) == []                             # no ~/.ray/auth_token, nothing
    token = os.path.join(root, ".ray", "auth_token")
    with open(token) as fh:
        assert len(fh.read().strip()) == 64                   # token auth stayed on
    assert stat.S_IMODE(os.stat(token).st_mode) == 0o600
    assert any(n.startswith("session_") for n in os.listdir(os.path.join(root, ".ray")))
    assert not [n for n in os.listdir(tmp) if n != "hfq-tests"]  # nothing in the temp dir
    assert "Token authentication is enabled" not in proc.stderr   # Ray's warning: no noise


def test_a_root_too_long_for_ray_sockets_uses_a_private_temp_dir_and_auth_can_be_off(
        short_dir):
    home, tmp = os.path.join(short_dir, "home"), os.path.join(short_dir, "tmp")
    root = os.path.join(short_dir, "a-database-root-with-a-rather-long-name", "db")
    os.makedirs(home)
    os.makedirs(tmp)
    proc = _run(root, home, tmp, RAY_AUTH_MODE="disabled")
    used = [n for n in os.listdir(tmp) if n.startswith("hfq-ray-")]
    assert len(used) == 1, os.listdir(tmp)
    assert f"its files: {os.path.join(tmp, used[0])}" in proc.stderr
    assert any(n.startswith("session_") for n in os.listdir(os.path.join(tmp, used[0])))
    assert os.listdir(home) == []
    assert not os.path.exists(os.path.join(root, ".ray", "auth_token"))   # disabled: no token
