"""AlwaysAdmit and AlwaysDeny: the two trivial plugins, kept (as kube keeps them) for testing the chain."""

from __future__ import annotations

from ..interface import Attributes, forbidden


class AlwaysAdmit:
    name = "AlwaysAdmit"

    def handles(self, operation: str) -> bool:
        return False

    async def validate(self, attributes: Attributes) -> None:
        return None


class AlwaysDeny:
    name = "AlwaysDeny"

    def handles(self, operation: str) -> bool:
        return True

    async def validate(self, attributes: Attributes) -> None:
        raise forbidden(attributes, "admission control is denying all modifications")
