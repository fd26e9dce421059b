"""The service's commands through the ``hfq`` program: users (a password read from stdin, a
service account's key printed once), grants with a row policy and masked columns, revokes,
quotas -- each checked in the security state the service reads, and a malformed grant refused
with a usage error (exit 2) that changes nothing."""

from __future__ import annotations

import io

import pytest

import hfq
from hfq.cli.app import main
from hfq.service.passwords import Passwords
from hfq.service.state import SecurityStore

PASSWORD = "a long enough password"


@pytest.fixture
def root(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    return str(tmp_path / "db")


@pytest.fixture
def hfq_cli(root, monkeypatch):
    """The ``hfq`` program on ``root`` (``stdin``: what it reads, e.g. a password)."""
    def run(*words, stdin=""):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        return main(["--root", root, *words])
    return run


def state(root):
    return SecurityStore(hfq.connect(root).session).head()


def test_users_grants_revokes_and_quotas_land_in_the_security_state(root, hfq_cli, capsys):
    assert hfq_cli("user", "add", "ann", "--role", "analyst", "--password-stdin",
                   stdin=PASSWORD + "\n") == 0
    ann = state(root).users["ann"]
    assert tuple(ann.roles) == ("analyst",)
    assert Passwords().verify(ann.password_hash, PASSWORD)
    assert not Passwords().verify(ann.password_hash, PASSWORD + "!")

    assert hfq_cli("user", "add", "loader", "--service") == 0
    out = capsys.readouterr().out
    assert "the key of service account loader (shown once): " in out
    key = out.rsplit(": ", 1)[1].strip()
    assert Passwords().verify(state(root).users["loader"].password_hash, key)

    assert hfq_cli("grant", "SELECT", "ON", "quotes", "TO", "analyst",
                   "--where", "ex IN ('N','P')", "--hide", "mmid") == 0
    grant = state(root).grants[("analyst", "quotes")]
    assert set(grant.privileges) == {"SELECT"} and list(grant.hidden) == ["mmid"]
    assert "ex IN ('N','P')" in grant.rows
    assert hfq_cli("grant", "--list") == 0
    assert "analyst  quotes  SELECT  rows: ex IN ('N','P')  hidden: mmid" in \
        capsys.readouterr().out

    assert hfq_cli("quota", "analyst", "--max-rows", "1000", "--timeout", "5") == 0
    quota = state(root).quotas["analyst"]
    assert (quota.max_rows, quota.timeout_s, quota.max_concurrent) == (1000, 5.0, None)

    assert hfq_cli("revoke", "SELECT", "ON", "quotes", "FROM", "analyst") == 0
    assert ("analyst", "quotes") not in state(root).grants
    assert hfq_cli("user", "rm", "ann") == 0
    assert "ann" not in state(root).users
    assert hfq_cli("user", "list") == 0
    assert capsys.readouterr().out.splitlines() == ["loader  service  roles: -"]


def test_a_malformed_grant_is_a_usage_error_that_changes_nothing(root, hfq_cli, capsys):
    before = state(root).version
    assert hfq_cli("grant", "SELECT", "ON", "quotes", "analyst") == 2
    assert "grant PRIVILEGES ON TABLE TO GRANTEE, or ROLE TO USER" in capsys.readouterr().err
    assert hfq_cli("grant", "SELECT", "ON", "nope", "TO", "analyst") == 1
    assert "nope" in capsys.readouterr().err
    assert hfq_cli("user", "add", "bob", "--password-stdin", stdin="short\n") == 1
    assert state(root).version == before and "bob" not in state(root).users
