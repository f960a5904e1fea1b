"""Handlers: naming and calling them, external commands (`cmd:`), and the built-ins in
`builtin/`.
"""
