"""Handlers that put riddles to language models (`openai:MODEL`), on any endpoint that
speaks OpenAI's chat completions: `client` makes the call, `prompts` writes what is asked,
`schema` derives the reply's JSON schema from the answer type, `solver` and `validator`
are the two handlers. See docs/models.md.
"""

from __future__ import annotations

from riddlectl.errors import ConfigError
from riddlectl.handlers.base import HandlerFn
from riddlectl.settings import Settings


def model_handler(model: str, stage: str, settings: Settings) -> HandlerFn:
    """The `openai:MODEL` handler for `stage` (solve or validate)."""
    if stage == "solve":
        from riddlectl.handlers.models.solver import ModelSolver

        return ModelSolver(model, settings)
    if stage == "validate":
        from riddlectl.handlers.models.validator import ModelValidator

        return ModelValidator(model, settings)
    raise ConfigError(
        f"openai: handlers solve and validate, not {stage} (extract with http: or cmd:)",
        where=f"openai:{model}",
    )
