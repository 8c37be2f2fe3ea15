"""Pure Python twins of the P4 programs: the generated constants and names (p4names), the flow key,
the safety contract, serial arithmetic, packet parsing and the ACK policies' parameters. No I/O."""
