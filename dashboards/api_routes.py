"""JSON routes: what the dashboard shows, for scripts. `GET /api/launches/<id>/analysis` is the launch's result as
`tracekit analyze --json` prints it (schema "tracekit.analysis/2" with `what_to_try`), from the same engine, the same
cache and the same predictor;
`?pair=<profiled launch id>` takes the counters from that launch, as `--pair` does.
The server's protection (Host, token, read-only) covers these routes like every other."""

from __future__ import annotations

import json

from flask import Flask, Response, request

from tracekit.errors import TracekitError

from .analysis_cache import AnalysisCache


def register_api(server: Flask, cache: AnalysisCache) -> None:
    @server.get("/api/launches/<int:launch_id>/analysis")
    def launch_analysis(launch_id: int) -> Response:
        if cache.traces.launches(launch_ids=[launch_id]).height == 0:
            return _json({"error": f"no launch {launch_id} in the store"}, 404)
        pair = request.args.get("pair")
        if pair is not None and not pair.isdigit():
            return _json({"error": f"pair={pair!r}: expected the id of a profiled launch"}, 400)
        try:
            result = cache.result(launch_id, int(pair) if pair is not None else None)
        except TracekitError as exc:
            return _json({"error": str(exc)}, 422)
        return _json(cache.traces.analysis_dict(result), 200)


def _json(payload: object, status: int) -> Response:
    return Response(json.dumps(payload, allow_nan=False), status=status, mimetype="application/json")
