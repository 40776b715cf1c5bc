"""Accounts on the floor: one account whatever the case or Unicode form of its name,
answers that do not tell whether a name exists, what a failed sign-in leaves in the
trail, and a second sign-in ending the first session. Over a real socket."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from storage.errors import ReviewerInvalid
from storage.review_interface import ReviewStore
from tasks.review.accounts import Candidate, add_reviewer
from tests.helpers.review import PASSWORD, audit_events
from tests.web.workstation import Served, csrf_of, serve, sign_in
from web import throttle

_VOLATILE = re.compile(r'value="[^"]*"')


@pytest.fixture
def served(review_store: ReviewStore, accounts) -> Iterator[Served]:
    with serve(review_store) as running:
        yield running


@pytest.mark.parametrize("typed", ["ann", "ANN", "Ann", "\uff41\uff4e\uff4e"])  # ａｎｎ: fullwidth
def test_a_name_is_one_account_whatever_its_case_and_form(served: Served, typed: str) -> None:
    with httpx.Client(base_url=served.url) as client:
        assert sign_in(client, typed).status_code == 303
    assert audit_events(served.store)[-1].actor == "ann"


@pytest.mark.parametrize("typed", [" ann", "ann ", "ann\u200b", "\u200dann", "an\u00adn"])
def test_a_name_with_spaces_or_invisible_characters_is_refused(served: Served, typed: str) -> None:
    with httpx.Client(base_url=served.url) as client:
        assert sign_in(client, typed).status_code == 401


@pytest.mark.parametrize("taken", ["ANN", "Ann", "\uff21nn"])
def test_a_name_taken_in_another_case_or_form_is_refused(
    review_store: ReviewStore, accounts, taken: str
) -> None:
    with pytest.raises(ReviewerInvalid) as refused, review_store.unit_of_work() as uow:
        add_reviewer(uow, name=taken, role="reviewer", password=PASSWORD)
    assert refused.value.message == (
        f"{taken!r} is taken: a reviewer named 'ann' exists already "
        "(names are compared whatever their case or form)"
    )


@pytest.mark.parametrize("password", [" " * 12, "\x00" * 12, " \x00 \t" * 4, "good password\x00"])
def test_a_password_of_spaces_or_nuls_is_refused(review_store: ReviewStore, password: str) -> None:
    with pytest.raises(ReviewerInvalid, match="password"), review_store.unit_of_work() as uow:
        add_reviewer(uow, name="cat", role="reviewer", password=password)


def test_known_and_unknown_names_answer_alike_to_the_fifth_attempt_and_after(
    served: Served,
) -> None:
    def attempts(name: str) -> list[tuple[int, str]]:
        answers = []
        with httpx.Client(base_url=served.url) as client:
            for _ in range(6):
                answer = sign_in(client, name, "wrong password")
                answers.append((answer.status_code, _VOLATILE.sub("", answer.text)))
        return answers

    known, unknown = attempts("bob"), attempts("nobody")
    assert [status for status, _ in known] == [401] * 6
    assert known == unknown


def test_a_failed_name_is_in_the_trail_only_when_it_names_an_account(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        sign_in(client, "BOB", "wrong password")
        sign_in(client, "correct horse battery staple", "wrong password")
    known, typed = [e for e in audit_events(served.store) if e.action == "login_failed"]
    assert known.actor == "bob"
    assert "horse" not in repr(typed)
    assert re.fullmatch(r"unknown-name:[0-9a-f]{16}", typed.actor)


def test_signing_in_while_signed_in_ends_the_old_session(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client, httpx.Client(base_url=served.url) as tab:
        assert sign_in(client, "ann").status_code == 303
        old = client.cookies.get("medasr_session")
        form = tab.get("/login")  # a sign-in form loaded beside the signed-in page
        client.cookies.set("medasr_login", tab.cookies["medasr_login"], path="/login")
        data = {"name": "bob", "password": PASSWORD, "csrf_token": csrf_of(form.text)}
        assert client.post("/login", data=data).status_code == 303
        assert client.cookies.get("medasr_session") != old
    with httpx.Client(base_url=served.url, cookies={"medasr_session": old}) as stale:
        assert stale.get("/").status_code == 303  # to /login: that session is over


def test_every_attempt_costs_one_verification_known_unknown_or_locked(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    verified: list[str] = []
    real = throttle.password_matches

    def counted(candidate: Candidate, password: str) -> bool:
        verified.append(candidate.name)
        return real(candidate, password)

    monkeypatch.setattr(throttle, "password_matches", counted)
    with httpx.Client(base_url=served.url) as client:
        for name in ("bob", "nobody"):
            for _ in range(6):  # the sixth meets a locked account (or none)
                sign_in(client, name, "wrong password")
    assert verified == ["bob"] * 6 + ["nobody"] * 6
