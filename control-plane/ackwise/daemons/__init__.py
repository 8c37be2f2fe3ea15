"""Agents on a switch's CPU port: the AP proxy's repair agent and the hold-back agent."""
