"""The agent on a Mininet host: start it (or apply a kernel baseline), stop it, collect what it did,
and tell whether it died on the way."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ackwise.hosts.kernel import set_quickack
from ackwise.hosts.policies import KERNEL_BASELINES, POLICIES, make_policy
from ackwise.processes import stop_process


class HostAgent:
    def __init__(
        self,
        host: Any,
        policy: str,
        params: dict[str, str] | None = None,
        ports: tuple[int, ...] = (5001,),
        queue_base: int = 10,
    ) -> None:
        self.host, self.policy, self.params, self.ports = host, policy, dict(params or {}), ports
        self.queue_base = queue_base
        if policy not in KERNEL_BASELINES:
            make_policy(policy, self.params)  # bad parameters fail here, not on the host
        self.proc: subprocess.Popen[str] | None = None
        self.stats_path = Path(tempfile.mkstemp(prefix=f"ackwise-agent-{host.name}-", suffix=".json")[1])
        self.died = False

    def start(self) -> HostAgent:
        if self.policy == "quickack":
            set_quickack(True, run=self.host.cmd)
        elif self.policy != "delayed":
            cmd = [
                sys.executable,
                "-m",
                "ackwise.hosts.agent",
                "--policy",
                self.policy,
                "--queue-base",
                str(self.queue_base),
                "--stats",
                str(self.stats_path),
            ]
            if POLICIES[self.policy].quickack:
                cmd.append("--quickack")  # one kernel ACK per segment: the policy sets the rate
            for port in self.ports:
                cmd += ["--port", str(port)]
            for key, value in self.params.items():
                cmd += ["--param", f"{key}={value}"]
            self.proc = self.host.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            if line.strip() != "ready":
                err = self.proc.stderr.read() if self.proc.stderr else ""
                self.proc.kill()
                raise RuntimeError(f"agent on {self.host.name} did not start: {err.strip() or line.strip()}")
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Kill the agent hard (SIGKILL): what a crash looks like."""
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> dict[str, Any]:
        """Stop the agent; the record says whether it was already dead."""
        report: dict[str, Any] = {"policy": self.policy, "params": self.params}
        if self.proc is not None:
            self.died = self.proc.poll() is not None
            stop_process(self.proc, timeout_s=10)
            report["agent_died"] = self.died
            if self.stats_path.exists() and self.stats_path.stat().st_size:
                report["agent"] = json.loads(self.stats_path.read_text())
        self.stats_path.unlink(missing_ok=True)
        return report
