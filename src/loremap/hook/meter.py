"""After each tool call, and at the end of each turn: is it time to write things down?

The meter (post-tool) reads the context size from the transcript's latest usage record and,
past `hooks.nudge_at` of the point where the session will compact, says once (per context:
again after each compaction) that now is the time to record what was learned and save a
handoff. It runs after every tool call, so it opens no index: a tail read of the transcript,
the settings files and the session's state file.

The stop hook asks once per session, after heavy exploration (`hooks.explore_calls` reads and
searches) with nothing recorded, to record what was learned. It blocks the stop with that
request as the reason (Claude Code's way to have the agent act on it), never twice in a row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from loremap.hook.context import additional_context, fence, locate, settings


def post_tool(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    project = locate(payload, environ)
    if project is None or project.session_id is None or project.transcript is None:
        return ""
    from loremap.sessions.transcript import context_tokens

    tokens = context_tokens(project.transcript)
    if tokens is None:
        return ""
    s = settings(project, environ)
    point = s.get_int("hooks.compact_at")
    if point <= 0:
        from loremap.agents.claude.settings import current_window

        point = current_window(project.root, environ).compact_at
    if tokens < s.get_float("hooks.nudge_at") * point:
        return ""
    from loremap.sessions.state import SessionState

    state = SessionState(project.loremap_dir, project.session_id)
    if state.flag("nudged"):
        return ""
    state.set_flag("nudged")
    state.save()
    text = (f"The context is at {tokens:,} tokens; this session compacts at about {point:,}. "
            "What it learned that the code does not say (decisions and why, bugs and their "
            "causes, gotchas) is lost at compaction unless recorded: now is the time to record "
            "it with the remember tool (one batch) and to save a handoff with the handoff tool "
            "(action save: goal, state, next steps), which the compacted session starts from.")
    return additional_context("PostToolUse", fence("meter", text))


def stop(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    if payload.get("stop_hook_active"):
        return ""
    project = locate(payload, environ)
    if project is None or project.session_id is None or project.transcript is None:
        return ""
    limit = settings(project, environ).get_int("hooks.explore_calls")
    if limit <= 0:
        return ""
    from loremap.sessions.state import SessionState
    from loremap.sessions.transcript import activity

    state = SessionState(project.loremap_dir, project.session_id)
    if state.flag("asked") or state.flag("recorded"):
        return ""
    done = activity(project.transcript, project.root)
    if done.recorded:
        state.set_flag("recorded")  # no need to read the transcript again
        state.save()
        return ""
    if done.explore_calls < limit:
        return ""
    state.set_flag("asked")
    state.save()
    reason = (f"This session made {done.explore_calls} reads and searches and recorded nothing "
              "in the project's memory. If it learned something the code does not say (a "
              "decision and why, a bug's cause, a gotcha, how a part really works), record it "
              "now with loremap's remember tool, in one batch; if not, finish as you were.")
    return json.dumps({"decision": "block", "reason": reason})
