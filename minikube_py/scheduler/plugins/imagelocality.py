"""ImageLocality: prefer nodes that already have the pod's container images (Score), so it starts sooner.

Each image the node has (from `node.status.images`, which the cache turns into `NodeInfo.image_states`)
counts its size scaled by how widespread it is, `size * nodes_with_image / total_nodes`, so an image every
node has does not pull all pods onto one node. The sum is clamped to [23 MB, 1000 MB per container] and
mapped linearly onto [0, 100]: nodes with only small images get 0.

Image names are compared after adding `:latest` to names without a tag, as the node reports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.scheduler.framework.interface import MAX_NODE_SCORE, Code, CycleState, Handle, Pod, Status
from minikube_py.scheduler.framework.types import ImageStateSummary, NodeInfo

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
_PRE_SCORE_KEY = "PreScoreImageLocality"


def normalized_image_name(name: str) -> str:
    """`name` with `:latest` added when it names no tag (a ':' in the registry's host:port does not count)."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


def _images(pod: Pod) -> tuple[tuple[str, ...], int]:
    """The pod's normalized image names (init containers and containers) and its number of containers."""
    spec = pod.get("spec") or {}
    containers = [c for c in list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
                  if isinstance(c, dict)]
    names = tuple(normalized_image_name(c["image"]) for c in containers if isinstance(c.get("image"), str))
    return names, len(containers)


def _sum_image_scores(image_states: Mapping[str, ImageStateSummary], images: Sequence[str], total_nodes: int) -> int:
    """The sizes of the images the node has, each scaled by the share of nodes that have it."""
    total = 0
    for image in images:
        state_summary = image_states.get(image)
        if state_summary is not None:
            total += int(state_summary.size * (state_summary.num_nodes / total_nodes))
    return total


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """The image bytes found on the node as a score in [0, 100]."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = min(max(sum_scores, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name = "ImageLocality"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        images, num_containers = _images(pod)
        if not images:
            return Status(Code.SKIP)
        state.write(_PRE_SCORE_KEY, (images, num_containers, len(self.handle.snapshot.list())))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        scores, status = self.score_nodes(state, pod, [node_info])
        return scores[0], status

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """Per node, 0 when it has no images at all (nodes without a kubelet), else the bytes of the pod's images
        it has, spread-scaled, as a score."""
        try:
            images, num_containers, total_nodes = state.read(_PRE_SCORE_KEY)
        except KeyError:  # PreScore disabled in this profile
            images, num_containers = _images(pod)
            total_nodes = len(self.handle.snapshot.list())
        if not total_nodes:
            return [0] * len(nodes), None
        return [calculate_priority(_sum_image_scores(image_states, images, total_nodes), num_containers)
                if (image_states := node_info.image_states) else 0 for node_info in nodes], None

    def score_extensions(self) -> None:
        return None
