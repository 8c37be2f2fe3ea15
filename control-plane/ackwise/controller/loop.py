"""The controller loop: every interval, read each switch, decide per flow, write what changed.

A thin I/O shell around ``decision.decide``. Per switch and interval:

1. ``time_elapsed_us``: if it went back, the switch restarted and every rule written is gone.
2. The per-flow tables ``ack_thinning.flow_policy`` and, for IPv6 flows, ``flow_policy6`` (exact
   entries, looked up before the operator's ternary rules in ``ack_thinning.policy`` and
   ``policy6``, which are read too): each rule the
   controller wrote must still be there, under its handle, with its match and parameters; rules
   lost that way (a restart the uptime did not show, a program reload, an operator's ``policy del
   --flow``) are re-applied. On first contact, per-flow rules of flows the configuration manages
   are adopted: a previous controller left them. A dump of thousands of entries takes hundreds of
   milliseconds in bmv2 (about 95 us per entry here), so every interval reads only the entry
   count, and dumps when it is not what the controller's own writes left, and at least every
   ``RULES_FULL_CHECK_S`` (a rule changed in place, or deleted and another added, keeps the
   count).
3. The flow records (``read_flows``: one Thrift call per register array; each half-flow records
   the port its segments leave by), per port the ACKs leave by its queue backlog and ECN marks, and
   per port with a rate the packets its queue sent (the share of the interval the data's
   bottleneck was busy).
4. For every ACK stream a configuration rule manages: a sample, a decision.
5. Writes: a changed decision modifies the flow's rule in place (no moment without one), a new flow
   gets a rule (an exact entry: both addresses and ports, which outranks any ternary rule); the
   rule of a flow that closed, whose record is gone, or that sent no new data for
   ``forget_after_s``, is deleted. One JSON line per change on the log.

Safe by construction:

- A flow no configuration rule manages is never touched: its records are read, but the controller
  writes only per-flow rules of managed ACK streams and deletes only rules it wrote or adopted; the
  operator's ternary rules are never written.
- A switch that restarts, or loses the controller's rules, gets the current decisions again; rules
  of flows not seen since are kept for ``forget_after_s``, so that flows that survive the restart
  find their rule.
- If the controller dies, the switch keeps its last rules: each flow keeps the policy last
  written, which runs under the switch's safety contract like any other. Rules of flows that end
  meanwhile stay until a controller runs again (it adopts, then removes them) or the operator
  deletes them (``ackwise policy list``, ``ackwise policy del --flow``); ``ackwise controller run
  --remove-rules-on-exit`` removes them when the controller exits cleanly.
- At most ``max_rules_per_switch`` rules, of both IP versions: ack_thinning.flow_policy (and
  flow_policy6) holds 8192 entries in ack_switch.p4 (FLOW_POLICY_TABLE_SIZE). Flows beyond the
  budget keep the operator's rules.

The switch must track a flow for the controller to see it: a flow whose ACKs fall under ``off``
has no record. Give the managed prefixes a tracking rule (e.g. ``ackwise policy set
src=10.0.2.0/24 every_d d=1``) and let the controller refine it per flow.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ackwise.bmv2.client import (
    DEFAULT_THRIFT_PORT,
    SwitchClient,
    SwitchError,
    SwitchOperationError,
    SwitchUnreachable,
)
from ackwise.controller.config import ControllerConfig, policy_for
from ackwise.controller.decision import AckStream, Decision, FlowState, decide, sample_from
from ackwise.controller.ports import busy_share, ecn_marks, port_loads, queue_backlog_pkts
from ackwise.errors import BadOption
from ackwise.features.thinning import (
    PolicyRule,
    count_flow_policies,
    delete_flow_policy,
    list_flow_policies,
    list_policies,
    modify_flow_policy,
    read_flows,
    set_flow_policy,
)
from ackwise.twins.policies import PolicyMatch, PolicyParams

Log = Callable[[dict[str, Any]], None]
PortRead = Callable[[SwitchClient, int], int | None]
PortLoads = Callable[[SwitchClient], dict[int, tuple[int, int]]]


class Stop(Protocol):
    """What ends ``Controller.run`` between two steps: a threading.Event, or
    processes.StopRequest (set from a signal handler)."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float, /) -> bool: ...


@dataclass(frozen=True)
class SwitchEndpoint:
    host: str = "localhost"
    thrift_port: int = DEFAULT_THRIFT_PORT

    @classmethod
    def parse(cls, text: str) -> SwitchEndpoint:
        """``host:port``, ``port`` or ``host``."""
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = ("localhost", text) if text.isdigit() else (text, str(DEFAULT_THRIFT_PORT))
        if not port.isdigit() or not 0 < int(port) < 65536 or not host.isprintable():
            raise BadOption(f"--switch {text}: write HOST:PORT with a port 1..65535, e.g. localhost:9090")
        return cls(host or "localhost", int(port))

    def connect(self) -> SwitchClient:
        return SwitchClient(self.host, self.thrift_port).connect()

    def __str__(self) -> str:
        return f"{self.host}:{self.thrift_port}"


@dataclass(frozen=True)
class Installed:
    """A rule the controller wrote (or adopted) on a switch: its handle in the per-flow table of the
    flow's IP version (the stream's)."""

    handle: int
    params: PolicyParams


@dataclass
class SwitchView:
    """What the controller knows about one switch."""

    endpoint: SwitchEndpoint
    client: SwitchClient | None = None
    uptime_us: int | None = None
    first_contact: bool = True
    streams: dict[AckStream, FlowState] = field(default_factory=dict)
    installed: dict[AckStream, Installed] = field(default_factory=dict)
    lost: set[AckStream] = field(default_factory=set)  # rules to re-apply
    dormant: dict[AckStream, int] = field(default_factory=dict)  # forgotten: data_segments then
    grace_until_s: float | None = None  # after a restart: unseen flows keep their rules until then
    budget_full: bool = False
    last_error: str | None = None  # logged once while it repeats
    loads: dict[int, tuple[int, int]] = field(default_factory=dict)  # port_loads() at loads_at_us
    loads_at_us: int | None = None
    rules_expected: int | None = None  # per-flow entries the switch should hold: last dump + our writes
    rules_checked_at_s: float | None = None  # when the per-flow table was last dumped


# The longest the controller goes without dumping the per-flow table while its entry count stays
# as expected: what a count cannot show (a rule modified in place by someone else, or one deleted
# and another added) is caught within this time.
RULES_FULL_CHECK_S = 1.0


def exact_stream(match: PolicyMatch) -> AckStream | None:
    """The ACK stream of an exact per-flow rule; None for any rule with a wildcard."""
    if (
        not match.exact
        or match.src is None
        or match.dst is None
        or match.sport is None
        or match.dport is None
    ):
        return None
    return AckStream(
        int(match.src.network_address),
        match.sport,
        int(match.dst.network_address),
        match.dport,
        match.src.version,
    )


def _new(decision: Decision) -> dict[str, Any]:
    return {"new": decision.params.describe(), "kind": decision.kind.value, "reason": decision.reason}


def print_json_line(line: dict[str, Any]) -> None:
    print(json.dumps(line, default=str), file=sys.stdout, flush=True)


class Controller:
    """Tunes the ACK policy of each managed flow on ``switches``, every ``config.interval_ms``.

    ``connect`` opens a client for an endpoint; tests pass an in-memory fake. ``clock`` is
    monotonic seconds (intervals, decisions), ``wall`` the time stamped on log lines."""

    def __init__(
        self,
        switches: Sequence[SwitchEndpoint],
        config: ControllerConfig,
        *,
        connect: Callable[[SwitchEndpoint], SwitchClient] = SwitchEndpoint.connect,
        log: Log = print_json_line,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        backlog: PortRead = queue_backlog_pkts,
        marks: PortRead = ecn_marks,
        loads: PortLoads = port_loads,
    ) -> None:
        if not switches:
            raise ValueError("no switch to control: give at least one --switch HOST:PORT")
        self.config = config
        self.views = [SwitchView(endpoint) for endpoint in switches]
        self._connect = connect
        self._log = log
        self._clock = clock
        self._wall = wall
        self._sleep = sleep
        self._backlog = backlog
        self._marks = marks
        self._loads = loads

    # ---- running ----

    def connect_all(self) -> None:
        """Connect to every switch now; SwitchUnreachable names the first that does not answer."""
        for view in self.views:
            self._client(view)

    def run(self, intervals: int | None = None, stop: Stop | None = None) -> int:
        """Step every interval until ``intervals`` are done or ``stop`` is set (checked between
        steps: a step is never cut short); returns the count.
        An interval that overruns is logged and the next starts at once (no catching up)."""
        period_s = self.config.interval_ms / 1000
        deadline = self._clock()
        done = 0
        while (intervals is None or done < intervals) and not (stop is not None and stop.is_set()):
            started = self._clock()
            self.step()
            done += 1
            deadline += period_s
            wait_s = deadline - self._clock()
            if wait_s < 0:
                took_ms = (self._clock() - started) * 1000
                self._event(None, "overrun", took_ms=round(took_ms, 1), interval_ms=self.config.interval_ms)
                deadline = self._clock()
            elif intervals is None or done < intervals:
                if stop is not None:
                    stop.wait(wait_s)
                else:
                    self._sleep(wait_s)
        return done

    def step(self) -> None:
        """One interval over every switch. A switch that fails is logged and retried next time;
        the others go on."""
        for view in self.views:
            try:
                self._step_switch(view)
            except SwitchError as exc:
                if str(exc) != view.last_error:  # once, not every interval while it lasts
                    self._event(view, "error", error=str(exc))
                view.last_error = str(exc)
                if isinstance(exc, SwitchUnreachable):
                    self._drop_client(view)
            else:
                if view.last_error is not None:
                    self._event(view, "recovered", error=view.last_error)
                view.last_error = None

    def log_event(self, event: str, **fields: Any) -> None:
        """A line on the controller's log that concerns no one switch (start, stop)."""
        self._event(None, event, **fields)

    def release(self) -> None:
        """Delete every rule the controller holds (for a clean exit that leaves no rules), over a
        new connection to each switch: a call cut short (a second Ctrl-C) leaves the old one out of
        step, and a delete sent on it may be lost while it reads as done."""
        for view in self.views:
            if not view.installed:
                continue
            self._drop_client(view)
            try:
                self._client(view)
                for stream in list(view.installed):
                    self._remove(view, stream, "controller exiting: its rules removed on request")
            except SwitchError as exc:  # the others are still cleaned up
                self._event(view, "error", error=f"{exc}; its remaining rules stay on the switch")

    def close(self) -> None:
        for view in self.views:
            self._drop_client(view)

    # ---- one switch ----

    def _client(self, view: SwitchView) -> SwitchClient:
        if view.client is None:
            view.client = self._connect(view.endpoint)
            self._event(view, "connected")
        return view.client

    def _drop_client(self, view: SwitchView) -> None:
        if view.client is not None:
            try:
                view.client.close()
            finally:
                view.client = None

    def _step_switch(self, view: SwitchView) -> None:
        client = self._client(view)
        uptime_us = client.time_elapsed_us()
        if view.uptime_us is not None and uptime_us < view.uptime_us:
            self._rules_gone(view, "switch restarted: its uptime went back")
        view.uptime_us = uptime_us
        operators, default = list_policies(client)
        checked_at = self._clock()
        count = count_flow_policies(client)
        if (
            view.first_contact
            or count != view.rules_expected
            or view.rules_checked_at_s is None
            or checked_at - view.rules_checked_at_s >= RULES_FULL_CHECK_S
        ):
            rules = list_flow_policies(client)
            self._check_rules(view, rules)
            view.rules_expected, view.rules_checked_at_s = len(rules), checked_at
        records = read_flows(client)
        now = self._clock()
        # How busy each port with a rate was since the last interval: the data's bottleneck.
        loads = self._loads(client)
        elapsed_us = uptime_us - view.loads_at_us if view.loads_at_us is not None else 0
        busy = {port: busy_share(view.loads.get(port), load, elapsed_us) for port, load in loads.items()}
        view.loads, view.loads_at_us = loads, uptime_us
        ports: dict[int | None, tuple[int | None, int | None]] = {None: (None, None)}

        def port_state(port: int | None) -> tuple[int | None, int | None]:
            if port not in ports:
                assert port is not None
                ports[port] = (self._backlog(client, port), self._marks(client, port))
            return ports[port]

        seen: set[AckStream] = set()
        present: set[AckStream] = set()
        closed: set[AckStream] = set()
        for record in records:
            for direction, half in enumerate(record.halves):
                stream = AckStream.of(record.key, direction)
                present.add(stream)
                rule = self.config.managed(stream)
                if rule is None:
                    continue  # never touched
                if record.closed:
                    closed.add(stream)
                    continue
                if half.data_segments == 0:
                    continue  # no data this way: no ACK stream to tune
                if stream in view.dormant:
                    if view.dormant[stream] == half.data_segments:
                        continue  # forgotten while idle, still idle
                    del view.dormant[stream]
                # The ports the switch saw this flow's ACKs and data leave by.
                acks = record.halves[1 - direction]
                backlog, marks = port_state(acks.egress_port)
                data_busy = busy.get(half.egress_port) if half.egress_port is not None else None
                sample = sample_from(record, half, now, backlog, marks, data_busy)
                state, _ = decide(view.streams.get(stream, FlowState()), sample, rule.decision)
                view.streams[stream] = state
                seen.add(stream)

        for stream in closed:
            self._remove(view, stream, "flow closed (FIN or RST)")
        in_grace = view.grace_until_s is not None and now < view.grace_until_s
        for stream, state in list(view.streams.items()):
            if stream in seen:
                idle_s = now - (state.last_progress_s if state.last_progress_s is not None else now)
                if idle_s >= self.config.forget_after_s:
                    view.dormant[stream] = state.prev.data_segments if state.prev else 0
                    self._remove(view, stream, f"no new data for {idle_s:.0f} s")
            elif not in_grace:
                self._remove(view, stream, "flow record gone (reclaimed, or the switch restarted)")
        for stream in list(view.installed):
            if stream not in view.streams and not in_grace:
                self._remove(view, stream, "adopted rule of a flow that is not active")
        for stream in list(view.dormant):
            if stream not in present:
                del view.dormant[stream]

        view.lost.intersection_update(view.streams)
        for stream, state in view.streams.items():
            self._write(view, client, stream, state, policy_for(stream, operators, default))
        if view.budget_full and len(view.installed) < self.config.max_rules_per_switch:
            view.budget_full = False

    def _rules_gone(self, view: SwitchView, why: str) -> None:
        self._event(view, "restart", reason=why, rules=len(view.installed))
        view.lost.update(view.installed)
        view.installed.clear()
        view.grace_until_s = self._clock() + self.config.forget_after_s

    def _check_rules(self, view: SwitchView, rules: list[PolicyRule]) -> None:
        if view.first_contact:
            view.first_contact = False
            for rule in rules:
                stream = exact_stream(rule.match)
                if stream is None or stream in view.installed or self.config.managed(stream) is None:
                    continue
                view.installed[stream] = Installed(rule.handle, rule.params)
                self._event(view, "adopt", stream, new=rule.params.describe(), handle=rule.handle)
            return
        # Each IP version's table has handles of its own.
        by_handle = {(rule.version, rule.handle): rule for rule in rules}
        lost, changed = [], []
        for stream, installed in view.installed.items():
            rule = by_handle.get((stream.version, installed.handle))
            if rule is None or rule.match != stream.match():
                lost.append(stream)
            elif rule.params.action() != installed.params.action():
                changed.append((stream, rule))
        if lost and len(lost) == len(view.installed):
            self._rules_gone(view, "the policy table lost every rule of the controller")
            return
        for stream in lost:
            del view.installed[stream]
            view.lost.add(stream)
            self._event(view, "lost", stream, reason="rule missing on the switch")
        for stream, rule in changed:
            # Still there under its handle: record what the switch has, so that this interval's
            # write modifies it back in place (adding it again would be a duplicate entry).
            view.installed[stream] = Installed(rule.handle, rule.params)
            self._event(
                view, "lost", stream, reason=f"rule changed on the switch to {rule.params.describe()}"
            )

    def _write(
        self,
        view: SwitchView,
        client: SwitchClient,
        stream: AckStream,
        state: FlowState,
        baseline: PolicyParams,
    ) -> None:
        """Bring the switch to the flow's decision. A flow without a rule of ours whose decision is
        what the operator's rules give it anyway gets none: most new flows start at every_d d=1,
        the usual tracking rule, and an entry less is a write less."""
        want = state.decision
        if want is None:
            return
        have = view.installed.get(stream)
        if have is not None and have.params.action() == want.params.action():
            return
        if have is None and baseline.action() == want.params.action():
            return
        try:
            if have is not None:
                modify_flow_policy(client, have.handle, want.params, stream.version)
                view.installed[stream] = Installed(have.handle, want.params)
                self._event(view, "change", stream, old=have.params.describe(), **_new(want))
                return
            if len(view.installed) >= self.config.max_rules_per_switch:
                if not view.budget_full:
                    view.budget_full = True
                    self._event(
                        view,
                        "budget",
                        stream,
                        reason=f"{len(view.installed)} rules, max_rules_per_switch reached: new flows "
                        "keep the operator's rules until others end (raise it, up to the table's size)",
                    )
                return
            handle = set_flow_policy(client, stream.match(), want.params)
        except SwitchOperationError as exc:
            self._event(view, "error", stream, error=str(exc))
            return
        view.installed[stream] = Installed(handle, want.params)
        if view.rules_expected is not None:
            view.rules_expected += 1
        event = "reapply" if stream in view.lost else "set"
        view.lost.discard(stream)
        self._event(view, event, stream, old=None, handle=handle, **_new(want))

    def _remove(self, view: SwitchView, stream: AckStream, why: str) -> None:
        view.streams.pop(stream, None)
        view.lost.discard(stream)
        installed = view.installed.pop(stream, None)
        if installed is None or view.client is None:
            return
        try:
            delete_flow_policy(view.client, installed.handle, stream.version)
        except SwitchOperationError as exc:
            self._event(view, "error", stream, error=str(exc))
            return
        if view.rules_expected is not None:
            view.rules_expected -= 1
        self._event(view, "remove", stream, old=installed.params.describe(), new=None, reason=why)

    def _event(
        self, view: SwitchView | None, event: str, stream: AckStream | None = None, **fields: Any
    ) -> None:
        line: dict[str, Any] = {"t": round(self._wall(), 3), "event": event}
        if view is not None:
            line["switch"] = str(view.endpoint)
        if stream is not None:
            line["flow"] = str(stream)
            line["acks"] = str(stream.match())
        line.update(fields)
        self._log(line)


def parse_switches(texts: Sequence[str]) -> list[SwitchEndpoint]:
    return [SwitchEndpoint.parse(t) for t in texts]
