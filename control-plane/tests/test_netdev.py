"""ackwise.netdev's receive steering: the mask and the read-back check (the setting itself is
checked on real interfaces by integration-tests/test_segment_order.py)."""

from __future__ import annotations

import os

import pytest

from ackwise.netdev import (
    ReceiveSteeringError,
    check_receive_steering,
    receive_steering_script,
    rps_cpus_mask,
)


def test_the_mask_covers_every_cpu_this_process_may_use() -> None:
    assert int(rps_cpus_mask(), 16) == sum(1 << cpu for cpu in os.sched_getaffinity(0))


def test_in_order_the_mask_is_one_cpu_the_first_this_process_may_use() -> None:
    assert int(rps_cpus_mask(in_order=True), 16) == 1 << min(os.sched_getaffinity(0))


def test_the_in_order_script_writes_the_one_cpu_mask() -> None:
    script = receive_steering_script("t0", in_order=True)
    assert f"echo {rps_cpus_mask(in_order=True)} > $q/rps_cpus" in script


def test_the_script_writes_and_reads_back_every_receive_queue_of_the_interface() -> None:
    script = receive_steering_script("s1-eth1")
    assert script.startswith("unshare -m sh -c 'umount -l /sys && mount -t sysfs sysfs /sys && ")
    assert f"echo {rps_cpus_mask()} > $q/rps_cpus; cat $q/rps_cpus" in script
    assert "/sys/class/net/s1-eth1/queues/rx-*" in script


@pytest.mark.parametrize("shown", ["3\n", "3\n1\n", "00000000,00000003\n"])
def test_a_non_zero_mask_on_every_queue_passes(shown: str) -> None:
    check_receive_steering("s1-eth1", shown)


@pytest.mark.parametrize(
    "shown",
    [
        "",  # no queue at all
        "0\n",  # the kernel kept RPS off
        "3\n0\n",  # one queue of two
        "sh: 1: cannot create /sys/class/net/x/queues/rx-*/rps_cpus: Directory nonexistent\n",
        "mount: /sys: permission denied.\n",
    ],
)
def test_anything_else_is_refused_with_the_fix(shown: str) -> None:
    with pytest.raises(ReceiveSteeringError, match="CONFIG_RPS and root"):
        check_receive_steering("s1-eth1", shown)
