"""runner._fill_estimates: the receiver's window estimate beside the sender's cwnd, kept once per
record (the host agent's wall-clock copy went into the record too: over half of
docs/wlan-ack-frequency-accept/runs.jsonl's 3 MB was the two copies)."""

from __future__ import annotations

from results_fixtures import ARMS, POINTS, make_record

from ackwise.experiments.harness.runner import _fill_estimates


def test_the_estimate_is_kept_once_on_the_cwnd_clock() -> None:
    record = make_record(POINTS[0], ARMS[0], 0)
    samples = [{"t": 0.1 * i, "at": 100.0 + 0.1 * i, "cwnd": 10 + i, "unacked": 10 + i} for i in range(30)]
    tcp = {"h1": {"cwnd_samples": samples}}
    estimate = {"at": [100.5, 101.0, 102.0], "segments": [12.0, 18.0, 30.0]}
    report = {"agent": {"flows": {"10.0.0.1:40000 > :5001": {"estimate": estimate, "policy_state": {}}}}}
    _fill_estimates(record, [("h1", "r1", 5001)], tcp, [report], {"h1": "10.0.0.1", "r1": "10.0.1.1"})
    (series,) = record.series["cwnd_estimate"]
    assert series["flow"] == "h1->r1"
    assert series["t_s"] == [0.5, 1.0, 2.0] and series["estimate"] == [12.0, 18.0, 30.0]
    assert "estimate" not in report["agent"]["flows"]["10.0.0.1:40000 > :5001"]


def test_a_retried_connect_does_not_hide_the_flow_that_carried_the_data() -> None:
    """The agent keys a flow by the sender's port: a connect the sender retried leaves a second
    flow with no data (coherent run at bfaedbc, one-flow 4 Mbit/s, host tack, repeat 7: the
    estimate was read from that one, and the run had no cwnd_estimate_error). Listed first here,
    as it was there."""
    record = make_record(POINTS[0], ARMS[0], 0)
    samples = [{"t": 0.1 * i, "at": 100.0 + 0.1 * i, "cwnd": 10 + i, "unacked": 10 + i} for i in range(30)]
    tcp = {"h1": {"cwnd_samples": samples}}
    empty = {"at": [], "segments": []}
    estimate = {"at": [100.5, 101.0, 102.0], "segments": [12.0, 18.0, 30.0]}
    flows = {
        "10.0.0.1:39999 > :5001": {"estimate": empty, "policy_state": {}, "data_segments": 0},
        "10.0.0.1:40000 > :5001": {"estimate": estimate, "policy_state": {}, "data_segments": 700},
    }
    _fill_estimates(record, [("h1", "r1", 5001)], tcp, [{"agent": {"flows": flows}}], {"h1": "10.0.0.1"})
    (series,) = record.series["cwnd_estimate"]
    assert series["estimate"] == [12.0, 18.0, 30.0]
