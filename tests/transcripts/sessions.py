"""A realistic coding session as reader events (a retry bug in an HTTP client),
long enough to put the window under eviction pressure."""

from __future__ import annotations

from silas_exp.data.transcripts.events import Event, RawSession

CODE = "\n".join(f"    line_{i} = compute_value_{i}(payload)  # step {i}" for i in range(40))


def coding_session(sid: str = "s1", rounds: int = 12) -> RawSession:
    ev: list[Event] = [Event("system", "You are a coding agent working in the user's repository.")]

    def call(cid: str, tool: str, args: dict, result: str, error: bool = False) -> None:
        ev.append(Event("call", call_id=cid, tool=tool, args=args))
        ev.append(Event("result", result, call_id=cid, is_error=error))

    ev.append(Event("user", "The client crashes on 429 responses, please fix src/app/http.py"))
    ev.append(Event("assistant", "Let me look at the client first."))
    call("c1", "Read", {"file_path": "/repo/src/app/http.py"},
         "def fetch(url):\n    resp = session.get(url)\n    delay = resp.headers['retry_after']\n"
         + CODE)
    call("c2", "Bash", {"command": "pytest tests/test_http.py -x"},
         "FAILED tests/test_http.py::test_retry - KeyError: 'retry_after'\n" + CODE, error=True)
    ev.append(Event("user", "What do you think is wrong?"))
    ev.append(Event("assistant", "The header is Retry-After, not retry_after. I'll use "
                                 "resp.headers.get('Retry-After') instead of indexing."))
    call("c3", "Edit", {"file_path": "/repo/src/app/http.py", "old_string": "['retry_after']",
                        "new_string": ".get('Retry-After')"}, "The file has been updated.")
    ev.append(Event("user", "Run the tests again"))
    call("c4", "Bash", {"command": "pytest tests/test_http.py -x"}, "1 passed in 0.12s")
    for r in range(rounds):
        ev.append(Event("user", f"Now look at module_{r} and tidy it up"))
        call(f"r{r}", "Read", {"file_path": f"src/app/module_{r}.py"},
             f"class Handler{r}Base:\n    def handle_request_{r}(self):\n        pass\n" + CODE)
        call(f"g{r}", "Grep", {"pattern": f"handle_request_{r}"},
             f"src/app/module_{r}.py:2:    def handle_request_{r}(self):")
        ev.append(Event("assistant", f"handle_request_{r} is unused; let's go with removing it."))
        call(f"e{r}", "Edit", {"file_path": f"src/app/module_{r}.py", "old_string": "pass",
                               "new_string": "return None"}, "The file has been updated.")
    ev.append(Event("user", "As we discussed earlier, is the Retry-After fix still in place?"))
    call("c9", "Read", {"file_path": "src/app/http.py"}, "delay = resp.headers.get('Retry-After')")
    call("c10", "TodoWrite", {"todos": [
        {"content": "Add a test for HTTP 503 retries", "status": "pending"},
        {"content": "Fix the retry header", "status": "completed"}]}, "Todos updated")
    return RawSession(sid, "session.jsonl", "test", ev)
