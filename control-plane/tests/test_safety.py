"""The Python safety contract is the P4 one: same rules, same order, same reason codes."""

import re
from pathlib import Path

from ackwise.safety import RULES, AckFacts, KeepReason, keep_reason

P4 = Path(__file__).resolve().parents[2] / "p4src" / "include"


def test_reason_codes_match_constants_p4() -> None:
    codes = dict(re.findall(r"const keep_reason_t KEEP_(\w+) = (\d+);", (P4 / "constants.p4").read_text()))
    assert {k: int(v) for k, v in codes.items()} == {m.name: m.value for m in KeepReason}


def test_rule_order_matches_ack_safety_p4() -> None:
    source = (P4 / "ack_safety.p4").read_text()
    entries = re.findall(r"FACT_(\w+) &&& FACT_(\w+) : keep\(KEEP_(\w+)\);", source)
    assert all(value == mask for value, mask, _ in entries)
    assert [(value.lower(), reason) for value, _, reason in entries] == [
        (fact, reason.name) for fact, reason in RULES
    ]


def test_each_fact_has_its_own_bit_and_the_switch_sets_it() -> None:
    """FACT_ constants are distinct single bits named after AckFacts' fields, and ack_facts() in
    ack_thinning.p4 sets each one from the local of the same name."""
    bits = {
        name.lower(): 1 << int(shift)
        for name, shift in re.findall(
            r"const bit<13> FACT_(\w+) = 1 << (\d+);", (P4 / "ack_safety.p4").read_text()
        )
    }
    assert sorted(bits) == sorted(fact for fact, _ in RULES)
    assert len(set(bits.values())) == len(bits)
    thinning = (P4 / "ack_thinning.p4").read_text()
    set_from = dict(re.findall(r"\((\w+) \? FACT_(\w+) : 0\)", thinning))
    assert {local: fact.lower() for local, fact in set_from.items()} == {fact: fact for fact in bits}


def test_first_rule_that_holds_names_the_reason() -> None:
    assert keep_reason(AckFacts()) is KeepReason.NONE
    assert keep_reason(AckFacts(acks_all_data=True)) is KeepReason.ACKS_ALL_DATA
    assert keep_reason(AckFacts(dup_ack=True, window_update=True)) is KeepReason.WINDOW_UPDATE
    assert keep_reason(AckFacts(flags_keep=True, dup_ack=True, sack_news=True)) is KeepReason.FLAGS
    assert keep_reason(AckFacts(dsack=True, sack_news=True)) is KeepReason.DSACK
