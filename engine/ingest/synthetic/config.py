"""Every parameter of the synthetic generator, and the combinations it refuses (``E_INVALID_ARG``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tgms.engine.errors import InvalidArgError
from tgms.engine.timeutil import OPEN_END, US_PER_SECOND

GENERATOR_VERSION = "tgms-synthetic-v1"
HOUR_S = 3600
DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class SyntheticConfig:
    """Every parameter of the generator (all JSON-able; recorded in the manifest)."""

    n_nodes: int = 1000
    n_events: int = 100_000
    seed: int = 0
    n_communities: int | None = None  # None: max(1, round(sqrt(n_nodes) / 2))
    p_intra: float = 0.85
    activity_alpha: float = 1.3
    start_us: int = 1_704_067_200 * US_PER_SECOND  # 2024-01-01T00:00:00Z
    days: int = 60
    n_bursts: int = 2
    burst_hours: int = 6
    burst_multiplier: float = 8.0
    n_rings: int = 8
    n_pingpongs: int = 8
    delta_s: int = 3600
    follows_fraction: float = 0.05
    follows_mean_days: float = 3.0
    follows_open_fraction: float = 0.1
    n_interval_corrections: int = 6
    n_event_corrections: int = 6
    n_retracts: int = 4
    n_late_facts: int = 4
    chunk_rows: int = 1 << 20

    def communities(self) -> int:
        if self.n_communities is not None:
            return self.n_communities
        return max(1, min(self.n_nodes // 2, round(float(np.sqrt(self.n_nodes)) / 2)))

    @property
    def n_follows(self) -> int:
        return round(self.follows_fraction * self.n_events)

    @property
    def n_planted_events(self) -> int:
        return 3 * (self.n_rings + self.n_pingpongs)


# ---- validation -----------------------------------------------------------------------------------------
_INT_MIN = (
    (0, "seed start_us n_rings n_pingpongs n_bursts n_interval_corrections n_event_corrections"),
    (0, "n_retracts n_late_facts"),
    (1, "n_events days burst_hours"),
    (2, "delta_s"),
    (4, "n_nodes"),
    (1024, "chunk_rows"),
)
_FLOAT_RANGE = (  # (name, low, high, low excluded)
    ("p_intra", 0.0, 1.0, False),
    ("activity_alpha", 0.0, 100.0, True),
    ("burst_multiplier", 1.0, 1000.0, False),
    ("follows_fraction", 0.0, 0.5, False),
    ("follows_mean_days", 0.0, 3650.0, True),
    ("follows_open_fraction", 0.0, 1.0, False),
)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_config(cfg: SyntheticConfig) -> None:
    """Refuse parameters the generator cannot honour (``E_INVALID_ARG`` naming the ``field``)."""

    def need(ok: bool, name: str, message: str) -> None:
        if not ok:
            raise InvalidArgError(message, field=name, value=getattr(cfg, name))

    lo: float  # the integer minimums, then the float ranges' low ends
    for lo, names in _INT_MIN:
        for name in names.split():
            v = getattr(cfg, name)
            need(_is_int(v) and lo <= v <= OPEN_END // 2, name, f"{name} must be an integer >= {lo}")
    for name, lo, hi, lo_open in _FLOAT_RANGE:
        v = getattr(cfg, name)
        ok = (_is_int(v) or isinstance(v, float)) and lo <= v <= hi and not (lo_open and v == lo)
        need(ok, name, f"{name} must be a number in {'(' if lo_open else '['}{lo}, {hi}]")
    c, n = cfg.n_communities, cfg.n_nodes
    need(
        c is None or (_is_int(c) and 1 <= c <= n // 2),
        "n_communities",
        "n_communities must be in [1, n_nodes // 2] (communities have >= 2 nodes)",
    )
    need(
        3 * cfg.n_rings + 2 * cfg.n_pingpongs <= n // 2,
        "n_rings",
        "too many planted patterns: their nodes must be <= n_nodes / 2",
    )
    need(
        cfg.n_planted_events + cfg.n_follows <= cfg.n_events,
        "n_events",
        "n_events is smaller than the planted events plus the follows rows",
    )
    need(
        cfg.n_interval_corrections + cfg.n_retracts <= cfg.n_follows,
        "n_interval_corrections",
        "n_interval_corrections + n_retracts exceeds the number of follows edges",
    )
    need(cfg.n_follows <= n * (n - 1) // 4, "follows_fraction", "too many follows edges for n_nodes")
    slot = (cfg.days * 24 * 8 // 10) // max(cfg.n_bursts, 1)
    need(
        cfg.n_bursts == 0 or slot >= cfg.burst_hours + 24,
        "n_bursts",
        "bursts do not fit: need 0.8 * days * 24 / n_bursts >= burst_hours + 24",
    )
    need(cfg.days * DAY_S > 4 * cfg.delta_s, "delta_s", "delta_s is too large for the time span")
    need(cfg.start_us % US_PER_SECOND == 0, "start_us", "start_us must be a whole second")
