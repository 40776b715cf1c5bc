"""Which setting names exist, and the closest one to a misspelt name (difflib).

A typo must never switch a setting off quietly (`[encryption] enabeld = true` left
patient audio unencrypted): an unknown key or section of the TOML file is a
configuration error, an unknown MEDASR_* variable in the environment a warning.
The models are passed in, so this module does not import config.settings.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from config.errors import ConfigError

ENV_PREFIX = "MEDASR_"
# MEDASR_* names read outside the Settings model: the home of a demo or a deployment and
# the TOML file (docs/configuration.md), the devserver's options
# (devserver/config.py, a prefix), and the test suite's own (tests/).
OTHER_VARIABLES = frozenset(
    {"MEDASR_HOME", "MEDASR_CONFIG", "MEDASR_TEST_POSTGRES_URL", "MEDASR_TEST_VECTORS_DIR"}
)
OTHER_PREFIXES = ("MEDASR_DEVSERVER_",)

_warned: set[str] = set()


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The valid name most like `name`, if any is close enough to be a typo of it."""
    found = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def check_toml_keys(
    data: Mapping[str, Any], *, sections: Mapping[str, type[BaseModel]], path: str
) -> None:
    """Refuse a key or section the settings do not have; raises ConfigError (one line)."""
    for section, values in data.items():
        model = sections.get(section)
        if model is None or not isinstance(values, Mapping):
            raise ConfigError(_unknown_top_level(section, sections=sections, path=path))
        for key in values:
            if key not in model.model_fields:
                hint = _did_you_mean(closest(key, model.model_fields))
                raise ConfigError(
                    f"MEDASR_CONFIG: unknown key [{section}] {key} in {path}{hint}; "
                    "a misspelt setting would be ignored"
                )


def _unknown_top_level(name: str, *, sections: Mapping[str, type[BaseModel]], path: str) -> str:
    if name in sections:
        return f"MEDASR_CONFIG: {name} in {path} must be a [{name}] section"
    owner = [section for section, model in sections.items() if name in model.model_fields]
    if owner:
        return f"MEDASR_CONFIG: {name!r} in {path} belongs in the [{owner[0]}] section"
    hint = _did_you_mean(closest(name, sections))
    return f"MEDASR_CONFIG: unknown section [{name}] in {path}{hint}"


def _did_you_mean(name: str | None) -> str:
    return f" (did you mean {name!r}?)" if name else ""


def known_variables(
    *, sections: Mapping[str, type[BaseModel]], flat: Iterable[str]
) -> frozenset[str]:
    """Every MEDASR_* name medasr reads: flat aliases, nested spellings, OTHER_VARIABLES."""
    nested = {
        f"{ENV_PREFIX}{section.upper()}__{field.upper()}"
        for section, model in sections.items()
        for field in model.model_fields
    }
    return frozenset({*flat, *nested, *OTHER_VARIABLES})


def warn_unknown_variables(environment: Mapping[str, str], *, known: frozenset[str]) -> None:
    """One warning line on stderr per unknown MEDASR_* variable, once per process."""
    for name in sorted(environment):
        if not name.startswith(ENV_PREFIX) or name in known or name in _warned:
            continue
        if name.startswith(OTHER_PREFIXES):
            continue
        _warned.add(name)
        hint = closest(name, known)
        suggestion = f" (did you mean {hint}?)" if hint else ""
        sys.stderr.write(f"medasr: warning: unknown variable {name} is ignored{suggestion}\n")
