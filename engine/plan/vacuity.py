"""Which vacuous steps make the *answer* vacuous (the plan verifier's ``vacuous`` rule, docs/plans.md §2).

A step is *vacant* when its own literal arguments make its result empty whatever the data (a window with
no events for an event operator, an empty selecting list, an operator's own rule such as burst's too few
buckets). That alone does not make the plan wrong: a plan that sums the event counts of four windows, one
of them empty, has a legitimate zero term. So the verifier reports a vacant step only when its emptiness
*reaches the answer*:

- a step is empty if it is vacant, or if it reads an empty producer at an argument position where its
  operator keeps emptiness (:meth:`Traits.empties`: every position of a store operator; for compute the
  whole input list, an intersection operand, a minuend, an interval operand — not one term of a literal
  list, a union operand, a pairwise operand or a subtrahend), or if every producer it reads is empty (a
  sum of nothing but empty terms);
- the answer is ``answer_spec.from``'s step; without an answer_spec (or naming no step), every step that
  no other step reads;
- reported are the vacant steps through which an answer is empty (its *origins*), each with its own
  finding.

Reads are the ``$ref`` arguments; a ``depends_on`` without a ref orders steps and carries no data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tgms.engine.operators.registry import OperatorSpec
from tgms.engine.plan.model import AnswerSpec, Step


def reaching_answer(
    steps: Sequence[Step],
    specs: Mapping[str, OperatorSpec],
    vacant: set[str],
    answer: AnswerSpec | None,
) -> set[str]:
    """The vacant step ids whose emptiness reaches the answer."""
    by_id: dict[str, Step] = {}
    for s in steps:
        by_id.setdefault(s.id, s)
    memo: dict[str, frozenset[str]] = {}

    def origins(sid: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        """The vacant steps that make ``sid`` empty (empty set: it is not empty)."""
        if sid in memo:
            return memo[sid]
        s = by_id.get(sid)
        if s is None or sid in seen:  # an unknown step or a cycle (structure violations): not empty
            return frozenset()
        own = {sid} if sid in vacant else set()
        spec = specs.get(sid)
        reads = [(r, origins(r.ref.step, seen | {sid})) for r in s.refs]
        kept = [o for r, o in reads if o and (spec is None or spec.traits.empties(s.args, r.loc))]
        if reads and all(o for _, o in reads):
            kept = [o for _, o in reads]  # nothing but empty producers
        memo[sid] = frozenset(own.union(*kept))
        return memo[sid]

    if answer is not None and answer.source.step in by_id:
        answers = [answer.source.step]
    else:
        read = {r.ref.step for s in steps for r in s.refs}
        answers = [sid for sid in by_id if sid not in read]
    return set().union(*(origins(a) for a in answers))
