"""Out-of-tree plugins for the scheduler's process tests, loaded by `module:Class` from a config file."""

from __future__ import annotations

import asyncio
from typing import Any


class PreferLabel:
    """Score: nodes labelled `<label>=true` get 100, others 0."""

    name = "PreferLabel"

    def __init__(self, args: dict[str, Any], handle: Any) -> None:
        self.label = args.get("label", "preferred")

    def score(self, state: Any, pod: dict[str, Any], node_info: Any) -> tuple[int, None]:
        return (100 if node_info.labels.get(self.label) == "true" else 0), None

    def score_extensions(self) -> None:
        return None


class Exploding:
    """Filter: raises for pods labelled `explode=true` (a plugin bug the scheduler must survive)."""

    name = "Exploding"

    def __init__(self, args: dict[str, Any], handle: Any) -> None:
        pass

    def filter(self, state: Any, pod: dict[str, Any], node_info: Any) -> None:
        if (pod.get("metadata") or {}).get("labels", {}).get("explode") == "true":
            raise RuntimeError("boom")
        return None


class SlowBind:
    """PreBind: holds pods labelled `slow-bind=true` for two seconds, so a test can act while they bind."""

    name = "SlowBind"

    def __init__(self, args: dict[str, Any], handle: Any) -> None:
        pass

    async def pre_bind(self, state: Any, pod: dict[str, Any], node_name: str) -> None:
        if (pod.get("metadata") or {}).get("labels", {}).get("slow-bind") == "true":
            await asyncio.sleep(2)
        return None
