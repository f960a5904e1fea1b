"""What happens to a claimed riddle: what each stage does (`stages`), one attempt of a
stage on claimed riddles with its retries (`attempts`, `retry`), parents and their
sub-riddles (`parents`), and the ledger that makes every outcome one commit (`ledger`).
"""
