"""Tools for brewing tea."""

import asyncio
from dataclasses import dataclass


@dataclass
class Kettle:
    """Boils water for a pot."""

    litres: float = 1.0

    # Heating is slow: callers should await it.
    @staticmethod
    async def heat(target: int = 100) -> int:
        """Heats the water to ``target`` degrees."""
        temperature = 20
        while temperature < target:
            await asyncio.sleep(0.01)

            temperature += 10
        return temperature

    def pour(self, cups: int) -> float:
        """Pours ``cups`` cups and returns the water left."""
        self.litres -= 0.25 * cups
        return self.litres


def steep(pot: Kettle, minutes: int = 4) -> str:
    """Steeps the tea and says how strong it is."""
    strength = "mild" if minutes < 3 else "strong"

    if pot.litres < 0.5:
        strength = "bitter"
    return strength
