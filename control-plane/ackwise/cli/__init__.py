"""The ``ackwise`` command: the top layer, above everything it drives (the bmv2 runtime, the
features, the test bed and the experiments). Nothing below imports from here.

Commands that need Mininet (``topo``, ``demo``, ``experiment``) import the test bed when they run,
so that switch commands start fast and work where Mininet is not importable.
"""

from ackwise.cli.app import main, run

__all__ = ["main", "run"]
