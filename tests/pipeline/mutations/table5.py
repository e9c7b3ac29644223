"""The tests' own list of the mutation classes, written out independently of the registry."""

#: every class, in Table 5's order (row 1 first)
TABLE5_ORDER = (
    "count ±1",
    "entity substitution (fabricated)",
    "real-but-uncited entity added",
    "ordering operand swap",
    "unit confusion (µs as ms)",
    "wrong belief state",
    "truncated-page count",
    "wrong-step citation",
    "uncited provenance pointer",
    "entity member dropped",
    "value from a shifted window",
    "wrong row of the right step",
    "right count, refused step cited",
)

#: the classes the verifier must catch every time (Table 5 rows 1-7, issue 7's acceptance)
EXPECT_DETECTED = TABLE5_ORDER[:7]
