"""The safety contract: which pure ACKs no ACK policy may drop, in one Python definition.

It is the twin of p4src/include/ack_safety.p4 (same rules, same order, same reason codes: the
reasons are the P4's KeepReason, generated into ackwise.twins.p4names) and is what the end-host agent
applies. The caller computes the facts from its own flow state. control-plane/tests/test_safety.py
keeps the rules in step with the P4's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ackwise.twins.p4names import KeepReason


@dataclass(frozen=True)
class AckFacts:
    flags_keep: bool = False  # SYN, FIN, RST, URG or PSH set
    has_payload: bool = False
    first_ack: bool = False  # no earlier ACK of this half-flow to compare with
    window_update: bool = False  # same ACK number as the previous ACK, different window
    dup_ack: bool = False  # ACK number not advancing
    dsack: bool = False
    sack_news: bool = False  # a SACK block the sender has not been told about
    ece_cwr_change: bool = False
    window_reopen: bool = False  # previous window below one MSS, this one not
    unknown_option: bool = False
    ts_reordered: bool = False  # TSval or TSecr older than already seen
    idle: bool = False  # first ACK after the flow was idle
    # below the recovery point of a loss the data sender is repairing (its highest data sent when it
    # first retransmitted): NewReno's partial ACKs (RFC 6582) and a timeout's slow start, where each
    # ACK may be the only one the sender gets for a round trip
    recovery: bool = False
    acks_all_data: bool = False  # acknowledges all data seen sent: dropping it could stall a burst's end


# The rules in the order they are checked: the first that holds names the reason.
RULES: tuple[tuple[str, KeepReason], ...] = (
    ("flags_keep", KeepReason.FLAGS),
    ("has_payload", KeepReason.PAYLOAD),
    ("first_ack", KeepReason.FIRST_ACK),
    ("window_update", KeepReason.WINDOW_UPDATE),
    ("dup_ack", KeepReason.DUP_ACK),
    ("dsack", KeepReason.DSACK),
    ("sack_news", KeepReason.SACK_NEWS),
    ("ece_cwr_change", KeepReason.ECE_CWR_CHANGE),
    ("window_reopen", KeepReason.WINDOW_REOPEN),
    ("unknown_option", KeepReason.UNKNOWN_OPTION),
    ("ts_reordered", KeepReason.TS_REORDERED),
    ("idle", KeepReason.IDLE),
    ("recovery", KeepReason.RECOVERY),
    ("acks_all_data", KeepReason.ACKS_ALL_DATA),
)


def keep_reason(facts: AckFacts) -> KeepReason:
    """The first rule of the contract that holds, or NONE if a policy may drop the ACK."""
    for name, reason in RULES:
        if getattr(facts, name):
            return reason
    return KeepReason.NONE
