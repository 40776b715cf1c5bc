"""What `--to` / MEDASR_DELIVERY__TARGET accepts, and what it refuses (exit 2)."""

from __future__ import annotations

import pytest

from config.errors import ConfigError
from tasks.delivery.errors import TargetInvalid
from tasks.delivery.targets import TargetKind, parse_target


@pytest.mark.parametrize(
    ("text", "kind", "name", "tls"),
    [
        ("docs", TargetKind.DOCS, "docs", False),
        ("", TargetKind.DOCS, "docs", False),
        ("mllp://127.0.0.1:2575", TargetKind.MLLP, "mllp://127.0.0.1:2575", False),
        ("MLLP://localhost:2575/", TargetKind.MLLP, "mllp://localhost:2575", False),
        ("mllps://engine.example:6661", TargetKind.MLLP, "mllps://engine.example:6661", True),
        ("mllp://[::1]:2575", TargetKind.MLLP, "mllp://[::1]:2575", False),
        (
            "fhir+https://ehr.example/fhir/r4/",
            TargetKind.FHIR,
            "fhir+https://ehr.example/fhir/r4",
            True,
        ),
        (
            "fhir+http://127.0.0.1:8080/fhir",
            TargetKind.FHIR,
            "fhir+http://127.0.0.1:8080/fhir",
            False,
        ),
    ],
)
def test_targets_parse_to_one_canonical_name(
    text: str, kind: TargetKind, name: str, tls: bool
) -> None:
    target = parse_target(text)
    assert (target.kind, target.name, target.tls) == (kind, name, tls)


def test_a_fhir_target_carries_its_http_base_url() -> None:
    assert (
        parse_target("fhir+https://ehr.example:8443/r4").base_url == "https://ehr.example:8443/r4"
    )
    assert parse_target("fhir+http://localhost/fhir").base_url == "http://localhost/fhir"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("mllp://127.0.0.1", "needs a port"),
        ("mllp://127.0.0.1:0", "its port is not one from 1 to 65535"),
        ("fhir+http://127.0.0.1:0/fhir", "its port is not one from 1 to 65535"),
        ("mllp://127.0.0.1:2575/path", "takes no path"),
        ("mllp://:2575", "no host"),
        ("http://127.0.0.1/fhir", "unknown"),
        ("ftp://x", "unknown"),
        ("mllp://127.0.0.1:99999", "its port is not one from 1 to 65535"),
        ("mllp://127.0.0.1:x25", "its port is not one from 1 to 65535"),
        ("mllp://[::1:2575", "not a URL"),
        ("mllp://engine.example:2575", "clear text"),
        ("fhir+http://ehr.example/fhir", "clear text"),
    ],
)
def test_unusable_targets_are_configuration_errors(text: str, said: str) -> None:
    with pytest.raises(TargetInvalid, match=said) as caught:
        parse_target(text)
    assert isinstance(caught.value, ConfigError)


def test_clear_text_to_another_host_needs_the_explicit_permission() -> None:
    assert parse_target("mllp://engine.example:2575", allow_insecure=True).host == "engine.example"
    assert parse_target("fhir+http://ehr.example/fhir", allow_insecure=True).tls is False


@pytest.mark.parametrize(
    "text",
    [
        "fhir+https://nurse:S3cret-pass@ehr.example/fhir",
        "mllps://nurse:S3cret-pass@engine.example:6661",
        "fhir+https://nurse:S3cret-pass@ehr.example:0/fhir",  # refused for its port
        "ftp://nurse:S3cret-pass@ehr.example/fhir",  # refused for its scheme
        "fhir+https://nurse:S3cret-pass@/fhir",  # refused for its host
    ],
)
def test_a_password_in_a_target_is_refused_and_never_echoed(text: str) -> None:
    """Credentials in the URL are never sent (the FHIR server's token is
    MEDASR_FHIR_TOKEN): the target is refused, and its message shows no password."""
    with pytest.raises(TargetInvalid) as refused:
        parse_target(text)

    assert "S3cret-pass" not in refused.value.message
    assert "nurse" not in refused.value.message
