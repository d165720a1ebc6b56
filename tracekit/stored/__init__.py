"""What the one door (`tracekit.api`) delegates to: the store read, handed to the analysis, and the answers kept.

One module per concern: `inputs` (a launch's metrics, warps and regions read for the engine), `cache` (the
catalog and the analyses kept in the store, keyed by each launch's pairing context), `analyses` (the engine over
stored launches), `predictions` (the predictor over stored counters), `aggregates` (a launch's warps reduced for
its figures), `step_kernels` (a step's kernels predicted and replayed on the step). The analysis stays pure: every
store read is here, and `tracekit.api` forwards to these in a line.
"""
