"""The redirect after a decision (over a real socket, httpx): the next item of the
filtered queue, and the decided recording named only to the session that decided it."""

from __future__ import annotations

import re

from tests.helpers.review import add_transcribed
from tests.web.conftest import SEGMENTS
from tests.web.test_pages import client_of
from tests.web.workstation import Served, csrf_of

_BASE = re.compile(r'name="base_revision" value="(\d+)"')
_NOTICE = 'data-testid="next-item-notice"'


def test_the_decided_recording_is_named_only_to_the_session_that_decided(
    served: Served, recording: int
) -> None:
    first = add_transcribed(served.store, "/src/ta/1.wav", segments=SEGMENTS, language="ta")
    second = add_transcribed(served.store, "/src/ta/2.wav", segments=SEGMENTS, language="ta")
    with client_of(served, "ann") as ann, client_of(served, "bob") as bob:
        page = ann.get(f"/items/{first}?language=ta").text
        assert f'formaction="/items/{first}/accept?language=ta"' in page
        found = _BASE.search(page)
        assert found is not None
        form = {"csrf_token": csrf_of(page), "base_revision": found.group(1)}
        sent = ann.post(f"/items/{first}/accept?language=ta", data=form)
        assert sent.status_code == 303
        target = sent.headers["location"]
        assert target.startswith(f"/items/{second}?language=ta&notice=accepted&done={first}.")
        assert _NOTICE in ann.get(target).text
        assert "ta/1.wav" in ann.get(target).text
        assert _NOTICE not in bob.get(target).text  # another session: no name
        forged = ann.get(f"/items/{second}?notice=accepted&done={recording}").text
        assert _NOTICE not in forged
        assert "ward/a.wav" not in forged.split("<h1>")[0]
