"""Handlers: what one is (`base`), naming them (`registry`), external commands (`cmd:`), and
the built-ins in `builtin/`.
"""
