from ackwise.twins.serial import seq_add, seq_diff, seq_geq, seq_gt, seq_leq, seq_lt, seq_max


def test_ordinary_order() -> None:
    assert seq_lt(1, 2) and seq_leq(2, 2) and seq_gt(3, 2) and seq_geq(3, 3)
    assert seq_diff(10, 3) == 7 and seq_diff(3, 10) == -7


def test_across_the_wrap() -> None:
    before, after = 0xFFFFFF00, 0x00000100
    assert seq_lt(before, after) and seq_gt(after, before)
    assert seq_diff(after, before) == 0x200
    assert seq_add(before, 0x200) == after
    assert seq_max(before, after) == after


def test_half_space_boundary() -> None:
    assert seq_diff(0x80000000, 0) == -0x80000000  # exactly half: behind, as in P4's int<32>
    assert seq_lt(0, 0x7FFFFFFF) and seq_gt(0, 0x80000001)
