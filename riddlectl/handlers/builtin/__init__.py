"""The built-in handlers: the text extractor, the calculator solver, the gatekeeper validator
and its independent recheck.
"""
