"""A solver that answers wrong first, and right once it sees a rejected solution."""

import json
import sys

doc = json.load(sys.stdin)
rejected = doc["riddle"].get("solutions_before") or []
answer = "150" if rejected else "149"
json.dump(
    {"solution": answer, "explanation": f"guess after {len(rejected)} rejections", "used_data": []},
    sys.stdout,
)
