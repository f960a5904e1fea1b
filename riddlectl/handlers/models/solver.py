"""The `openai:MODEL` solver: the riddle put to a model, the typed answer read back.

The prompt carries the context, the question, the extractions, the answers of earlier
sub-questions and every solution rejected before with its review; the model answers in
the JSON schema of the riddle's answer type (`schema`). A model may split the question
instead: its sub-questions become sub-riddles (at most `max_sub_riddles`, nested at most
`max_sub_depth` deep, counted in the document's `split_depth`), whose answers come back
in the next prompt.
"""

from __future__ import annotations

from typing import Any

from riddlectl.errors import HandlerFailed
from riddlectl.handlers.base import Job
from riddlectl.handlers.models import prompts, schema
from riddlectl.handlers.models.client import ChatClient, check_budget
from riddlectl.settings import Settings

# A short text: the answer of a part is a value, not an essay (and small models ramble).
SUB_ANSWER = {"type": "fill", "kind": "text", "max_tokens": 16}


class ModelSolver:
    threaded = True  # waits on the network (see `pipeline.stages.call`)

    def __init__(self, model: str, settings: Settings) -> None:
        self.client = ChatClient(model, settings)
        self.who = self.client.who
        self.prompts = prompts.load(settings.openai_prompts)
        self.max_calls = settings.openai_max_calls
        self.max_sub = settings.max_sub_riddles
        self.max_depth = settings.max_sub_depth

    def current_version(self) -> str:
        return f"{self.client.model}@{self.client.base_url}"

    def __call__(self, job: Job) -> dict[str, Any]:
        riddle = job.riddle
        check_budget(riddle, self.max_calls, self.who)
        spec = schema.spec_of(riddle.riddle.answer)
        depth = split_depth(riddle.extensions().get("split_depth"))
        may_split = self.max_sub if depth < self.max_depth and not riddle.sub_results else 0
        text = prompts.fill(
            self.prompts.solve,
            riddle,
            {
                "data": prompts.data_lines(riddle, job.extractions),
                "answer_form": prompts.answer_form(spec),
                "rejected": prompts.rejected_lines(riddle),
                "sub_results": prompts.sub_result_lines(riddle),
                "split": prompts.split_line(may_split),
                "solution": "",
                "explanation": "",
            },
        )
        messages = _messages(self.prompts.solve_system, text, riddle)
        done = self.client.complete(messages, schema.solver_schema(spec, may_split), job.timeout)
        reply = done.reply
        if may_split and isinstance(reply, dict) and "sub_questions" in reply:
            subs = self._subs(job, reply["sub_questions"], depth, done.usage)
            return {"sub_riddles": subs, "usage": done.usage}
        try:
            solution = schema.solution_of(spec, reply["answer"])
        except (KeyError, TypeError, ValueError) as exc:
            raise HandlerFailed(
                f"{self.who}: the reply does not fit the answer's schema: {exc}", usage=done.usage
            ) from None
        explanation = reply.get("explanation")
        return {
            "solution": solution,
            "explanation": str(explanation)[: schema.MAX_EXPLANATION] if explanation else "",
            "usage": done.usage,
        }

    def _subs(
        self, job: Job, questions: Any, depth: int, usage: dict[str, Any]
    ) -> list[dict[str, Any]]:
        if not isinstance(questions, list) or not questions or len(questions) > self.max_sub:
            raise HandlerFailed(
                f"{self.who}: expected 1 to {self.max_sub} sub-questions", usage=usage
            )
        riddle = job.riddle
        data = [item.model_dump(mode="json") for item in riddle.data]
        return [
            {
                "riddle": {
                    "context": riddle.riddle.context,
                    "question": str(question),
                    "answer": SUB_ANSWER,
                },
                "data": data,
                "split_depth": depth + 1,
            }
            for question in questions
        ]


def split_depth(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _messages(system: Any, text: str, riddle: Any) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": text}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": prompts.fill(system, riddle, {})})
    return messages
