"""The comparison harness (`ackwise experiment`): scenarios, the runner, results directories,
statistics, the paired comparison, reports and figures."""
