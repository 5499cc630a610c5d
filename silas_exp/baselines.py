"""The suite folder as a baseline store (silas_exp.gate.ports.BaselineStore):
``suites/<suite>/baseline.json`` (§20.5's place, committed with the code so a
pull request's CI finds it) and ``baseline_history.jsonl`` beside it, and the
one reader of the record (:func:`parse_baseline`, which also reads the first
format)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from silas_exp.errors import AnalysisError
from silas_exp.records import upgrade_case, write_bytes_atomic
from silas_exp.schema.baseline import (
    BASELINE_FILE,
    HISTORY_FILE,
    RECORD_VERSION,
    BaselineRecord,
    first_format,
    read_history,
)


def parse_baseline(text: str, where: str) -> BaselineRecord:
    """A baseline record from the text of ``where`` (a file, an artifact)."""
    from pydantic import ValidationError

    fix = "promote it again with `silas-exp baseline promote SWEEP_OR_RUN VARIANT`"
    try:
        data = json.loads(text)
        if "schema_version" not in data:
            data = first_format(data)
        elif data["schema_version"] > RECORD_VERSION:
            raise AnalysisError(f"{where}: schema_version {data['schema_version']} is newer than "
                                f"this silas_exp reads ({RECORD_VERSION}); upgrade silas_exp")
        for job in data.get("jobs", []):
            job["results"] = [upgrade_case(r) for r in job.get("results", [])]
        return BaselineRecord.model_validate(data)
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise AnalysisError(f"{where}: not a readable baseline ({first}); {fix}") from None


class SuiteFolder:
    """A suite's baseline kept in its folder."""

    def __init__(self, suite_dir: Path | str) -> None:
        self.dir = Path(suite_dir)

    @property
    def where(self) -> str:
        return str(self.dir / BASELINE_FILE)

    def read(self) -> BaselineRecord | None:
        path = self.dir / BASELINE_FILE
        if not path.is_file():
            return None
        return parse_baseline(path.read_text(), str(path))

    def write(self, record: BaselineRecord) -> None:
        """Written to a temporary file and renamed over the old one: a promotion
        killed before the rename leaves the previous baseline whole."""
        write_bytes_atomic(self.dir / BASELINE_FILE, record.model_dump_json(indent=1).encode())

    def remove(self) -> None:
        (self.dir / BASELINE_FILE).unlink()

    def history(self) -> list[dict[str, Any]]:
        return read_history(self.dir)

    def append_history(self, entry: Mapping[str, Any]) -> None:
        with open(self.dir / HISTORY_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(dict(entry)) + "\n")



def suite_version(suite_dir: Path) -> str:
    """The suite's current version (its ``suite.json``)."""
    try:
        return json.loads((Path(suite_dir) / "suite.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise AnalysisError(f"{Path(suite_dir) / 'suite.json'}: cannot read the suite version; "
                            "pass --suite-dir with the suite folder") from None


def read_baseline(suite_dir: Path | str) -> BaselineRecord | None:
    """The suite folder's baseline, or None when none is promoted."""
    return SuiteFolder(suite_dir).read()
