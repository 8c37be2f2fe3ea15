"""Egress queues of a switch: their service rate and depth in bmv2, and the copy of both that the
program keeps to model them at ingress (p4src/include/queue_model.p4).

bmv2 lets a program see its queue only at egress. Coalescing decides at ingress, so ack_switch
keeps its own books of each rate-limited queue; they are right only if the program knows the rate
and depth the control plane gave bmv2. Every ackwise path that sets a rate or depth (the CLI,
``ackwise apply``, the test bed) goes through here, so the two never differ.
"""

from __future__ import annotations

from .bmv2.client import SwitchClient

CAPACITY_REGISTER = "queue.capacity_pkts"
SERVICE_REGISTER = "queue.service_us"
BMV2_DEFAULT_DEPTH_PKTS = 64  # simple_switch's egress queue (BMV2_DEFAULT_QUEUE_DEPTH in constants.p4)


def service_us(rate_pps: int) -> int:
    """Time between two departures at ``rate_pps``, in whole microseconds (0: no limit), as bmv2
    spaces them (it truncates 1 / rate to nanoseconds; the model's microsecond is close enough)."""
    if rate_pps < 0:
        raise ValueError(f"queue rate {rate_pps} packets/s: must be >= 0 (0: no limit)")
    return 0 if rate_pps == 0 else 1_000_000 // rate_pps


def _write(client: SwitchClient, register: str, port: int | None, value: int) -> None:
    if register not in client.program.registers:
        return  # a program that does not model its queues (forward_only, ap_proxy)
    if port is None:
        size = client.program.registers[register].size
        client.register_write_range(register, 0, size - 1, value)
    else:
        client.register_write(register, port, value)


def set_queue_rate(client: SwitchClient, port: int | None, rate_pps: int) -> None:
    """Serve a port's (or every port's) egress queue at ``rate_pps`` packets/s (0: no limit)."""
    service = service_us(rate_pps)
    client.set_queue_rate(port, rate_pps)
    _write(client, SERVICE_REGISTER, port, service)


def set_queue_depth(client: SwitchClient, port: int | None, depth_pkts: int) -> None:
    """Set a port's (or every port's) egress queue capacity in packets."""
    if depth_pkts < 1:
        raise ValueError(f"queue depth {depth_pkts} packets: must be >= 1")
    client.set_queue_depth(port, depth_pkts)
    _write(client, CAPACITY_REGISTER, port, depth_pkts)
