"""How long a bounded computation may take in a test before it counts as unbounded.

Tests that work is refused or bounded (`9**9**9**9`, chains past the recursion limit,
a ten-hour recording's header) check that it ends, not how fast: speed is measured by
`riddlectl bench`. Work that was not bounded would run for minutes or for ever; ten
seconds tells the two apart even on a loaded machine.
"""

UNBOUNDED = 10.0
