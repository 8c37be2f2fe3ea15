"""The Python safety contract is the P4 one: same rules, same order, same reason codes (the P4
side as `make constants` reads it into ackwise.twins.p4names)."""

from ackwise.twins.p4names import ACK_SAFETY_RULES_ENTRIES, SafetyFact
from ackwise.twins.safety import RULES, AckFacts, KeepReason, keep_reason


def test_rule_order_matches_ack_safety_p4() -> None:
    """ack_safety.p4's rules table: one entry per fact, value and mask the fact's bit, keep(reason);
    the Python rules check the same facts in the same order for the same reasons."""
    p4_rules = []
    for ((value, mask),), action, (reason,) in ACK_SAFETY_RULES_ENTRIES:
        assert value == mask and action == "keep"
        p4_rules.append((SafetyFact(value).name.lower(), KeepReason(reason)))
    assert p4_rules == list(RULES)


def test_each_fact_has_its_own_bit_and_a_field() -> None:
    """FACT_* are distinct single bits, one per AckFacts field, named after it (ack_thinning.p4's
    ack_facts() sets each from the local of that name; ptf-tests/test_ack_safety.py checks each
    rule's reason through the switch)."""
    assert all(bin(fact.value).count("1") == 1 for fact in SafetyFact)
    assert sorted(f.name.lower() for f in SafetyFact) == sorted(AckFacts.__dataclass_fields__)
    assert sorted(f.name.lower() for f in SafetyFact) == sorted(fact for fact, _ in RULES)


def test_first_rule_that_holds_names_the_reason() -> None:
    assert keep_reason(AckFacts()) is KeepReason.NONE
    assert keep_reason(AckFacts(acks_all_data=True)) is KeepReason.ACKS_ALL_DATA
    assert keep_reason(AckFacts(dup_ack=True, window_update=True)) is KeepReason.WINDOW_UPDATE
    assert keep_reason(AckFacts(flags_keep=True, dup_ack=True, sack_news=True)) is KeepReason.FLAGS
    assert keep_reason(AckFacts(dsack=True, sack_news=True)) is KeepReason.DSACK
