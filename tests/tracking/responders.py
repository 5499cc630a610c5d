"""Answers of the local Messages API server for a real-model probe run: the
judge grades every criterion it is asked about (a score from the answer's
length and the criterion, with a one-line reasoning); other requests get the
server's default answers."""

from __future__ import annotations

import hashlib
import json

from tests.fakes.messages_server import default_responder


def grading_responder(body: dict) -> dict:
    tools = body.get("tools") or []
    props = tools[0]["input_schema"].get("properties", {}) if tools else {}
    user = body["messages"][-1]["content"]
    user = user if isinstance(user, str) else "".join(b.get("text", "") for b in user)
    if "criteria" in props:
        payload = json.loads(user)
        answer = payload.get("model_response") or ""
        out = []
        for cid in payload["rubric_criteria"]:
            h = int(hashlib.sha256(f"{cid}/{answer}".encode()).hexdigest()[:4], 16)
            score = 2 + h % 4
            out.append({"criterion_id": cid, "score": score,
                        "reasoning": f"{cid}: the answer states {len(answer.splitlines())} line(s); "
                                     f"score {score} of 5"})
        return {"criteria": out}
    if not tools and "\n\nQuestion:" in user:  # a probe answer from the retained context
        context = user.split("\n\nQuestion:", 1)[0]
        facts = [ln for ln in context.splitlines() if ln.lstrip().startswith("- ")][:4]
        if not facts:
            facts = [f"- note: {ln[:70]}" for ln in context.splitlines()
                     if ln.startswith("[") and not ln.startswith("[system")][:3]
        return {"text": "\n".join(facts) or "- note: nothing retained"}
    return default_responder(body)
