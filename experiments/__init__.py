"""The experiments: the comparison harness (harness/), traffic and measurement (measure/), and
data-plane stress tests (stress/); the scenarios are data in scenarios/."""
