"""Arithmetic questions, read exactly and within bounds: reads no data file itself.

`questions` is the vocabulary both readers of a question share (word operators,
phrasings, bounds, errors); `parser` turns a question into a tree and computes it with
fractions; `recheck` computes it a second, independent way, for the gatekeeper.
"""
