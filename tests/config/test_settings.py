"""Settings: the documented flat MEDASR_* names, .env, TOML, bounds, and secrets kept secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.errors import ConfigError
from config.settings import (
    FLAT_VARIABLES,
    Settings,
    load_settings,
    pinned_settings,
    redact_url_password,
)


@pytest.mark.parametrize(
    ("variable", "raw", "section", "field", "expected"),
    [
        ("MEDASR_ENV", "dev", "service", "env", "dev"),
        ("MEDASR_BASE_URL", "http://127.0.0.1:9", "service", "base_url", "http://127.0.0.1:9"),
        ("MEDASR_ENCRYPT", "true", "encryption", "enabled", True),
        ("MEDASR_JWE_KID", "key-7", "encryption", "jwe_kid", "key-7"),
        ("MEDASR_DATABASE_URL", "sqlite:////x.db", "storage", "database_url", "sqlite:////x.db"),
        ("MEDASR_CONCURRENCY", "3", "pipeline", "concurrency", 3),
        ("MEDASR_MAX_UPLOAD_BYTES", "1000000", "service", "max_upload_bytes", 1_000_000),
        ("MEDASR_REQUEST_TIMEOUT_S", "2.5", "service", "request_timeout_s", 2.5),
        ("MEDASR_MAX_ATTEMPTS", "7", "service", "max_attempts", 7),
    ],
    ids=lambda v: v if isinstance(v, str) and v.startswith("MEDASR_") else "",
)
def test_documented_flat_variables(
    monkeypatch: pytest.MonkeyPatch, variable, raw, section, field, expected
) -> None:
    monkeypatch.setenv(variable, raw)
    if variable == "MEDASR_ENCRYPT":
        monkeypatch.setenv("MEDASR_JWE_KEY", "0123456789abcdef")
    settings = load_settings()
    assert getattr(getattr(settings, section), field) == expected


def test_defaults_match_the_contract(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.service.effective_base_url == "https://api.eka.care"
    assert settings.storage.database_url == f"sqlite:///{tmp_path / 'medasr.db'}"  # ./medasr.db
    assert settings.service.max_upload_bytes == 5_000_000
    assert settings.pipeline.concurrency == 8
    assert settings.service.max_attempts == 5
    assert settings.encryption.enabled is False


def test_env_dev_switches_base_url_and_base_url_overrides(monkeypatch) -> None:
    monkeypatch.setenv("MEDASR_ENV", "dev")
    assert load_settings().service.effective_base_url == "https://api.dev.eka.care"
    monkeypatch.setenv("MEDASR_BASE_URL", "https://asr.example.org/")
    assert load_settings().service.effective_base_url == "https://asr.example.org"


def test_flat_name_wins_over_nested_spelling(monkeypatch) -> None:
    monkeypatch.setenv("MEDASR_PIPELINE__CONCURRENCY", "4")
    assert load_settings().pipeline.concurrency == 4
    monkeypatch.setenv("MEDASR_CONCURRENCY", "6")
    assert load_settings().pipeline.concurrency == 6


def test_dotenv_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("MEDASR_CONCURRENCY=5\nMEDASR_TOKEN=from-dotenv\n")
    settings = load_settings()
    assert settings.pipeline.concurrency == 5
    assert settings.service.token is not None
    assert settings.service.token.get_secret_value() == "from-dotenv"


def test_environment_wins_over_dotenv(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / ".env").write_text("MEDASR_CONCURRENCY=5\n")
    monkeypatch.setenv("MEDASR_CONCURRENCY", "9")
    assert load_settings().pipeline.concurrency == 9


def test_toml_file_named_by_medasr_config(tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "medasr.toml"
    config.write_text('[pipeline]\nconcurrency = 12\n[service]\nenv = "dev"\n')
    monkeypatch.setenv("MEDASR_CONFIG", str(config))
    settings = load_settings()
    assert settings.pipeline.concurrency == 12
    assert settings.service.env == "dev"
    monkeypatch.setenv("MEDASR_CONCURRENCY", "2")  # the environment still wins
    assert load_settings().pipeline.concurrency == 2


@pytest.mark.parametrize(
    ("variable", "raw"),
    [
        ("MEDASR_CONCURRENCY", "0"),
        ("MEDASR_CONCURRENCY", "many"),
        ("MEDASR_ENV", "staging"),
        ("MEDASR_MAX_UPLOAD_BYTES", "10"),
        ("MEDASR_REQUEST_TIMEOUT_S", "-1"),
        ("MEDASR_MAX_ATTEMPTS", "0"),
        ("MEDASR_ENCRYPT", "maybe"),
    ],
    ids=lambda v: v,
)
def test_invalid_value_gives_one_line_naming_the_variable(monkeypatch, variable, raw) -> None:
    monkeypatch.setenv(variable, raw)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith(f"{variable}:")
    assert "\n" not in message


def test_encryption_without_key_names_the_key_variable(monkeypatch) -> None:
    monkeypatch.setenv("MEDASR_ENCRYPT", "true")
    with pytest.raises(ConfigError, match="MEDASR_JWE_KEY"):
        load_settings()


@pytest.mark.parametrize(
    ("content", "says"),
    [(b"[pipeline\n", "not valid TOML"), (b"\xff\xfe[pipeline]\n", "not UTF-8 text")],
    ids=["broken-toml", "not-utf-8"],
)
def test_unreadable_toml_is_a_config_error(
    tmp_path: Path, monkeypatch, content: bytes, says: str
) -> None:
    (tmp_path / "bad.toml").write_bytes(content)
    monkeypatch.setenv("MEDASR_CONFIG", str(tmp_path / "bad.toml"))
    with pytest.raises(ConfigError, match=f"MEDASR_CONFIG: .* {says}"):
        load_settings()


@pytest.mark.parametrize("variable", ["MEDASR_TOKEN", "MEDASR_JWE_KEY"])
def test_secrets_never_in_repr_or_errors(monkeypatch, variable) -> None:
    secret = "s3cr3t-value-0123"[:16]
    monkeypatch.setenv(variable, secret)
    monkeypatch.setenv("MEDASR_CONCURRENCY", "0")  # force an error while the secret is set
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert secret not in str(caught.value)
    monkeypatch.delenv("MEDASR_CONCURRENCY")
    settings = load_settings()
    assert secret not in repr(settings)
    assert secret not in str(settings.model_dump())


def test_database_url_password_not_echoed_in_errors(monkeypatch) -> None:
    monkeypatch.setenv("MEDASR_DATABASE_URL", "postgresql://u:hunter2@db/x")
    monkeypatch.setenv("MEDASR_CONCURRENCY", "-3")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "hunter2" not in str(caught.value)


def test_every_flat_variable_points_at_a_real_field() -> None:
    settings = Settings()
    for variable, (section, field) in FLAT_VARIABLES.items():
        assert hasattr(getattr(settings, section), field), variable


def test_every_field_has_a_description() -> None:
    for section in ("service", "encryption", "storage", "pipeline"):
        model = type(getattr(Settings(), section))
        for name, info in model.model_fields.items():
            assert info.description, f"{section}.{name}"


def test_pinned_settings_are_returned_until_the_block_ends(monkeypatch) -> None:
    pinned = load_settings().model_copy(update={})
    with pinned_settings(pinned):
        monkeypatch.setenv("MEDASR_CONCURRENCY", "3")
        assert load_settings() is pinned
    assert load_settings().pipeline.concurrency == 3


# -- secrets arrive, blank ones count as missing, bad keys fail early -----------------------


def test_token_and_jwe_key_arrive_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("MEDASR_TOKEN", "tok-from-env")
    monkeypatch.setenv("MEDASR_JWE_KEY", "0123456789abcdef")
    settings = load_settings()
    assert settings.service.token is not None
    assert settings.service.token.get_secret_value() == "tok-from-env"
    assert settings.encryption.jwe_key is not None
    assert settings.encryption.jwe_key.get_secret_value() == "0123456789abcdef"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("   ", None), ("\t\n", None), ("  tok-1 \n", "tok-1")],
    ids=["spaces", "tab-newline", "padded"],
)
def test_token_is_stripped_and_blank_is_missing(monkeypatch, raw: str, expected) -> None:
    monkeypatch.setenv("MEDASR_TOKEN", raw)
    token = load_settings().service.token
    assert (None if token is None else token.get_secret_value()) == expected


@pytest.mark.parametrize(
    ("variables", "got"),
    [
        ({"MEDASR_ENCRYPT": "true", "MEDASR_JWE_KEY": "tiny-key"}, "8 characters, 8 bytes"),
        ({"MEDASR_ENCRYPT": "false", "MEDASR_JWE_KEY": "x" * 17}, "17 characters, 17 bytes"),
        ({"MEDASR_JWE_KEY": "é" * 16}, "16 characters, 32 bytes"),
    ],
    ids=["short-encrypt-on", "long-encrypt-off", "16-chars-32-bytes"],
)
def test_jwe_key_of_the_wrong_length_fails_load_settings(monkeypatch, variables, got) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith("MEDASR_JWE_KEY: the JWE key must be a 16-character")
    assert f"(got {got})" in message
    assert "\n" not in message
    assert variables["MEDASR_JWE_KEY"] not in message


def test_a_16_byte_key_of_multibyte_characters_is_accepted(monkeypatch) -> None:
    monkeypatch.setenv("MEDASR_JWE_KEY", "é" * 8)  # doubled: 32 UTF-8 bytes, as the envelope needs
    assert load_settings().encryption.jwe_key is not None


# -- the database URL keeps its password out of reprs --------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://medasr:hunter2@db.internal:5432/medasr",
        "postgresql://medasr:hunter2@db/medasr?sslmode=require",
        "postgresql://db/medasr?user=medasr&password=hunter2",
    ],
    ids=["userinfo", "userinfo-query", "query-password"],
)
def test_repr_hides_the_database_password_but_the_value_works(monkeypatch, url: str) -> None:
    monkeypatch.setenv("MEDASR_DATABASE_URL", url)
    settings = load_settings()
    for shown in (repr(settings), str(settings), repr(settings.storage), f"{settings!r}"):
        assert "hunter2" not in shown
        assert "***" in shown
        assert "db" in shown  # still useful: the host stays
    assert settings.storage.database_url == url  # the real value, for SQLAlchemy
    assert settings.storage.model_dump()["database_url"] == url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///./medasr.db", "sqlite:///./medasr.db"),
        ("sqlite:////var/lib/medasr.db", "sqlite:////var/lib/medasr.db"),
        ("postgresql://u@db/x", "postgresql://u@db/x"),
        ("postgresql://u:p%40ss@db:5432/x", "postgresql://u:***@db:5432/x"),
        ("postgresql://u:@db/x", "postgresql://u:***@db/x"),
        (
            "postgresql://db/x?password=p&sslmode=require",
            "postgresql://db/x?password=***&sslmode=require",
        ),
        ("postgresql://[broken/x", "<unparseable URL, hidden>"),
    ],
)
def test_redact_url_password(url: str, expected: str) -> None:
    assert redact_url_password(url) == expected


@pytest.mark.parametrize(
    "variable",
    ["MEDASR_BASE_URL", "MEDASR_DATABASE_URL", "MEDASR_CONCURRENCY", "MEDASR_ENCRYPT"],
)
@pytest.mark.parametrize("where", ["environment", ".env"])
def test_a_flat_variable_set_empty_is_refused_not_taken_as_its_default(
    monkeypatch, tmp_path: Path, variable: str, where: str
) -> None:
    """`MEDASR_BASE_URL=$ONPREM_URL` with the shell variable unset must not send the
    recordings to the default service, nor an empty database URL open ./medasr.db."""
    monkeypatch.chdir(tmp_path)
    if where == "environment":
        monkeypatch.setenv(variable, "")
    else:
        (tmp_path / ".env").write_text(f"{variable}=\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert caught.value.message == (
        f"{variable} is set but empty: give it a value, or unset it for the default"
    )


def test_a_dotenv_line_that_cannot_be_read_stops_the_command_naming_the_line(
    monkeypatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """python-dotenv warned, without naming the file, two or three times a command, and
    dropped the line: a token written with an unclosed quote was silently missing."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_TOKEN", raising=False)
    (tmp_path / ".env").write_text('MEDASR_CONCURRENCY=3\nMEDASR_TOKEN="tok-secret\nX=1\n')
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert caught.value.message == (
        f".env: {tmp_path / '.env'}: line 2 is not NAME=value (an unclosed quote?); "
        "fix or remove it"
    )
    assert "tok-secret" not in caught.value.message
    assert not [r for r in caplog.records if "python-dotenv" in r.getMessage()]
