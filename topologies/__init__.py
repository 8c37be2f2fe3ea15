"""The Mininet test bed: bmv2 switches, link emulation (wired and 802.11 airtime), topologies."""
