import pytest

from ackwise.features.apply import ConfigError, validate

GOOD = {
    "clear": ["forwarding.ipv4_lpm"],
    "tables": [
        {
            "table": "forwarding.ipv4_lpm",
            "action": "route",
            "key": {"dst_addr": "10.0.1.0/24"},
            "params": {"port": 1, "src_mac": "00:00:00:00:01:fe", "dst_mac": "00:00:00:00:01:01"},
        }
    ],
    "ports": [{"port": 1, "rate_pps": 100}],
}


def test_valid_config_passes() -> None:
    validate(GOOD, "cfg")


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        ([], "expected a mapping"),
        ({"tabels": []}, "unknown section.*tabels"),
        ({"tables": [{"table": "t"}]}, "tables item 1: missing action"),
        ({"tables": [{"table": "t", "action": "a", "prio": 1}]}, "unknown prio"),
        ({"ports": {"port": 1}}, "'ports' must be a list"),
        ({"clear": "t"}, "'clear' must be a list"),
    ],
)
def test_invalid_configs_say_where(doc: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        validate(doc, "cfg")
