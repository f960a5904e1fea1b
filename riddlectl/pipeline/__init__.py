"""What happens to a claimed riddle: the stage functions, the ledger that turns outcomes into
commits, parents and sub-riddles, retry policy.
"""
