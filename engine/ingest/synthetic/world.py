"""What the generation steps share: activity-weighted endpoint sampling and the world state (planted
patterns, their isolation windows, the events drawn so far)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tgms.engine.ingest.synthetic.config import SyntheticConfig

W_MAX = 5  # msg weights w are 1 .. W_MAX
STRENGTHS = tuple(round(0.1 * k, 1) for k in range(1, 11))  # follows strengths


def uid(k: Any) -> str:
    """The uid of node index ``k``."""
    return f"s{int(k)}"


def weights(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.minimum(rng.geometric(0.5, n), W_MAX).astype(np.int8)


# ---- endpoint sampling ----------------------------------------------------------------------------------
class Endpoints:
    """Activity-weighted node sampling, globally or inside a community (nodes are contiguous by community)."""

    def __init__(self, weights: np.ndarray, offsets: np.ndarray, p_intra: float) -> None:
        self.n, self.weights, self.offsets, self.p_intra = len(weights), weights, offsets, p_intra
        self.cum = np.cumsum(weights)
        self.total = float(self.cum[-1])
        self.sizes = np.diff(offsets)
        self.comm = np.repeat(np.arange(len(self.sizes), dtype=np.int64), self.sizes)
        lo = offsets[:-1]
        self.cum_lo = np.where(lo > 0, self.cum[np.maximum(lo - 1, 0)], 0.0)
        self.cum_hi = self.cum[offsets[1:] - 1]
        # guide table: guide[g] = first i with cum[i] > g * total / G, a lower bound for any x in cell g
        self.g_scale = 4 * self.n / self.total
        self.guide = np.searchsorted(self.cum, np.arange(4 * self.n) / self.g_scale, side="right")

    def _search(self, x: np.ndarray) -> np.ndarray:
        """``min(searchsorted(cum, x, "right"), n - 1)`` via the guide table (few cache misses per x)."""
        last = self.n - 1
        cell = np.clip((x * self.g_scale).astype(np.int64) - 1, 0, len(self.guide) - 1)
        idx = np.minimum(self.guide[cell], last)
        active = np.flatnonzero((idx < last) & (self.cum[idx] <= x))
        while len(active):
            idx[active] += 1
            active = active[idx[active] < last]
            active = active[self.cum[idx[active]] <= x[active]]
        return idx

    def global_nodes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._search(rng.random(n) * self.total)

    def community_nodes(self, rng: np.random.Generator, comms: np.ndarray) -> np.ndarray:
        lo, hi = self.cum_lo[comms], self.cum_hi[comms]
        idx = self._search(lo + rng.random(len(comms)) * (hi - lo))
        return np.clip(idx, self.offsets[comms], self.offsets[comms + 1] - 1)

    def pairs(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` (src, dst) pairs without self-loops; a share ``p_intra`` picks dst in src's community."""
        src = self.global_nodes(rng, n)
        intra = rng.random(n) < self.p_intra
        dst = np.empty(n, dtype=np.int64)
        dst[intra] = self.community_nodes(rng, self.comm[src[intra]])
        dst[~intra] = self.global_nodes(rng, int((~intra).sum()))
        for _ in range(8):
            loop = np.flatnonzero(src == dst)
            if len(loop) == 0:
                break
            li, lg = loop[intra[loop]], loop[~intra[loop]]
            dst[li] = self.community_nodes(rng, self.comm[src[li]])
            dst[lg] = self.global_nodes(rng, len(lg))
        loop = np.flatnonzero(src == dst)
        if len(loop):  # a neighbour inside the community (every community has >= 2 nodes)
            c = self.comm[src[loop]]
            dst[loop] = self.offsets[c] + (src[loop] - self.offsets[c] + 1) % self.sizes[c]
        return src, dst


@dataclass
class World:
    """Everything the generation steps share."""

    cfg: SyntheticConfig
    ep: Endpoints
    start_s: int
    span_s: int
    bursts_h: list[int]
    planted: list[dict[str, Any]]
    pat_of: np.ndarray  # node -> index of its planted pattern, or -1
    iso: np.ndarray  # pattern -> isolation window [lo, hi) in seconds
    msg: dict[str, np.ndarray] = field(default_factory=dict)
    fol: dict[str, np.ndarray] = field(default_factory=dict)

    def isolate(
        self, rng: np.random.Generator, src: np.ndarray, dst: np.ndarray, t: np.ndarray | None
    ) -> None:
        """Re-draw the dst of edges joining two nodes of one pattern (inside its window when ``t`` given)."""
        ps = self.pat_of[src]
        bad = np.flatnonzero((ps >= 0) & (ps == self.pat_of[dst]))
        if t is not None and len(bad):
            bad = bad[(t[bad] >= self.iso[ps[bad], 0]) & (t[bad] < self.iso[ps[bad], 1])]
        while len(bad):
            new = self.ep.global_nodes(rng, len(bad))
            ok = (new != src[bad]) & (self.pat_of[new] != ps[bad])
            dst[bad[ok]] = new[ok]
            bad = bad[~ok]
