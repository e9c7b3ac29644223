"""The gate (what of a verified answer is emitted, and when it abstains) and text coverage."""

from __future__ import annotations

from typing import Any

import pytest

from tgms.engine.claims.answer import Answer, parse_answer
from tgms.engine.claims.gate import GATED_TYPES, GateConfig, coverage, gate, render
from tgms.engine.claims.verifier import Verdict
from tgms.engine.errors import SchemaError
from tgms.engine.execute.executor import Trace
from tgms.engine.operators.context import OpContext

from ._support import FOLLOWS, MOTIF, N_REACHED, S, claim, verdicts

GOOD_COUNT = claim("count", "s1", cid="c1", src="s1.rows_total", value=N_REACHED)
BAD_VALUE = claim("value", "s3", cid="c2", src="s3.value", value=5000)  # the µs duration in ms
NO_EVIDENCE = claim("entity", cid="c3", uids=["n2"])
PATTERN_BAD = claim(
    "temporal_pattern",
    "s7",
    cid="c4",
    assertion={"op": "count_temporal_motifs", "args": dict(MOTIF), "field": "count", "value": 3},
)
PATTERN_ERR = claim(
    "temporal_pattern", "s7", cid="c5", assertion={"op": "nope", "args": {}, "field": "count", "value": 1}
)
PATTERN_OK = PATTERN_BAD | {"assertion": PATTERN_BAD["assertion"] | {"value": 1}}
GOOD_ENTITY = claim("entity", "s1", cid="c6", uids=["n2", "n3", "n7"])


def gated(
    base: Trace,
    ctx: OpContext,
    *claims: dict[str, Any],
    text: str = "t",
    typed: tuple[str, Any] | None = None,
    config: GateConfig | None = None,
) -> tuple[dict[str, Any], Answer]:
    raw: dict[str, Any] = {"text": text, "claims": list(claims)}
    if typed is not None:
        raw["answer"] = {"kind": typed[0], "value": typed[1]}
    ans = parse_answer(raw)
    return gate(ans, verdicts(ans, base, ctx), config), ans


def test_drops_unsupported_and_unverifiable_gated_claims(base: Trace, ctx: OpContext) -> None:
    out, ans = gated(base, ctx, GOOD_COUNT, BAD_VALUE, NO_EVIDENCE, PATTERN_BAD, PATTERN_ERR, text="6 ...")
    assert [v["verdict"] for v in out["verdicts"]] == [
        "supported", "unsupported", "unverifiable", "unsupported", "unverifiable",
    ]  # fmt: skip
    assert out["emitted"] and not out["abstained"] and out["reason"] is None
    assert [(d["claim"], d["verdict"]) for d in out["dropped"]] == [
        ("c2", "unsupported"),
        ("c3", "unverifiable"),
    ]
    assert all(d["reason"] for d in out["dropped"])
    # pattern claims are reported, not gated: both are kept whatever their verdict
    assert [c["id"] for c in out["claims"]] == ["c1", "c4", "c5"]
    # a claim was dropped, so the reporter's text (which may state it) is replaced
    kept = [c for c in ans.claims if c.id in ("c1", "c4", "c5")]
    assert out["text"] == render(kept) != "6 ..."
    assert out["text"].startswith(f"count: {N_REACHED}; pattern: ")


def test_keeps_the_text_when_nothing_is_dropped(base: Trace, ctx: OpContext) -> None:
    out, _ = gated(base, ctx, GOOD_COUNT, GOOD_ENTITY, PATTERN_BAD, text="n1 reaches 6 nodes.")
    assert out["emitted"] and out["dropped"] == []
    assert out["text"] == "n1 reaches 6 nodes."
    assert [c["id"] for c in out["claims"]] == ["c1", "c6", "c4"]
    assert "answer" not in out


@pytest.mark.parametrize(
    "claims",
    [
        (BAD_VALUE,),
        (BAD_VALUE, NO_EVIDENCE),
        (BAD_VALUE, PATTERN_BAD),
        (PATTERN_BAD,),  # a supported pattern alone would not do either: see below
        (),
    ],
)
def test_abstains_when_no_supported_gated_claim_is_left(
    base: Trace, ctx: OpContext, claims: tuple[dict[str, Any], ...]
) -> None:
    out, _ = gated(base, ctx, *claims)
    assert out["abstained"] and not out["emitted"]
    assert out["reason"] == "no supported gated claim is left"
    assert "text" not in out and "claims" not in out


def test_a_supported_pattern_alone_is_not_enough(base: Trace, ctx: OpContext) -> None:
    out, _ = gated(base, ctx, PATTERN_OK)
    assert out["verdicts"][0]["verdict"] == "supported"
    assert out["abstained"]


@pytest.mark.parametrize(
    ("typed", "claims", "emitted"),
    [
        (("count", N_REACHED), (GOOD_COUNT,), True),
        (("count", N_REACHED + 1), (GOOD_COUNT,), False),
        (("count", 5000), (GOOD_COUNT, BAD_VALUE), False),  # backed only by a dropped claim
        (("value", 5 * S), (claim("value", "s3", src="s3.value", value=5 * S),), True),
        (("value", 5 * S), (GOOD_COUNT,), False),
        (("entity", "n3"), (GOOD_ENTITY,), True),
        (("entity", "n4"), (GOOD_ENTITY,), False),
        (("entity_set", ["n7", "n2"]), (GOOD_ENTITY,), True),
        (("entity_set", ["n2", "n4"]), (GOOD_ENTITY,), False),  # not a subset of the claimed uids
        (("entity_set", []), (GOOD_ENTITY,), False),
        (("relation", "during"), (claim("ordering", "s8", "s4", src="s8.value", a="s4.edges[1]",
                                        b="s4.edges[0]", relation="during"),), True),
        (("relation", "contains"), (claim("ordering", "s8", "s4", src="s8.value", a="s4.edges[1]",
                                          b="s4.edges[0]", relation="during"),), False),
        (("relation", "during"), (claim("value", "s8", src="s8.value", value="during"),), True),
        (("interval", list(FOLLOWS)), (claim("value", "s4", src="s4.edges[0]",
                                             value={"vt_s": FOLLOWS[0], "vt_e": FOLLOWS[1]}),), True),
        (("interval", [FOLLOWS[0], FOLLOWS[1] + 1]), (claim("value", "s4", src="s4.edges[0]",
                                                            value=list(FOLLOWS)),), False),
        (("boolean", False), (claim("value", "s4", src="s4.truncated", value=False),), True),
        (("boolean", False), (claim("value", "s4", src="s4.rows_total", value=0),), False),
    ],
)  # fmt: skip
def test_abstains_when_the_typed_answer_is_not_backed(
    base: Trace, ctx: OpContext, typed: tuple[str, Any], claims: tuple[dict[str, Any], ...], emitted: bool
) -> None:
    out, _ = gated(base, ctx, *claims, typed=typed)
    assert out["emitted"] is emitted, out
    if emitted:
        assert out["answer"] == {"kind": typed[0], "value": typed[1]}
    else:
        assert out["reason"] is not None
        assert "answer" not in out


def test_gated_types_decide_what_can_be_dropped(base: Trace, ctx: OpContext) -> None:
    every = GateConfig(gated_types=(*GATED_TYPES, "temporal_pattern"))
    out, _ = gated(base, ctx, GOOD_COUNT, PATTERN_BAD, config=every)
    assert [d["claim"] for d in out["dropped"]] == ["c4"]
    assert [c["id"] for c in out["claims"]] == ["c1"]
    # with only counts gated, the unsupported value claim is kept (and reported as such)
    counts = GateConfig(gated_types=("count",))
    out, _ = gated(base, ctx, GOOD_COUNT, BAD_VALUE, text="kept", config=counts)
    assert out["emitted"] and out["dropped"] == [] and out["text"] == "kept"
    assert [c["id"] for c in out["claims"]] == ["c1", "c2"]
    # ... and an answer whose only supported claim is no longer gated abstains
    out, _ = gated(base, ctx, GOOD_ENTITY, config=counts)
    assert out["abstained"] and out["reason"] == "no supported gated claim is left"


def test_drop_config(base: Trace, ctx: OpContext) -> None:
    lenient = GateConfig(drop=("unverifiable",))
    out, _ = gated(base, ctx, GOOD_COUNT, BAD_VALUE, NO_EVIDENCE, config=lenient)
    assert [d["claim"] for d in out["dropped"]] == ["c3"]
    assert [c["id"] for c in out["claims"]] == ["c1", "c2"]


def test_a_claim_without_a_verdict_is_dropped(base: Trace, ctx: OpContext) -> None:
    ans = parse_answer({"text": "t", "claims": [GOOD_COUNT, GOOD_ENTITY]})
    vs = verdicts(ans, base, ctx)
    out = gate(ans, [v for v in vs if v.claim != "c6"])
    assert out["dropped"] == [{"claim": "c6", "verdict": "unverifiable", "reason": "not verified"}]
    assert out["emitted"] and out["text"] == render([ans.claims[0]])


def test_weakly_supported_passes_the_gate() -> None:
    ans = parse_answer(
        {"text": "t", "answer": {"kind": "count", "value": 2}, "claims": [claim("count", "s1", value=2)]}
    )
    out = gate(ans, [Verdict("c1", "count", "weakly_supported", "truncated", True)])
    assert out["emitted"] and out["answer"] == {"kind": "count", "value": 2}


# -- coverage ---------------------------------------------------------------------------------------------


def cov(text: str, *claims: dict[str, Any], known: Any = None) -> dict[str, Any]:
    return coverage(parse_answer({"text": text, "claims": list(claims)}), known)


def test_coverage_counts_numbers_and_uids(ctx: OpContext) -> None:
    text = "n1 reaches 6 nodes, among them n2 and n7, the last at 6,000,000."
    out = cov(text, GOOD_COUNT, claim("entity", "s1", cid="c2", uids=["n2"]), known=ctx.nid_index())
    assert (out["numbers"], out["numbers_covered"], out["ids"], out["ids_covered"]) == (2, 1, 3, 1)
    assert out["uncovered"] == [6_000_000, "n1", "n7"]


def test_coverage_without_a_store_takes_n_digit_tokens_as_uids() -> None:
    out = cov("user n2 follows n7 and nx", claim("entity", "s1", uids=["n2"]))
    assert (out["ids"], out["ids_covered"], out["uncovered"]) == (2, 1, ["n7"])


def test_coverage_with_a_store_takes_only_store_uids(ctx: OpContext) -> None:
    out = cov("n2, n99 and user", claim("entity", "s1", uids=["n2"]), known=ctx.nid_index())
    assert (out["ids"], out["ids_covered"]) == (1, 1)


@pytest.mark.parametrize(
    ("text", "c", "expected"),
    [
        ("It took 5000 ms.", BAD_VALUE, (1, 1)),  # coverage is not correctness: the claim states 5000
        ("It took 5 s.", BAD_VALUE, (1, 0)),
        ("Ratio 0.5 of 2.", claim("value", "s1", value=0.5), (2, 1)),
        ("From 500000 to 3500000.", claim("value", "s4", value=list(FOLLOWS)), (2, 2)),
        ("From 500000 to 3500000.", claim("ordering", "s4", a=list(FOLLOWS), b=[0, 1], relation="after"),
         (2, 2)),
        ("At 7 and 8.", claim("ordering", "s9", a=7, b=[8, 9], relation="before"), (2, 2)),
        ("There is 1 triangle.", PATTERN_OK, (1, 1)),
        ("n9 has no digits covered.", GOOD_COUNT, (0, 0)),  # the 9 of n9 is part of a uid
        ("The answer is -3.", claim("value", "s3", value=-3), (1, 1)),
    ],
)  # fmt: skip
def test_coverage_of_numbers(text: str, c: dict[str, Any], expected: tuple[int, int]) -> None:
    out = cov(text, c)
    assert (out["numbers"], out["numbers_covered"]) == expected, out


def test_a_value_claim_naming_a_uid_covers_it() -> None:
    out = cov("The first is n2.", claim("value", "s1", src="s1.rows[0].uid", value="n2"))
    assert (out["ids"], out["ids_covered"]) == (1, 1)


# -- the answer object ------------------------------------------------------------------------------------


def test_a_malformed_answer_lists_every_problem() -> None:
    raw = {
        "text": "t",
        "extra": 1,
        "answer": {"kind": "number", "value": 1},
        "claims": [
            claim("count", "s1", cid="c1", value=1) | {"uids": ["n1"]},  # a key of another type
            claim("entity", "s1", cid="c2", uids=[]),
            claim("ordering", "s1", cid="c3", a=[0, 1], b=[1, 2], relation="next_to"),
            claim("temporal_pattern", "s1", cid="c4", assertion={"op": "x", "args": {}, "field": "f",
                                                                 "value": 1, "cmp": "~"}),
            {"id": "c5", "type": "guess", "evidence": ["s1"]},
            claim("value", "s1", cid="c6", src=7, value=1),  # type: ignore[arg-type]
        ],
    }  # fmt: skip
    with pytest.raises(SchemaError) as exc:
        parse_answer(raw)
    problems = exc.value.details["problems"]
    assert len(problems) == 8, problems
    for part in ("unknown answer keys", "answer must be", "claims[0]", "claims[1].uids", "claims[2].relation",
                 "claims[3].assertion", "claims[4].type", "claims[5].from"):  # fmt: skip
        assert any(part in p for p in problems), part


def test_duplicate_claim_ids_are_refused() -> None:
    with pytest.raises(SchemaError, match="unique"):
        parse_answer({"text": "", "claims": [GOOD_COUNT, GOOD_COUNT]})


def test_answer_round_trips() -> None:
    raw = {
        "text": "t",
        "answer": {"kind": "count", "value": 6},
        "claims": [GOOD_COUNT, GOOD_ENTITY, PATTERN_OK],
    }
    assert parse_answer(raw).to_dict() == raw
