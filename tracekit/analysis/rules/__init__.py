"""The verdict's rules, one module per rule, as Nsight Compute keeps one file per rule.

Each rule module has a stable `RULE_ID`, a docstring with the hardware reason and its reference, the context fields
it reads (`INPUTS`), and a pure `apply(context) -> list[Finding]` over one `RuleContext` (`rules/base.py`).
`rules/verdict.py` holds the one list of them (`verdict.RULES`, in the order it asks them), decides the mode and
limiter in one place and ranks findings by the SM time they cost; `tracekit/present/rules/` words them.
"""
