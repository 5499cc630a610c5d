"""SWE-agent: ``<instance>.traj`` of SWE-agent 1.x with function calling."""

from __future__ import annotations

import json
import shlex
from typing import Any

from tests.transcripts.script import Call, Script, numbered
from tests.transcripts.writers._common import MODEL, Files, short_id


def _swe_call(c: Call, files: Files, root: str, cwd: str) -> tuple[str, str, dict[str, Any], str]:
    """(action, function name, arguments, observation) of a SWE-agent 1.x step."""
    p = f"{root}/{c.args.get('file_path', '')}"
    if c.tool == "Read":
        obs = f"Here's the result of running `cat -n` on {p}:\n" + "\n".join(
            f"{n:6}\t{t}" for n, t in numbered(c.result.rstrip("\n")))
        return f"str_replace_editor view {p}", "str_replace_editor", {"command": "view",
                                                                      "path": p}, obs
    if c.tool == "Edit":
        old, new = c.args["old_string"], c.args["new_string"]
        action = f"str_replace_editor str_replace {p}   --old_str {shlex.quote(old)} --new_str " \
                 f"{shlex.quote(new)}"
        args = {"command": "str_replace", "path": p, "old_str": old, "new_str": new}
        if c.error:
            return action, "str_replace_editor", args, (
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {p}.")
        snippet = "\n".join(f"{n:6}\t{t}" for n, t in files.edit(c.args["file_path"], old, new))
        return action, "str_replace_editor", args, (
            f"The file {p} has been edited. Here's the result of running `cat -n` on a snippet "
            f"of {p}:\n{snippet}\nReview the changes and make sure they are as expected. Edit the "
            "file again if necessary.")
    if c.tool == "Write":
        files.write(c.args["file_path"], c.args["content"])
        return (f"str_replace_editor create {p} --file_text {shlex.quote(c.args['content'])}",
                "str_replace_editor", {"command": "create", "path": p,
                                       "file_text": c.args["content"]},
                f"File created successfully at: {p}")
    if c.tool == "Grep":
        cmd = f"grep -rn {shlex.quote(c.args['pattern'])} {root}/src {root}/tests"
        return cmd, "bash", {"command": cmd}, "\n".join(f"{root}/{ln}"
                                                        for ln in c.result.split("\n"))
    cmd = f"cd {root} && {c.args['command']}"
    return cmd, "bash", {"command": cmd}, c.result.replace(cwd, root)


def swe_agent(s: Script, instance: str = "httpkit__httpkit-118") -> tuple[str, str]:
    """(file name, JSON) of the trajectory: the first message is the issue, every
    call a step (a step's text is the thought of its first call), a final submit."""
    root, files = "/testbed", Files(s.files)
    system = {"role": "system", "content": "You are a helpful assistant that can interact with a "
              "computer to solve tasks.", "agent": "main", "message_type": "system_prompt"}
    demo = {"role": "user", "content": [{"type": "text", "text": (
        "Here is a demonstration of how to correctly accomplish this task.\n--- DEMONSTRATION "
        "---\n(omitted)\n--- END OF DEMONSTRATION ---")}], "agent": "main",
        "message_type": "demonstration", "is_demo": True}
    issue = {"role": "user", "content": [{"type": "text", "text": (
        f"<uploaded_files>\n{root}\n</uploaded_files>\nI've uploaded a python code repository in "
        f"the directory {root}. Consider the following PR description:\n\n<pr_description>\n"
        f"{s.exchanges[0].user}\n</pr_description>\n\nCan you help me implement the necessary "
        "changes to the repository so that the requirements specified in the <pr_description> "
        "are met?")}], "agent": "main", "message_type": "observation"}
    history: list[dict[str, Any]] = [system, demo, issue]
    trajectory: list[dict[str, Any]] = []
    thought = ""

    def step(action: str, name: str, args: dict[str, Any], obs: str) -> None:
        nonlocal thought
        n = len(trajectory)
        cid = f"toolu_{short_id(f'swe/{s.sid}/{n}', 24)}"
        query = list(history)  # the messages the model was sent at this step
        history.append({"role": "assistant", "content": thought, "thought": thought,
                        "action": action, "agent": "main", "tool_calls": [{
                            "index": 0, "function": {"arguments": json.dumps(args), "name": name},
                            "id": cid, "type": "function"}],
                        "message_type": "action", "thinking_blocks": []})
        history.append({"role": "tool", "content": [{"type": "text",
                                                     "text": f"OBSERVATION:\n{obs}"}],
                        "agent": "main", "message_type": "observation", "tool_call_ids": [cid]})
        trajectory.append({"action": action, "observation": obs, "response": thought,
                           "thought": thought, "execution_time": round(0.11 + 0.07 * (n % 9), 2),
                           "state": {"working_dir": root, "diff": files.diff(s.files)},
                           "query": query, "extra_info": {}})
        thought = ""

    for ex in s.exchanges:
        for st in ex.steps:
            thought = "\n".join(t for t in (thought, st.text) if t)
            for c in st.calls:
                if c.tool != "TodoWrite":  # SWE-agent 1.x has no todo tool
                    step(*_swe_call(c, files, root, s.cwd))
    diff = files.diff(s.files)
    thought = thought or "The fix is in place and the tests pass. Submitting."
    step("submit", "submit", {}, diff)
    n = len(trajectory)
    info = {"swe_agent_hash": "3ea751c0", "swe_agent_version": "1.1.0", "swe_rex_version": "1.2.0",
            "swe_rex_hash": "unavailable", "submission": diff, "exit_status": "submitted",
            "edited_files30": "".join(f"[File: {p}]\n" for p in sorted(files.files)
                                      if files.files[p] != s.files.get(p)),
            "model_stats": {"instance_cost": round(0.013 * n, 4), "tokens_sent": 2_900 * n,
                            "tokens_received": 85 * n, "api_calls": n}}
    config = {"agent": {"model": {"name": MODEL, "per_instance_cost_limit": 3.0}}}
    obj = {"trajectory": trajectory, "history": history, "info": info,
           "replay_config": json.dumps(config), "environment": "main"}
    return f"{instance}.traj", json.dumps(obj, indent=2, ensure_ascii=False)
