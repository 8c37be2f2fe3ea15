from ackwise.cli import run

run()
