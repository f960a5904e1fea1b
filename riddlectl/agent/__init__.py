"""Agents: the worker loop that claims, handles and commits, and the supervision behind `run`
and `agent`.
"""
