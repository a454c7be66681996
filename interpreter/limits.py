"""Bounds on what a template may make the machine do. An embedder can set each one."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import LimitExceeded


@dataclass(frozen=True)
class Limits:
    """Every limit a render is held to; exceeding one raises `LimitExceeded` at the node."""
    max_nesting: int = 200            # parser: how deeply constructs may nest
    max_repeat: int = 10_000_000      # `'ab' * n`, `[x] * n`: items in the result
    max_power_bits: int = 100_000     # `a ** b`: bits in an integer result

    def check_repeat(self, left: Any, right: Any) -> None:
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and not isinstance(n, bool):
                if len(seq) * n > self.max_repeat:
                    raise LimitExceeded(f"repetition would make {len(seq) * n} items "
                                        f"(limit {self.max_repeat})")

    def check_power(self, base: Any, exponent: Any) -> None:
        if (isinstance(base, int) and isinstance(exponent, int) and exponent > 0
                and abs(base) > 1 and base.bit_length() * exponent > self.max_power_bits):
            raise LimitExceeded(f"the power would have more than {self.max_power_bits} bits")


DEFAULT_LIMITS = Limits()
