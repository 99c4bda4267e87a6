"""Explain mode: why did the pod go there (or nowhere)? Every plugin's verdict and score, kept on the pod.

With `mkpy scheduler --explain`, each scheduling cycle records what the framework's recorder hook reports
(see framework/runtime.py) and writes it onto the pod as annotations before binding (or after failing), in
the spirit of kube-scheduler-simulator:

    explain.scheduler.mkpy.dev/filter   {"node-a": {"NodeResourcesFit": "passed", "TaintToleration": "…"}, …}
    explain.scheduler.mkpy.dev/score    {"node-a": {"NodeResourcesFit": 87, "ImageLocality": 0, …}, …}
    explain.scheduler.mkpy.dev/result   {"selectedNode": "node-a", "feasibleNodes": 3, …} or {"failure": "0/3 …"}

Scores are the weighted ones, i.e. what each plugin added to the node's total. `mkpy scheduler explain POD`
prints them as tables (`render`).

Usage rules: off by default, since it costs a PATCH per attempt and a recorder call per plugin per node; at
most MAX_NODES nodes are kept per annotation (a pod's annotations may not exceed 256 KiB).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.scheduler.framework.interface import Code, Status

PREFIX = "explain.scheduler.mkpy.dev/"
FILTER, SCORE, RESULT = PREFIX + "filter", PREFIX + "score", PREFIX + "result"
PASSED = "passed"
MAX_NODES = 100

log = logging.getLogger("mkpy.scheduler")


class ExplainRecorder:
    """Collects one cycle's verdicts; called as the framework's `recorder(point, plugin, node, value)`."""

    def __init__(self, fwk: Any, pod: dict[str, Any]) -> None:
        self.profile = getattr(fwk, "profile_name", "")
        self.filters: dict[str, dict[str, str]] = {}
        self.scores: dict[str, dict[str, int]] = {}
        self.cycle: dict[str, dict[str, str]] = {}  # PreFilter / PreScore verdicts, per plugin

    def __call__(self, point: str, plugin: str, node_name: str, value: Any) -> None:
        if point == "Filter":
            if node_name in self.filters or len(self.filters) < MAX_NODES:
                self.filters.setdefault(node_name, {})[plugin] = _verdict(value)
        elif point == "WeightedScore":
            if node_name in self.scores or len(self.scores) < MAX_NODES:
                self.scores.setdefault(node_name, {})[plugin] = int(value)
        elif point in ("PreFilter", "PreScore"):
            self.cycle.setdefault(point, {})[plugin] = _verdict(value)

    def annotations(self, result: Any = None, failure: str = "") -> dict[str, str]:
        outcome: dict[str, Any] = {"profile": self.profile, **self.cycle}
        if result is not None:
            outcome.update(selectedNode=result.suggested_host, feasibleNodes=result.feasible_nodes,
                           evaluatedNodes=result.evaluated_nodes,
                           totalScores={s.name: s.total_score for s in result.scores[:MAX_NODES]})
        if failure:
            outcome["failure"] = failure
        return {FILTER: _dump(self.filters), SCORE: _dump(self.scores), RESULT: _dump(outcome)}

    async def publish(self, client: Any, pod: dict[str, Any], result: Any = None, failure: str = "") -> None:
        """Write the annotations onto the pod: a merge patch of its metadata through `pods/status`, which the
        scheduler may write (as in kube, a status write keeps label and annotation changes)."""
        metadata = pod.get("metadata") or {}
        patch = {"metadata": {"annotations": self.annotations(result, failure)}}
        try:
            await client.patch(resources.PODS, metadata.get("name", ""), patch, metadata.get("namespace"),
                               subresource="status")
        except (errors.APIStatusError, OSError) as error:
            log.warning("explain: could not annotate %s/%s: %s", metadata.get("namespace"), metadata.get("name"),
                        error)


def _verdict(value: Any) -> str:
    if isinstance(value, Status):
        if value.code == Code.SUCCESS:
            return PASSED
        return value.message() or str(value.code)
    return str(value)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def read(pod: dict[str, Any]) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, int]], dict[str, Any]] | None:
    """The filter verdicts, scores and outcome recorded on `pod`, or None when it carries none."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if RESULT not in annotations:
        return None
    try:
        return (json.loads(annotations.get(FILTER, "{}")), json.loads(annotations.get(SCORE, "{}")),
                json.loads(annotations[RESULT]))
    except ValueError:
        return None
