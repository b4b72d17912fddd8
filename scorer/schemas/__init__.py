"""The JSON contract: a JSON Schema for each command's `--json` output (in the envelope of
`scorer.envelope`) ships beside this module (`scorer schema COMMAND` prints one).

The schemas are built here, from the same vocabularies the code uses (`Failure`, `Code`,
`Status`, the leaderboard's `Phase` and verdicts), and written to the package's `*.json` files;
a test keeps the files equal to what `build` returns, so the shipped schema can never drift
from the code. Describing every command's output, this package sits above them all."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from scorer.competition import EmptyUsers
from scorer.envelope import SCHEMA_VERSION, Status
from scorer.errors import Code, Failure
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.schema import Status as Verdict

#: The commands with `--json`, as a user types them after `scorer`.
COMMANDS = ("score", "validate", "prepare", "leaderboard score", "leaderboard show")


def schema(command: str) -> dict[str, Any]:
    """The shipped JSON Schema of a command's output (`COMMANDS`)."""
    if command not in COMMANDS:
        raise ValueError(f"unknown command {command!r}; expected one of {', '.join(COMMANDS)}")
    text = resources.files(__package__).joinpath(file_name(command)).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def file_name(command: str) -> str:
    return command.replace(" ", "-") + ".json"


# Building the schemas (tests/contract/test_json_contract.py writes and checks the files).

NUMBER = {"type": "number"}
COUNT = {"type": "integer", "minimum": 0}
TEXT = {"type": "string"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


ISSUE = _object(
    {
        "code": {"enum": [str(code) for code in Code]},
        "line": _nullable({"type": "integer", "minimum": 1}),
        "user": _nullable(TEXT),
        "column": _nullable(TEXT),
        "value": _nullable(TEXT),
        "message": TEXT,
    }
)

PROBLEM = _object(
    {
        "code": {"enum": [str(code) for code in Code]},
        "count": {"type": "integer", "minimum": 1},
        "examples": {"type": "array", "items": {"$ref": "#/$defs/issue"}},
        "hint": _nullable(TEXT),
    },
    required=["code", "count", "examples"],
)

ERROR = _object(
    {
        "code": {"enum": [str(failure) for failure in Failure]},
        "message": TEXT,
        "role": _nullable({"enum": ["submission", "solution", "targets", "manifest"]}),
        "file": _nullable(TEXT),
        "total": COUNT,
        "problems": {"type": "array", "items": {"$ref": "#/$defs/problem"}},
    }
)

SPLIT_METRICS = {
    "type": "object",
    "properties": {"users": COUNT},
    "required": ["users"],
    "additionalProperties": NUMBER,
}

SCORED = {
    "metric": TEXT,
    "k": {"type": "integer", "minimum": 1},
    "overall": _nullable(NUMBER),
    "public": _nullable(NUMBER),
    "private": _nullable(NUMBER),
    "users": _object({"overall": COUNT, "public": COUNT, "private": COUNT, "ignored": COUNT}),
    # null for a split the solution lacks, or one that scored no user: no mean, never 0
    "metrics": {"type": "object", "additionalProperties": _nullable(SPLIT_METRICS)},
    "no_lost": {"enum": [str(rule) for rule in EmptyUsers]},
    "parts": {"type": "integer", "minimum": 1},
}

VALID = {"file": TEXT, "rows": COUNT}

FLAG = {"type": "boolean"}

PREPARED = {
    "file": TEXT,  # the prepared file written, as given
    "source": TEXT,  # the solution's resolved path
    "source_bytes": COUNT,
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "users": COUNT,
    "pairs": COUNT,
    "has_split": FLAG,
    "graded": FLAG,
    "bytes": COUNT,  # the prepared file's size
    "seconds": NUMBER,
}

OUTCOME = _object(
    {
        "team": TEXT,
        "path": TEXT,
        "status": {"enum": [str(verdict) for verdict in Verdict]},
        "cached": {"type": "boolean"},
        "public": _nullable(NUMBER),
    }
)

BATCH = {
    # organiser: every submission and report; public: each team's entries and best score.
    "audience": {"enum": ["organiser", "public"]},
    # scored + cached + rejected + failed + pending = total
    "total": COUNT,
    "scored": COUNT,
    "cached": COUNT,
    "rejected": COUNT,
    "failed": COUNT,
    "pending": COUNT,
    "removed": COUNT,
    "submissions": {"type": "array", "items": OUTCOME},
    "failures": {
        "type": "array",
        "items": {
            "allOf": [OUTCOME, _object({"error": _nullable({"$ref": "#/$defs/error"})})],
        },
    },
    "teams": {
        "type": "array",
        "items": _object({"team": TEXT, "entries": COUNT, "best_public": _nullable(NUMBER)}),
    },
}

ROW = _object(
    {
        "rank": {"type": "integer", "minimum": 1},
        "team": TEXT,
        "score": NUMBER,
        "low": _nullable(NUMBER),
        "high": _nullable(NUMBER),
        "p_next": _nullable(NUMBER),
        "p_adjusted": _nullable(NUMBER),
        "tier": {"type": "integer", "minimum": 1},
        "submission": TEXT,
        "submitted_at": _nullable(TEXT),
        "entries": COUNT,
        # The private board only, in the final phase:
        "public_rank": _nullable({"type": "integer", "minimum": 1}),
        "shake": _nullable({"type": "integer"}),
        "pick": TEXT,
    },
    # `submission` (the file's path) is in the final phase's rows only.
    required=["rank", "team", "score", "tier", "entries"],
)

BOARD = _object({"users": COUNT, "rows": {"type": "array", "items": ROW}})

STALE = _object(
    {
        "reasons": {"type": "array", "items": TEXT},
        "started_at": TEXT,
        "judged": COUNT,
        "total": COUNT,
    }
)

PLACE = {"type": "integer", "minimum": 1}

FORECAST = _object(
    {
        "level": NUMBER,
        "method": TEXT,
        "resamples": COUNT,
        "seed": {"type": "integer"},
        "groups": COUNT,
        "public_users": COUNT,
        "private_users": COUNT,
        # After the reveal only: how many teams got a private rank inside their interval.
        "covered": _nullable(COUNT),
        "rows": {
            "type": "array",
            "items": _object(
                {
                    "team": TEXT,
                    "public_rank": PLACE,
                    "rank_low": PLACE,
                    "rank_high": PLACE,
                    "rank_median": PLACE,
                    "score_low": _nullable(NUMBER),
                    "score_high": _nullable(NUMBER),
                    "private_rank": PLACE,
                    "inside": {"type": "boolean"},
                },
                required=["team", "public_rank", "rank_low", "rank_high", "rank_median"],
            ),
        },
    }
)

BOARDS = {
    "phase": {"enum": [str(phase) for phase in Phase]},
    "competition": TEXT,
    "metric": TEXT,
    "as_of": _nullable(TEXT),
    "stale": _nullable(STALE),
    "confidence": {"type": "object"},
    "public": BOARD,
    "private": BOARD,
    "unranked": {
        "type": "array",
        "items": _object(
            {"team": TEXT, "rejected": COUNT, "failed": COUNT, "unscored": COUNT},
            required=["team", "rejected", "failed"],
        ),
    },
    # With --forecast only.
    "forecast": FORECAST,
}

#: Rules a success holds beyond its keys, by command.
RULES: dict[str, dict[str, Any]] = {
    # The organiser's record holds every submission; the public summary, teams only.
    "leaderboard score": {
        "if": {"properties": {"audience": {"const": "public"}}},
        "then": {
            "required": ["teams"],
            "not": {"anyOf": [{"required": ["submissions"]}, {"required": ["failures"]}]},
        },
        "else": {"required": ["submissions", "failures"], "not": {"required": ["teams"]}},
    },
    # The public phase names no file.
    "leaderboard show": {
        "if": {"properties": {"phase": {"const": "public"}}},
        "then": {
            "not": {"required": ["private"]},
            "properties": {
                "public": {"properties": {"rows": {"items": {"not": {"required": ["submission"]}}}}}
            },
        },
    },
}

#: What a successful output holds beyond the envelope, by command.
SUCCESS: dict[str, dict[str, Any]] = {
    "score": SCORED,
    "validate": VALID,
    "prepare": PREPARED,
    "leaderboard score": BATCH,
    "leaderboard show": BOARDS,
}

#: Keys a successful output may lack: the private board exists in the final phase only; a
#: run's output holds submissions and failures (organiser) or teams (public); the forecast is
#: there when asked.
OPTIONAL = {"private", "submissions", "failures", "teams", "forecast"}


def build(command: str) -> dict[str, Any]:
    """The JSON Schema of `command`'s output: success, or a failure with its `error`."""
    head = {
        "schema_version": {"const": SCHEMA_VERSION},
        "scorer_version": TEXT,
        "command": {"const": command},
    }
    properties = {**head, "status": {"const": str(Status.OK)}, **SUCCESS[command]}
    success = _object(properties, [key for key in properties if key not in OPTIONAL])
    success.update(RULES.get(command, {}))
    failure = _object(
        {
            **head,
            # "" for a usage error found before any command (`scorer --bogus --json`).
            "command": {"enum": [command, ""]},
            "status": {"enum": [str(s) for s in Status if s is not Status.OK]},
            "error": {"$ref": "#/$defs/error"},
        }
    )
    # A failure may still carry what was done: the scores of a run whose --per-user write
    # failed, the batch of a run with rejected (--strict) or failed submissions.
    failure["properties"] = {**SUCCESS[command], **failure["properties"]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:ranklist-scorer:schema:{file_name(command)}:v{SCHEMA_VERSION}",
        "title": f"scorer {command} --json",
        "description": (
            f"The one JSON object `scorer {command} --json` prints on stdout, for every "
            "outcome: status ok (exit 0), rejected (1), error (2) or interrupted (130)."
        ),
        "oneOf": [success, failure],
        "$defs": {"error": ERROR, "problem": PROBLEM, "issue": ISSUE},
    }
