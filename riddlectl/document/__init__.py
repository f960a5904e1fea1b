"""The riddle document: its models, parsing and the first request format, ids, typed answers,
exact numbers, the events of its history. Imports nothing else of riddlectl but errors.
"""
