"""The agent's durable notes: `write_memory`, `propose_role_amendment` and `log_choice`.

The files are written by runtime/memory/: `write_memory` through the panel's memory (the
dated note, the wiki page a `wiki/<slug>` category names, the search index, the graph), the
other two through runtime/memory/proposals.py. Nothing here changes what steers the agent:
a role amendment is a proposal for the operator to read, not an edit of the role doc.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

import anyio.to_thread

from runtime.memory.proposals import append_line, write_proposal
from runtime.tools.context import ToolContext
from runtime.tools.params import Args, Param, define, ok, refuse
from runtime.turn.driver import ToolOutput, ToolSpec

MAX_CATEGORY = 80


def memory_tools(ctx: ToolContext) -> list[ToolSpec]:
    async def write_memory(a: Args) -> ToolOutput:
        category = " ".join(str(a["category"] or "").split())
        payload = a["payload"]
        if not category:
            category = "observation" if payload else "note"
        if len(category) > MAX_CATEGORY:
            return refuse(f"write_memory: category is longer than {MAX_CATEGORY} characters")
        memory = ctx.memory
        written = await memory.run(
            memory.remember, a["text"], category, payload or None, ctx.provenance()
        )
        where = written.atom.source + (f" and {written.page.source}" if written.page else "")
        return ok(f"noted under '{category}' in {where}{written.summary()}")

    async def propose_role_amendment(a: Args) -> ToolOutput:
        if not a["text"].strip():
            return refuse("propose_role_amendment: the proposal text is empty")
        now = datetime.now(UTC)
        write = partial(
            write_proposal, ctx.paths.role_proposals, a["text"], a["rationale"], a["severity"], now
        )
        target = await anyio.to_thread.run_sync(write)
        return ok(f"proposal saved to {target}; the operator decides whether the role doc changes")

    async def log_choice(a: Args) -> ToolOutput:
        record = {
            "ts": datetime.now(UTC).isoformat(timespec="seconds"),
            "decision_type": a["decision_type"],
            "decision": a["decision"],
            "rationale": a["rationale"],
            "context_summary": a["context_summary"],
            "turn_row_id": ctx.in_flight_row,
        }
        target = ctx.paths.root / "choices.jsonl"
        await anyio.to_thread.run_sync(append_line, target, record)
        return ok(f"choice logged in {target}")

    return [
        define(
            "write_memory",
            "Append a note to today's memory file (memory/YYYY-MM-DD.md); it survives window "
            "eviction and is indexed for memory_search and linked in the graph when those "
            "are on. A category 'wiki/<page>' also appends the text to that wiki page. "
            "Optionally attach a structured payload (observation, evidence, prediction, "
            "applies_to, confidence).",
            [
                Param("text", "string", "The note.", required=True),
                Param("category", "string", "A short label, e.g. insight, todo, decision."),
                Param(
                    "payload",
                    "object",
                    "Structured observation: observation, evidence, prediction, "
                    "applies_to (list of strings), confidence (0-1), or other keys.",
                ),
            ],
            write_memory,
        ),
        define(
            "propose_role_amendment",
            "Propose a change to your role doc. Saved under role_proposals/ for the operator; "
            "the role doc itself is not changed.",
            [
                Param("text", "string", "The proposed amendment, as it would read.", required=True),
                Param("rationale", "string", "Why the role doc should change.", required=True),
                Param(
                    "severity",
                    "string",
                    "How much it matters.",
                    choices=("low", "medium", "high"),
                    default="medium",
                ),
            ],
            propose_role_amendment,
        ),
        define(
            "log_choice",
            "Record a decision and why, as one line in choices.jsonl, for later review.",
            [
                Param(
                    "decision_type",
                    "string",
                    "What kind of decision (design, scope...).",
                    required=True,
                ),
                Param("decision", "string", "What was decided.", required=True),
                Param("rationale", "string", "Why.", required=True),
                Param("context_summary", "string", "The situation in a sentence.", default=""),
            ],
            log_choice,
        ),
    ]
