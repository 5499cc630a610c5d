"""What MLflow shows of the gate (silas_exp.gate.ports.GateLog): the baseline
where its users look for it, and the outcome of each check.

* A promotion: a pointer on the experiment (tag ``silas.baseline.<suite>`` =
  the promoted run; the experiment's description links to it, one click from
  the experiment page), the record as the artifact ``baseline.json`` on that
  run, the run tagged ``silas.baseline=true`` with its name ending
  `` · baseline`` and its description opening with "**Baseline:**", and the
  recent history in the experiment tag ``silas.baseline.<suite>.history``. Not
  the Model Registry: a baseline is a configuration and results, not a model
  artifact, and a registry alias needs a logged model version and sits on a
  page of its own, away from the experiment's runs.
* A demotion: the run loses its mark and says who demoted it, when and why;
  the history gets the entry; the pointer goes last (``unpoint``), so a
  demotion killed before that is finished by demoting again (it finds the
  run by the pointer).
* A check: its tags, ``regress.md`` and its headline as the first line of the
  description of the run it checked, or of a run of its own (``check_run``).

The gate itself (silas_exp.gate) decides what to write and when; the record
and its commit point are the baseline store's (the suite folder).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from silas_exp.schema.baseline import BASELINE_FILE, CHECK_MARK, BaselineRecord, promotion_entry
from silas_exp.schema.runs import LoggedRun
from silas_exp.tracking.payload import BASELINE_NAME_MARK as NAME_MARK
from silas_exp.tracking.payload import baseline_key, standard_tags
from silas_exp.tracking.permissions import acting_user, require_demote, require_promote
from silas_exp.tracking.reader import MlflowRunReader

LEGACY_POINTER = "silas.baseline_run_id"  # experiment tag of stores from before per-suite keys
TAG_LIMIT = 5000  # MLflow experiment tag values are capped; the file keeps everything
MARK = "**Baseline:**"  # first line of a (former) baseline run's description


def history_key(suite: str) -> str:
    return baseline_key(suite) + ".history"


def _bounded(history: list[dict[str, Any]]) -> str:
    while len(json.dumps(history)) > TAG_LIMIT and len(history) > 1:
        history = history[1:]  # the oldest go first; the history file keeps them
    return json.dumps(history)


def _named(name: str | None, baseline: bool) -> str:
    """The run's name with (or without) the baseline mark."""
    plain = (name or "").removesuffix(NAME_MARK)
    return plain + NAME_MARK if baseline else plain


class MlflowGateLog:
    """The gate's marks in an MLflow store (the one ``reader`` reads)."""

    def __init__(self, reader: MlflowRunReader) -> None:
        self.reader = reader
        self.store = reader.store

    def user(self) -> str:
        return acting_user(self.reader.uri)

    def may_change_baseline(self, experiment_id: str, action: str) -> None:
        (require_promote if action == "promote" else require_demote)(self.reader.uri,
                                                                     experiment_id)

    def attach_record(self, run_id: str, text: str) -> None:
        self.store.log_text(run_id, text, BASELINE_FILE)

    def _marked(self, experiment_id: str, suite: str) -> list[LoggedRun]:
        return self.reader.tagged_runs(experiment_id, {"silas.baseline": "true",
                                                       "silas.suite": suite})

    def _unmark(self, run: LoggedRun, tags: dict[str, str], line: str) -> None:
        """A former baseline run: tagged ``silas.baseline=false`` with ``tags``,
        its name without the mark, ``line`` first in its description."""
        self.store.log(run.run_id, tags={"silas.baseline": "false", **tags,
                                         "mlflow.runName": _named(run.name, False)})
        self.store.note_first(run.run_id, f"{MARK} {line}", MARK)

    def promoted(self, record: BaselineRecord, run: LoggedRun) -> dict[str, Any]:
        run_id, suite, now = record.source_run_id, record.suite, record.promoted_at
        exp_id = run.experiment_id
        others = [r for r in self._marked(exp_id, suite) if r.run_id != run_id]
        for r in others:
            self._unmark(r, {"silas.baseline_demoted_at": now,
                             "silas.baseline_superseded_by": run_id},
                         f"former baseline of suite `{suite}`, replaced by run `{run_id}` on "
                         f"{now[:16]} UTC.")
        entry = promotion_entry(record, [r.run_id for r in others])
        history = [*self.history(exp_id, suite), entry]
        self.store.set_experiment_tag(exp_id, baseline_key(suite), run_id)
        self.store.set_experiment_tag(exp_id, history_key(suite), _bounded(history))
        self.store.log(run_id, tags={"silas.baseline": "true", "silas.baseline_promoted_at": now,
                                     "silas.baseline_variant": record.variant,
                                     "mlflow.runName": _named(run.name, True)})
        what = f"`{record.variant}` of this study" if record.sweep_id else "this run's configuration"
        self.store.note_first(run_id, f"{MARK} {what} is the current baseline of suite `{suite}` "
                              f"(promoted {now[:16]} UTC by {record.promoted_by}: "
                              f"{len(record.cases())} cases x {len(record.repeats())} repeat(s), "
                              "record `baseline.json`); later studies run it as their control "
                              "and `silas-exp regress` checks changes against it.", MARK)
        self.store.refresh_experiment_note(exp_id)
        return entry

    def pointer(self, experiment_id: str, suite: str) -> str | None:
        tags = self.store.experiment_tags(experiment_id)
        return tags.get(baseline_key(suite)) or tags.get(LEGACY_POINTER) or None

    def history(self, experiment_id: str, suite: str) -> list[dict[str, Any]]:
        return json.loads(self.store.experiment_tags(experiment_id).get(history_key(suite), "[]"))

    def demoted(self, entry: Mapping[str, Any], experiment_id: str, suite: str) -> None:
        """Each step can run twice (a demotion repeated after a kill): the
        history gets one entry per demotion."""
        now, who = entry["demoted_at"], entry["by"]
        for r in self._marked(experiment_id, suite):
            self._unmark(r, {"silas.baseline_demoted_at": now, "silas.baseline_demoted_by": who,
                             "silas.baseline_demoted_reason": entry["reason"][:5000]},
                         f"former baseline of suite `{suite}`, demoted on {now[:16]} UTC by {who}: "
                         f"{entry['reason']}. The suite has no baseline now: later studies run "
                         "the §19.5 control and `silas-exp regress` needs a new promotion.")
        history = self.history(experiment_id, suite)
        if not (history and history[-1].get("action") == "demote"
                and history[-1].get("run_id") == entry["run_id"]):
            self.store.set_experiment_tag(experiment_id, history_key(suite),
                                          _bounded([*history, dict(entry)]))

    def unpoint(self, experiment_id: str, suite: str, run_id: str) -> None:
        tags = self.store.experiment_tags(experiment_id)
        for key in (baseline_key(suite), LEGACY_POINTER):
            if tags.get(key) == run_id:
                self.store.delete_experiment_tag(experiment_id, key)
        self.store.refresh_experiment_note(experiment_id)

    def checked(self, run_id: str, tags: Mapping[str, str], markdown: str,
                headline: str) -> None:
        self.store.log(run_id, tags=dict(tags))
        self.store.log_text(run_id, markdown, "regress.md")
        self.store.note_first(run_id, headline, CHECK_MARK)

    def check_run(self, record: BaselineRecord, name: str, *, tags: Mapping[str, str],
                  params: Mapping[str, str], metrics: Mapping[str, float],
                  started: float, ended: float) -> str:
        """A run of its own for the check of a configuration (no study to hold
        it): MLflow's Source, Version and User, the check's own start and end
        times, its settings as params and its figures as metrics."""
        exp_id = record.experiment_id or self.store.ensure_experiment(f"silas-{record.suite}")
        run_id = self.store.start_run(
            exp_id, name, {**standard_tags("."), "mlflow.source.name": "silas-exp regress",
                           "silas.kind": "regress", "silas.suite": record.suite,
                           "silas.baseline_run_id": record.source_run_id, **tags},
            start_time=started)
        self.store.log(run_id, params=dict(params), metrics=dict(metrics))
        self.store.end_run(run_id, end_time=ended)
        return run_id


__all__ = ["MARK", "MlflowGateLog"]
