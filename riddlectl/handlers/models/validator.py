"""The `openai:MODEL` validator: a model checks the solution and answers
`{"review", "accept"}`, in that order, so that it says what it found before it judges."""

from __future__ import annotations

from typing import Any

from riddlectl.errors import HandlerFailed
from riddlectl.handlers.base import Job
from riddlectl.handlers.models import prompts, schema
from riddlectl.handlers.models.client import ChatClient, check_budget
from riddlectl.settings import Settings


class ModelValidator:
    threaded = True  # waits on the network (see `pipeline.stages.call`)

    def __init__(self, model: str, settings: Settings) -> None:
        self.client = ChatClient(model, settings)
        self.who = self.client.who
        self.prompts = prompts.load(settings.openai_prompts)
        self.max_calls = settings.openai_max_calls

    def current_version(self) -> str:
        return f"{self.client.model}@{self.client.base_url}"

    def __call__(self, job: Job) -> dict[str, Any]:
        riddle = job.riddle
        check_budget(riddle, self.max_calls, self.who)
        solution = riddle.solution
        spec = schema.spec_of(riddle.riddle.answer)
        text = prompts.fill(
            self.prompts.validate,
            riddle,
            {
                "data": prompts.data_lines(riddle, job.extractions),
                "answer_form": prompts.answer_form(spec),
                "rejected": prompts.rejected_lines(riddle),
                "sub_results": prompts.sub_result_lines(riddle),
                "split": "",
                "solution": solution.solution if solution else "(none)",
                "explanation": (solution.explanation if solution else "") or "(none)",
            },
        )
        messages = [{"role": "user", "content": text}]
        if self.prompts.validate_system is not None:
            system = prompts.fill(self.prompts.validate_system, riddle, {})
            messages.insert(0, {"role": "system", "content": system})
        done = self.client.complete(messages, schema.validator_schema(), job.timeout)
        verdict = done.reply
        if not (
            isinstance(verdict, dict)
            and isinstance(verdict.get("accept"), bool)
            and isinstance(verdict.get("review"), str)
        ):
            raise HandlerFailed(
                f"{self.who}: the reply does not fit {{review, accept}}", usage=done.usage
            )
        review = verdict["review"][: schema.MAX_REVIEW] or f"judged by {self.who}"
        return {"accept": verdict["accept"], "review": review, "usage": done.usage}
