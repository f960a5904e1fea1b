"""Retry policy as a pure object: (failed attempts so far) → delay before the next, or give up."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    base: float = 0.5
    cap: float = 30.0

    def delay(self, failed_attempts: int) -> float | None:
        """Seconds to wait after the `failed_attempts`-th failure; None: no attempt is left."""
        if failed_attempts >= self.max_attempts:
            return None
        return min(self.cap, self.base * 2.0 ** (failed_attempts - 1))
