"""``make bench``: packets per second through one simple_switch (no event log) running ack_switch
with each ACK policy, against the same switch running forward_only (the same parser and
forwarding, no thinning stage), all measured in one run.

Traffic is crafted per flow so that the thinning stage does real work: data segments with
advancing sequence numbers one way, pure ACKs with advancing ACK numbers the other way, NOP NOP
Timestamps on every segment. Two mixes: pure-ACK-heavy (1 data segment per 8 ACKs, 66-byte ACKs)
and data-heavy (2 data segments of 1514 bytes per ACK). The sender offers more than the switch
can take; the rate is what the switch handled: packets out of it plus ACKs it thinned on purpose.

    python -m ackwise.experiments.bench [--seconds 3] [--offered-pps 30000] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ackwise.bmv2.client import SwitchClient
from ackwise.bmv2.launcher import SwitchSpec, start_switch
from ackwise.bmv2.toolchain import REPO_ROOT, compiled_program
from ackwise.policies import MSS_BYTES, PolicyParams
from ackwise.thinning import FILTER_STATS, THINNING_STATS, ThinningStat, set_default_policy

from .record import tool_versions

N_FLOWS = 64
MIXES = {"ack-heavy": (1, 8), "data-heavy": (2, 1)}  # (data segments, pure ACKs) per round
CONFIGS = [
    ("forward_only", None),
    ("ack_switch", "off"),
    ("ack_switch", "every_d d=8"),
    ("ack_switch", "dynamic_d"),
    ("ack_switch", "tack"),
    ("ack_switch", "filter"),
]
MAC = {1: bytes.fromhex("0000000001fe"), 2: bytes.fromhex("0000000002fe")}


def _ipv4_header(src: int, dst: int, payload_len: int) -> bytes:
    header = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + payload_len,
        1,
        0,
        64,
        6,
        0,
        src.to_bytes(4, "big"),
        dst.to_bytes(4, "big"),
    )
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]


def _segment(
    in_port: int, src: int, dst: int, sport: int, dport: int, seq: int, ack: int, payload: int
) -> bytes:
    """Ethernet/IPv4/TCP with NOP NOP Timestamps. The TCP checksum is left zero: the switch does
    not check it, and nothing behind the switch reads these packets."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq % 2**32, ack % 2**32, 8 << 4, 0x10, 1000, 0, 0)
    tcp += b"\x01\x01\x08\x0a" + struct.pack("!II", seq % 2**32, ack % 2**32)
    ip = _ipv4_header(src, dst, len(tcp) + payload)
    return MAC[in_port] + bytes.fromhex("000000000101") + b"\x08\x00" + ip + tcp + bytes(payload)


def build_traffic(mix: str, rounds: int) -> list[tuple[int, bytes]]:
    """(ingress port, frame) in sending order."""
    n_data, n_acks = MIXES[mix]
    host1, host2 = 0x0A000101, 0x0A000201
    frames: list[tuple[int, bytes]] = []
    sent = [0] * N_FLOWS  # bytes of data per flow
    # ACKs lag the data by a flight of 16 segments and share out the data's advance evenly, so
    # they are neither duplicates nor acknowledgements of everything sent.
    step = n_data * MSS_BYTES // n_acks
    for r in range(rounds):
        f = r % N_FLOWS
        sport = 20000 + f
        for _ in range(n_data):
            frames.append((1, _segment(1, host1, host2, sport, 5001, 1000 + sent[f], 1, MSS_BYTES)))
            sent[f] += MSS_BYTES
        for i in range(n_acks):
            acked = max(0, sent[f] - 16 * MSS_BYTES - (n_acks - 1 - i) * step)
            frames.append((2, _segment(2, host2, host1, 5001, sport, 1, 1000 + acked, 0)))
    return frames


def _veth(name: str, peer: str) -> None:
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", peer], check=True)
    for iface in (name, peer):
        Path(f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6").write_text("1")
        subprocess.run(["ip", "link", "set", iface, "mtu", "9000", "up"], check=True)


def _rx(iface: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/rx_packets").read_text())


@dataclass
class Result:
    program: str
    policy: str
    mix: str
    offered_pps: float
    handled_pps: float
    forwarded: int
    thinned: int


def measure(
    program: str,
    policy: str | None,
    mix: str,
    frames: list[tuple[int, bytes]],
    seconds: float,
    offered_pps: float,
    ifaces: dict[int, tuple[str, str]],
    thrift_port: int,
) -> Result:
    spec = SwitchSpec(
        program_json=str(compiled_program(program)),
        ports={p: sw for p, (sw, _) in ifaces.items()},
        thrift_port=thrift_port,
        enable_swap=False,
    )
    running = start_switch(spec)
    try:
        with SwitchClient("localhost", thrift_port) as client:
            for port in (1, 2):
                client.table_add(
                    "forwarding.ipv4_lpm",
                    "route",
                    {"dst_addr": f"10.0.{port}.0/24"},
                    {
                        "port": port,
                        "src_mac": f"00:00:00:00:0{port}:fe",
                        "dst_mac": f"00:00:00:00:0{port}:01",
                    },
                )
            if policy is not None:
                set_default_policy(client, PolicyParams.parse(policy.split()[0], policy.split()[1:]))
        socks = {}
        for port, (_, test_side) in ifaces.items():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((test_side, 0))
            socks[port] = s
        time.sleep(0.2)
        rx_before = {p: _rx(t) for p, (_, t) in ifaces.items()}
        # Pace in batches of 100 frames to the offered rate for `seconds`.
        total = min(len(frames), int(offered_pps * seconds))
        start = time.monotonic()
        for i in range(0, total, 100):
            for port, frame in frames[i : i + 100]:
                try:
                    socks[port].send(frame)
                except OSError:
                    pass
            ahead = start + (i + 100) / offered_pps - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        sent_s = time.monotonic() - start
        time.sleep(0.5)  # let the switch drain what it accepted
        forwarded = sum(_rx(t) - rx_before[p] for p, (_, t) in ifaces.items())
        thinned = 0
        if program == "ack_switch":
            with SwitchClient("localhost", thrift_port) as client:
                thinned = (
                    client.counter_read(THINNING_STATS, ThinningStat.ACKS_THINNED).packets
                    + client.counter_read(FILTER_STATS, 1).packets
                )
        for s in socks.values():
            s.close()
        return Result(
            program,
            policy or "-",
            mix,
            total / sent_s,
            (forwarded + thinned) / (sent_s + 0.5),
            forwarded,
            thinned,
        )
    finally:
        running.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--offered-pps", type=float, default=30000)
    parser.add_argument(
        "--write-docs", action="store_true", help="write the results into docs/performance.md"
    )
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench creates veth interfaces: run it as root", file=sys.stderr)
        return 2
    tag = f"bn{os.getpid() % 10000}"
    ifaces = {1: (f"{tag}s1", f"{tag}t1"), 2: (f"{tag}s2", f"{tag}t2")}
    results: list[Result] = []
    try:
        for sw, test in ifaces.values():
            _veth(sw, test)
        for mix in MIXES:
            frames = build_traffic(mix, int(args.offered_pps * args.seconds / sum(MIXES[mix])) + 1)
            for program, policy in CONFIGS:
                r = measure(program, policy, mix, frames, args.seconds, args.offered_pps, ifaces, 9590)
                results.append(r)
                print(
                    f"{mix:<10} {program:<12} {r.policy:<12} offered {r.offered_pps:8.0f} pps, "
                    f"handled {r.handled_pps:8.0f} pps (out {r.forwarded}, thinned {r.thinned})",
                    flush=True,
                )
    finally:
        for sw, _ in ifaces.values():
            subprocess.run(["ip", "link", "del", sw], stderr=subprocess.DEVNULL)
    table = render(results, args)
    print(table)
    if args.write_docs:
        write_docs(table)
    return 0


def render(results: list[Result], args: argparse.Namespace) -> str:
    lines = [
        "| mix | program | policy | handled pps | ratio to forward_only | out | thinned |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mix in MIXES:
        base = next(r.handled_pps for r in results if r.mix == mix and r.program == "forward_only")
        for r in (r for r in results if r.mix == mix):
            lines.append(
                f"| {mix} | {r.program} | {r.policy} | {r.handled_pps:.0f} | {r.handled_pps / base:.2f} | "
                f"{r.forwarded} | {r.thinned} |"
            )
    offered = {mix: next(r.offered_pps for r in results if r.mix == mix) for mix in MIXES}
    v = tool_versions()
    lines += [
        "",
        f"Offered: {', '.join(f'{m} {o:.0f} pps' for m, o in offered.items())} for {args.seconds:g} s "
        f"per configuration, {N_FLOWS} flows; simple_switch {v['simple_switch']}, p4c {v['p4c']}, "
        f"kernel {v['kernel']}, {os.cpu_count()} cores, ackwise {v['ackwise']}.",
    ]
    return "\n".join(lines)


def write_docs(table: str) -> None:
    path = REPO_ROOT / "docs" / "performance.md"
    text = path.read_text() if path.exists() else ""
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    command = "sudo make bench   # = python -m ackwise.experiments.bench --write-docs"
    block = f"{start}\nMeasured {time.strftime('%Y-%m-%d')} with:\n\n    {command}\n\n{table}\n{end}"
    if start in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
