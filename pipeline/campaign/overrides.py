"""The command line's overrides checked before Hydra runs the campaign (issue 26, item 4).

Hydra reports a composition error (an unknown group option, a key the config does not have, an override
it cannot parse) as plain text and exit 1. :func:`check_overrides` composes the same config first and
turns such an error into the one structured error, with a hint for the usual slips: ``suite=X`` for
``suites=[X]`` (every suite, system and ablation is in the catalog and the root lists pick which run), and
the options a group has. A sweep (``-m``) and Hydra's own flags (``--help``, ``--cfg``, ...) go to Hydra
untouched.
"""

from __future__ import annotations

import re
from pathlib import Path

from tgms.engine.api import InvalidArgError, NotFoundError, SchemaError, TGMSError

#: a group picked in a root list, not by a group override
LISTED = {"suite": "suites", "system": "systems", "ablation": "ablations"}


def _options(conf_dir: Path, group: str) -> list[str]:
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def check_overrides(conf_dir: Path, argv: list[str]) -> None:
    """Compose ``conf_dir``'s config with ``argv``'s overrides; a composition error becomes a TGMSError."""
    if any(a.startswith("-") for a in argv):  # a sweep or one of Hydra's flags: Hydra's business
        return
    overrides = [a for a in argv if not a.startswith(("hydra.", "hydra/", "+hydra", "~hydra"))]
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            compose("config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise composition_error(conf_dir, exc, overrides) from None


def composition_error(conf_dir: Path, exc: Exception, overrides: list[str]) -> TGMSError:
    """Hydra's composition error as the one structured error (the group's options named where it can)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    kind = type(exc).__name__
    m = re.search(r"Could not override '([^'.]+)'", text)
    if m and m.group(1) in LISTED:
        group = m.group(1)
        return InvalidArgError(
            f"{first} {LISTED[group]} picks the {group}s that run: write {LISTED[group]}=[NAME,...] "
            f"(options: {', '.join(_options(conf_dir, group))})",
            overrides=overrides,
        )
    m = re.search(r"Could not find '([^'/]+)/([^']+)'", text)
    if m:
        group = m.group(1)
        options = _options(conf_dir, group)
        return NotFoundError(
            f"no {group} named {m.group(2)!r} in conf/{group}/; options: {', '.join(options)}",
            group=group,
            options=options,
        )
    if kind == "OverrideParseException":
        return SchemaError(f"an override does not parse: {first}", overrides=overrides)
    detail = " ".join(line.strip() for line in text.splitlines()[:3])  # Hydra's cause is on the next lines
    return InvalidArgError(f"the config does not compose: {detail}", overrides=overrides, hydra_error=kind)
