"""Serial-number arithmetic on 32-bit TCP sequence and ACK numbers (RFC 1982), correct across the
wrap. The P4 twin lives in p4src/include/serial.p4."""

from __future__ import annotations

MOD = 1 << 32
HALF = 1 << 31


def seq_diff(a: int, b: int) -> int:
    """a - b as a signed 32-bit distance in [-2**31, 2**31), as P4's (int<32>)(a - b)."""
    d = (a - b) % MOD
    return d - MOD if d >= HALF else d


def seq_lt(a: int, b: int) -> bool:
    return seq_diff(a, b) < 0


def seq_leq(a: int, b: int) -> bool:
    return seq_diff(a, b) <= 0


def seq_gt(a: int, b: int) -> bool:
    return seq_diff(a, b) > 0


def seq_geq(a: int, b: int) -> bool:
    return seq_diff(a, b) >= 0


def seq_add(a: int, n: int) -> int:
    return (a + n) % MOD


def seq_max(a: int, b: int) -> int:
    return a if seq_geq(a, b) else b
