"""Egress queues of a switch: their service rate and depth in bmv2, and the copy of both that the
program keeps to model them at ingress (p4src/include/queue_model.p4).

bmv2 lets a program see its queue only at egress. Coalescing decides at ingress, so ack_switch
keeps its own books of each rate-limited queue; they are right only if the program knows the rate
and depth the control plane gave bmv2. Every ackwise path that sets a rate or depth (the CLI,
``ackwise apply``, the test bed) goes through here, so the two never differ: a port with a rate
has an entry in the program's ``queue.model`` table (its service time and depth), and every port's
depth is in the ``queue.capacity_pkts`` register (the filter policy reads it at egress).

A program that models its queues also keeps them to their depth: it drops at ingress a packet the
model says the queue has no room for. bmv2's own limit is set QUEUE_MODEL_HEADROOM_PKTS deeper,
so that bmv2 never tail-drops a packet the program let through (the model can be a packet off
near the edge); the queue holds the depth a user set either way.
"""

from __future__ import annotations

from ackwise.bmv2.client import SwitchClient
from ackwise.twins.p4names import (
    ACTION_QUEUE_MODELLED,
    BMV2_DEFAULT_QUEUE_DEPTH_PKTS,
    KEY_PORT,
    REGISTER_QUEUE_BOOKED_PKTS,
    REGISTER_QUEUE_CAPACITY_PKTS,
    REGISTER_QUEUE_LAST_DEPARTURE_US,
    TABLE_QUEUE_MODEL,
)

# bmv2's limit above the depth the program keeps: the model's error near the edge (one packet),
# and one more.
QUEUE_MODEL_HEADROOM_PKTS = 2


def service_us(rate_pps: int) -> int:
    """Time between two departures at ``rate_pps``, in whole microseconds (0: no limit), as bmv2
    spaces them (it truncates 1 / rate to nanoseconds; the model's microsecond is close enough)."""
    if rate_pps < 0:
        raise ValueError(f"queue rate {rate_pps} packets/s: must be >= 0 (0: no limit)")
    return 0 if rate_pps == 0 else 1_000_000 // rate_pps


def _ports(client: SwitchClient, port: int | None) -> list[int]:
    return [p.port for p in client.info().ports] if port is None else [port]


def _models(client: SwitchClient) -> dict[int, tuple[int, dict[str, int]]]:
    """port -> (entry handle, action parameters) of the model's entries."""
    return {e.key[0].value: (e.handle, e.params) for e in client.table_entries(TABLE_QUEUE_MODEL)}


def _capacity(client: SwitchClient, port: int) -> int:
    return client.register_read(REGISTER_QUEUE_CAPACITY_PKTS, port) or BMV2_DEFAULT_QUEUE_DEPTH_PKTS


def set_queue_rate(client: SwitchClient, port: int | None, rate_pps: int) -> None:
    """Serve a port's (or every port's) egress queue at ``rate_pps`` packets/s (0: no limit)."""
    service = service_us(rate_pps)
    client.set_queue_rate(port, rate_pps)
    if TABLE_QUEUE_MODEL not in client.program.tables:
        return  # a program that does not model its queues (forward_only, ap_proxy)
    models = _models(client)
    for p in _ports(client, port):
        if service == 0:
            if p in models:
                client.table_delete(TABLE_QUEUE_MODEL, models[p][0])
                client.set_queue_depth(p, _capacity(client, p))  # bmv2 keeps the depth again
            continue
        params = {"service_us": service, "capacity_pkts": _capacity(client, p)}
        client.set_queue_depth(p, params["capacity_pkts"] + QUEUE_MODEL_HEADROOM_PKTS)
        if p in models:
            client.table_modify(TABLE_QUEUE_MODEL, models[p][0], ACTION_QUEUE_MODELLED, params)
        else:
            client.table_add(TABLE_QUEUE_MODEL, ACTION_QUEUE_MODELLED, {KEY_PORT: str(p)}, params)


def set_queue_depth(client: SwitchClient, port: int | None, depth_pkts: int) -> None:
    """Set a port's (or every port's) egress queue capacity in packets."""
    if depth_pkts < 1:
        raise ValueError(f"queue depth {depth_pkts} packets: must be >= 1")
    models = _models(client) if TABLE_QUEUE_MODEL in client.program.tables else {}
    client.set_queue_depth(port, depth_pkts)
    for p in models:  # modelled ports: the program keeps the depth, bmv2 has room beyond it
        if port is None or p == port:
            client.set_queue_depth(p, depth_pkts + QUEUE_MODEL_HEADROOM_PKTS)
    if REGISTER_QUEUE_CAPACITY_PKTS not in client.program.registers:
        return
    if port is None:
        size = client.program.registers[REGISTER_QUEUE_CAPACITY_PKTS].size
        client.register_write_range(REGISTER_QUEUE_CAPACITY_PKTS, 0, size - 1, depth_pkts)
    else:
        client.register_write(REGISTER_QUEUE_CAPACITY_PKTS, port, depth_pkts)
    if TABLE_QUEUE_MODEL in client.program.tables:
        for p, (handle, params) in _models(client).items():
            if port is None or p == port:
                client.table_modify(
                    TABLE_QUEUE_MODEL, handle, ACTION_QUEUE_MODELLED, params | {"capacity_pkts": depth_pkts}
                )


def queue_settings(client: SwitchClient, port: int) -> tuple[int, int] | None:
    """(service_us, capacity_pkts) of ``port`` as ackwise last set them and the program models
    them (0: never set, so bmv2's defaults), or None for a program without a queue model. bmv2
    itself cannot be asked for a queue's rate or depth."""
    if (
        TABLE_QUEUE_MODEL not in client.program.tables
        or REGISTER_QUEUE_CAPACITY_PKTS not in client.program.registers
    ):
        return None
    models = _models(client)
    service = models[port][1]["service_us"] if port in models else 0
    return service, client.register_read(REGISTER_QUEUE_CAPACITY_PKTS, port)


def restore_rate(client: SwitchClient, port: int, service: int) -> None:
    """Back to a service time queue_settings() returned, exactly (1 / rate in whole microseconds
    does not round-trip through a rate)."""
    set_queue_rate(client, port, round(1_000_000 / service) if service else 0)
    models = _models(client) if TABLE_QUEUE_MODEL in client.program.tables else {}
    if service and port in models:
        handle, params = models[port]
        client.table_modify(
            TABLE_QUEUE_MODEL, handle, ACTION_QUEUE_MODELLED, params | {"service_us": service}
        )


def restore_depth(client: SwitchClient, port: int, capacity: int) -> None:
    """Back to a depth queue_settings() returned (0: bmv2's default, and the model's 0 too)."""
    set_queue_depth(client, port, capacity or BMV2_DEFAULT_QUEUE_DEPTH_PKTS)
    if capacity == 0 and REGISTER_QUEUE_CAPACITY_PKTS in client.program.registers:
        client.register_write(REGISTER_QUEUE_CAPACITY_PKTS, port, 0)


def queue_backlog_pkts(client: SwitchClient, port: int) -> int | None:
    """Packets in ``port``'s egress queue now, from the program's model of it: the packets booked
    to leave after now, one service time apart (queue_model.p4). None for a port without a rate
    (its queue drains as fast as the egress thread runs, and bmv2 reads no occupancy over Thrift)
    or a program without the model."""
    if TABLE_QUEUE_MODEL not in client.program.tables:
        return None
    models = _models(client)
    if port not in models or not models[port][1]["service_us"]:
        return None
    service = models[port][1]["service_us"]
    last_departure_us = client.register_read(REGISTER_QUEUE_LAST_DEPARTURE_US, port)
    # The switch's clock: the same microseconds since it started as ingress_global_timestamp.
    backlog_us = last_departure_us - client.time_elapsed_us()
    return max(0, -(-backlog_us // service))


def port_loads(client: SwitchClient) -> dict[int, tuple[int, int]]:
    """port -> (service_us, packets booked so far) of every port with a rate, as the program's
    queue model counts them (one table dump, one bulk register read); {} without the model. The
    booked count is a 32-bit counter: take differences modulo 2**32."""
    if (
        TABLE_QUEUE_MODEL not in client.program.tables
        or REGISTER_QUEUE_BOOKED_PKTS not in client.program.registers
    ):
        return {}
    models = _models(client)
    if not models:
        return {}
    booked = client.register_read_all(REGISTER_QUEUE_BOOKED_PKTS)
    return {
        port: (params["service_us"], booked[port])
        for port, (_, params) in models.items()
        if params["service_us"]
    }
