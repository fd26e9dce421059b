"""Identity through the service: passwords, bearer tokens (wrong, expired, forged, issued
before a password change, of a removed user), brute force slowed by lockouts -- each refused
and audited.  Time is the service's clock, moved by the test (no sleeps)."""

from __future__ import annotations

import base64
import json

import adbc_driver_manager
import pyarrow.flight as flight
import pytest

from hfq.service.state import SecurityStore
from tests.service.conftest import PW, Env

Error = adbc_driver_manager.Error


def client(env: Env) -> flight.FlightClient:
    return flight.FlightClient(env.uri, tls_root_certs=env.ca_pem.encode())


def login(env: Env, user: str, password: str) -> str:
    """A bearer token from a Basic login, as any Flight client gets one."""
    header = client(env).authenticate_basic_token(user, password)
    return header[1].decode().split(" ", 1)[1]


def tables_with(env: Env, token: str) -> list:
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
    return list(client(env).list_actions(options=options))


def test_a_password_gives_a_token_that_works_until_it_expires(fresh):
    token = login(fresh, "ann", PW["ann"])
    assert tables_with(fresh, token)
    fresh.clock.now += 8 * 3600 + 1
    with pytest.raises(flight.FlightUnauthenticatedError, match="expired"):
        tables_with(fresh, token)
    assert fresh.audit(kind="token", outcome="refused")[-1]["detail"].startswith(
        "the token expired")


def test_wrong_password_and_unknown_user_get_the_same_answer(fresh):
    answers = []
    for user, password in (("ann", "not ann's password"), ("nobody", "any password at all")):
        with pytest.raises(flight.FlightUnauthenticatedError) as exc:
            login(fresh, user, password)
        answers.append(str(exc.value).split(". Detail")[0])
    assert answers[0] == answers[1] == "unknown user or wrong password"
    assert [r["detail"] for r in fresh.audit(kind="login", outcome="failed")] == \
        ["wrong password", "unknown user"]


def test_forged_and_foreign_tokens_are_refused(fresh):
    token = login(fresh, "ann", PW["ann"])
    payload, signature = token.split(".")
    doc = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    doc["u"] = "root"                                  # ann claims to be root
    forged = base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()
    for bad in (f"{forged}.{signature}", token[:-2] + "xx", "garbage", ""):
        with pytest.raises(flight.FlightUnauthenticatedError):
            tables_with(fresh, bad)
    with pytest.raises(flight.FlightUnauthenticatedError, match="authentication required"):
        list(client(fresh).list_actions())
    assert len(fresh.audit(kind="token", outcome="refused")) >= 3


def test_a_password_change_or_removal_refuses_older_tokens(fresh):
    ann, bob = login(fresh, "ann", PW["ann"]), login(fresh, "bob", PW["bob"])
    fresh.admin.set_password("ann", "ann's new long password")
    fresh.admin.remove_user("bob")
    with pytest.raises(flight.FlightUnauthenticatedError, match="password changed"):
        tables_with(fresh, ann)
    with pytest.raises(flight.FlightUnauthenticatedError):
        tables_with(fresh, bob)
    assert tables_with(fresh, login(fresh, "ann", "ann's new long password"))


def test_a_revoke_applies_to_the_next_call_of_an_open_connection(fresh):
    with fresh.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM quotes")
        assert cur.fetch_arrow_table().num_rows == 1
        fresh.admin.revoke(["SELECT"], "quotes", "analyst")
        with pytest.raises(Error):
            cur.execute("SELECT count(*) FROM quotes")
    assert fresh.audit(kind="query", outcome="denied")[-1]["user"] == "ann"


def test_brute_force_is_locked_out_then_let_in(fresh):
    for _ in range(5):
        with pytest.raises(Error):
            fresh.adbc("ann", "a wrong password!").close()
    with pytest.raises(Error, match="too many failed logins"):
        fresh.adbc("ann").close()                      # the right password, refused too
    fresh.clock.now += 61
    fresh.adbc("ann").close()
    outcomes = [r["outcome"] for r in fresh.audit(kind="login", user="ann")]
    assert outcomes == ["failed"] * 5 + ["locked", "ok"]


def test_lockouts_in_a_row_last_longer(fresh):
    for _ in range(2):
        for _ in range(5):
            with pytest.raises(flight.FlightUnauthenticatedError):
                login(fresh, "bob", "wrong password, again")
        fresh.clock.now += 61
    with pytest.raises(flight.FlightUnauthenticatedError, match="too many"):
        login(fresh, "bob", PW["bob"])                # the second lockout lasts 120 s
    fresh.clock.now += 60
    assert login(fresh, "bob", PW["bob"])


def test_service_accounts_log_in_with_their_key(fresh):
    key = fresh.admin.add_user("loader", service=True)
    fresh.admin.grant(["INSERT"], "quotes", "loader")
    assert login(fresh, "loader", key)
    rotated = fresh.admin.set_password("loader")
    with pytest.raises(flight.FlightUnauthenticatedError):
        login(fresh, "loader", key)
    assert login(fresh, "loader", rotated)
    assert SecurityStore(fresh.db.session).head().users["loader"].kind == "service"
