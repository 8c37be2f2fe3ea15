"""The Python safety contract is the P4 one: same rules, same order, same reason codes."""

import re
from pathlib import Path

from ackwise.safety import RULES, AckFacts, KeepReason, keep_reason

P4 = Path(__file__).resolve().parents[2] / "p4src" / "include"


def test_reason_codes_match_constants_p4() -> None:
    codes = dict(re.findall(r"const keep_reason_t KEEP_(\w+) = (\d+);", (P4 / "constants.p4").read_text()))
    assert {k: int(v) for k, v in codes.items()} == {m.name: m.value for m in KeepReason}


def test_rule_order_matches_ack_safety_p4() -> None:
    chain = re.findall(r"if \(facts\.(\w+)\) \{\s*reason = KEEP_(\w+);", (P4 / "ack_safety.p4").read_text())
    assert chain == [(fact, reason.name) for fact, reason in RULES]


def test_first_rule_that_holds_names_the_reason() -> None:
    assert keep_reason(AckFacts()) is KeepReason.NONE
    assert keep_reason(AckFacts(acks_all_data=True)) is KeepReason.ACKS_ALL_DATA
    assert keep_reason(AckFacts(dup_ack=True, window_update=True)) is KeepReason.WINDOW_UPDATE
    assert keep_reason(AckFacts(flags_keep=True, dup_ack=True, sack_news=True)) is KeepReason.FLAGS
    assert keep_reason(AckFacts(dsack=True, sack_news=True)) is KeepReason.DSACK
