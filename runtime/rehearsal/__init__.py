"""The rehearsal model: a loopback Messages API that answers from a script.

The real Claude Code CLI, pointed at it with `ANTHROPIC_BASE_URL`, runs whole sessions with
no network and no key. Usage is computed from the request bytes with the prompt-cache rules
(cache.py), so a workload's cost can be measured offline.

    async with open_rehearsal_server(load_script("examples/rehearsal/solo.toml")) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url_for("engineer"), ...}
        ...
        for record in server.requests("engineer"):
            print(record.usage, record.cost_usd, record.divergence)

Modules: replies (what the model says), matching (which reply answers; a run of a script
matches only what arrived since it began, not a transcript re-sent from a panel's earlier
life), script (the TOML format), layout (a prompt in cache order, token counting,
divergence), cache (accounting), pricing, sse (wire shapes), model (the service logic),
records (the request log), server (HTTP), env (the environment of a CLI that talks to it and
to nothing else). Recorded sessions build on this model and live beside it, in
runtime/cassette/.
"""

from runtime.rehearsal.cache import (
    CacheAccount,
    CacheRules,
    CacheUsage,
    ManualClock,
    PromptCache,
    account_requests,
)
from runtime.rehearsal.errors import CacheRuleError, NotLoopbackError, RehearsalError, ScriptError
from runtime.rehearsal.layout import ApproxTokenCounter, Divergence, Layout, TokenCounter
from runtime.rehearsal.matching import PanelScript, ReplyHook, RequestView, Rule, Script, When
from runtime.rehearsal.pricing import Rates, cost_usd, rates_for
from runtime.rehearsal.records import OtherRequest, RequestRecord, Totals, summarize
from runtime.rehearsal.replies import (
    Faults,
    Reply,
    TextItem,
    ThinkingItem,
    ToolUseItem,
)
from runtime.rehearsal.script import load_script, parse_script
from runtime.rehearsal.server import RehearsalServer, open_rehearsal_server

__all__ = [
    "ApproxTokenCounter",
    "CacheAccount",
    "CacheRuleError",
    "CacheRules",
    "CacheUsage",
    "Divergence",
    "Faults",
    "Layout",
    "ManualClock",
    "NotLoopbackError",
    "OtherRequest",
    "PanelScript",
    "PromptCache",
    "Rates",
    "RehearsalError",
    "RehearsalServer",
    "Reply",
    "ReplyHook",
    "RequestRecord",
    "RequestView",
    "Rule",
    "Script",
    "ScriptError",
    "TextItem",
    "ThinkingItem",
    "TokenCounter",
    "ToolUseItem",
    "Totals",
    "When",
    "account_requests",
    "cost_usd",
    "load_script",
    "open_rehearsal_server",
    "parse_script",
    "rates_for",
    "summarize",
]
