"""The words of the analysis's data, one module per rule as `tracekit/analysis/rules/` has them (`<rule>.py`: its
templates and advice), the verdict's own (`verdict.py`), the headline (`headline.py`) and the predictor's steps
(`predict.py`); `sentences.py` gathers them and `worded.py` words a whole result or prediction."""
