"""Names and codes the P4 programs fix for the control plane, in one Python place.

Table, counter and register names come from ``@name`` annotations; the reason codes mirror
p4src/include/constants.p4 (control-plane/tests/test_p4names.py keeps the two in step).
"""

from __future__ import annotations

from enum import IntEnum

# ---- forwarding ----
IPV4_LPM = "forwarding.ipv4_lpm"
L2_EXACT = "forwarding.l2_exact"
FORWARDING_DROPS = "forwarding.drops"
PARSER_MALFORMED = "parser.malformed"

# An agent's heartbeat on its CPU port: the AP's repair agent, the hold-back agent
# (ETHERTYPE_AGENT_HEARTBEAT in constants.p4).
ETHERTYPE_AGENT_HEARTBEAT = 0x88B5


class MalformedReason(IntEnum):
    """Index into the parser.malformed counter (MALFORMED_* in constants.p4)."""

    NONE = 0
    TCP_OPTION_LENGTH = 1
    TCP_OPTION_OVERRUN = 2
    TCP_DATA_OFFSET = 3
    TRUNCATED = 4
    IPV4_IHL = 5
    OTHER_PARSER_ERROR = 6
    IPV4_HEADER = 7  # version, total length or the header cut short: dropped (RFC 1812 5.2.2)


class DropReason(IntEnum):
    """Index into the forwarding.drops counter (DROP_* in constants.p4)."""

    NONE = 0
    NO_ENTRY = 1
    TTL_EXPIRED = 2
    IPV4_CHECKSUM = 3
    MALFORMED_IPV4 = 4
