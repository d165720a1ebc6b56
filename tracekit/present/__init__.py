"""What every view of a result shows, decided once: neutral pieces (headline, the wording of a prediction, What to
try first) with their numbers already formatted by `tracekit.format`. The CLI's text, the Markdown and HTML reports,
the dashboard's panels and the notebook lay these out; none of them words a result itself."""
