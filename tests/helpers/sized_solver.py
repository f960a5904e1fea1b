"""A solver whose answers are as large as the test asks (a `cmd:` handler).

`explanation N`: answers 1, with an explanation of N bytes.
`children K N`: a parent asks K sub-riddles; each child answers a solution of N bytes;
the parent, once resumed with their results, answers `ok`.
`child-question N`: a parent asks one sub-riddle whose question is N bytes long.
"""

import json
import sys

doc = json.load(sys.stdin)
mode, numbers = sys.argv[1], [int(n) for n in sys.argv[2:]]
child = doc.get("parent_id") is not None
if mode == "explanation":
    answer = {"solution": "1", "explanation": "e" * numbers[0]}
elif mode == "children" and child:
    answer = {"solution": "s" * numbers[1]}
elif mode == "children" and doc.get("sub_results"):
    answer = {"solution": "ok"}
elif mode == "children":
    answer = {"sub_riddles": [{"riddle": {"question": f"part {k}"}} for k in range(numbers[0])]}
elif mode == "child-question" and not child:
    answer = {"sub_riddles": [{"riddle": {"question": "q" * numbers[0]}}]}
else:
    answer = {"solution": "1"}
json.dump(answer, sys.stdout)
