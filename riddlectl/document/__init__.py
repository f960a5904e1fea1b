"""The riddle document: its models, parsing and the first request format, ids, typed answers,
exact numbers, the events of its history, and the data files it names (resolved inside
the data directory, read bounded). Imports nothing else of riddlectl but errors.
"""
