"""`riddlectl bench --extractors`: generated data files with their truth, read by the
built-in extractors in-process, scored per extractor (`runner`).

Each data type has a generator module with `generate(directory, count, seed)` returning
`cases.Case`s; `runner.GENERATORS` names them and imports each only when it runs.
"""
