"""One sweep per folder: a sweep starts only in a folder that holds no other
sweep's jobs.

* A free folder is claimed by writing the sweep's manifest (``sweep.json``)
  under the folder's lock, so two sweeps racing for it cannot both win.
* ``resume=true`` continues the sweep of the folder when it is the same
  command; when that sweep has finished, it prints its result and runs
  nothing (:class:`AlreadyFinished`).
* Any other occupied folder is refused before the first job (exit 2, with
  the ways out), except Hydra's default timestamped folder, which nobody
  named: a sweep started in the same second as another takes the next free
  name (``…-2``) and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from silas_exp.errors import ConfigError, SilasExpError
from silas_exp.records import (
    MANIFEST_FILE,
    RESULT_FILE,
    SweepManifest,
    exclusive,
    read_manifest,
    read_sweep_end,
    write_manifest,
)
from silas_exp.run.sweep_end import ABLATION_FILE, SUMMARY_FILE

MAX_SIBLINGS = 100  # timestamped folders tried after the first: -2 … -101


class AlreadyFinished(SilasExpError):
    """resume=true on a sweep that has finished: its result is the message;
    nothing runs, and the command succeeds."""

    exit_code = 0


@dataclass
class Claim:
    """The folder a sweep runs in, and what it found there."""

    sweep_dir: Path
    manifest: SweepManifest  # written: the new sweep's, or the resumed one's with this run's facts
    resumed: bool = False  # the folder held this command's unfinished sweep
    moved_from: Path | None = None  # the timestamped folder another sweep had taken


def occupant(folder: Path) -> SweepManifest | str | None:
    """Who holds ``folder``: a silas_exp sweep (its manifest), something else
    (what was found) or nobody (None)."""
    manifest = read_manifest(folder)
    if manifest is not None:
        return manifest
    jobs = job_folders(folder)
    if jobs:
        return f"job folders ({', '.join(jobs[:5])}) of a sweep without sweep.json"
    return None


def job_folders(folder: Path) -> list[str]:
    """The job folders in ``folder`` (a job's own result, or Hydra's files of a started job)."""
    if not folder.is_dir():
        return []
    jobs = [p.parent.name for p in folder.glob(f"*/{RESULT_FILE}")]
    jobs += [p.parent.name for p in folder.glob("*/.hydra")]
    return sorted(set(jobs))


def release_unstarted(folder: Path) -> None:
    """A sweep refused before its first job (bad input found by the pre-flight)
    gives its folder back, so that the corrected command can run there: its
    manifest goes when no job folder was made."""
    with exclusive(folder / MANIFEST_FILE):
        if isinstance(occupant(folder), SweepManifest) and not job_folders(folder):
            (folder / MANIFEST_FILE).unlink(missing_ok=True)


def holds(folder: Path, command_key: str) -> bool:
    """``folder`` holds a sweep of this command."""
    held = occupant(folder)
    return isinstance(held, SweepManifest) and held.command_key == command_key


def finished(folder: Path, manifest: SweepManifest) -> bool:
    """The sweep ended with every job finished, its end recorded and handed to
    tracking. (A sweep with failed jobs, or cut short at its end, resumes.)"""
    end = read_sweep_end(folder) if manifest.ended_at is not None else None
    return end is not None and end.status == "FINISHED"


def claim(sweep_dir: Path, manifest: SweepManifest, resume: bool, timestamped: bool,
          tracked: bool, extends: bool = False) -> Claim:
    """Claim ``sweep_dir`` (or, ``timestamped``, the next free sibling) for the
    sweep of ``manifest``; write the manifest there. Raises ConfigError when
    the folder holds another sweep, AlreadyFinished when ``resume`` finds this
    command's sweep finished (the message is its result). ``extends``: a
    resume may change the command (a tuning study resumed with more trials
    checks what may change itself)."""
    first = sweep_dir
    if resume and not tracked and occupant(first) is None:  # refused before making the folder
        raise ConfigError(_nothing_to_resume(first))
    for n in range(MAX_SIBLINGS + 1):
        folder = first if n == 0 else first.with_name(f"{first.name}-{n + 1}")
        with exclusive(folder / MANIFEST_FILE):
            held = occupant(folder)
            if held is None:
                write_manifest(folder, manifest)
                return Claim(folder, manifest, moved_from=first if n else None)
            same = isinstance(held, SweepManifest) and held.command_key == manifest.command_key
            if resume and isinstance(held, SweepManifest) and (same or extends):
                if same and finished(folder, held):
                    raise AlreadyFinished(finished_result(folder, held))
                continued = _continued(held, manifest)
                write_manifest(folder, continued)
                return Claim(folder, continued, resumed=True)
        if not timestamped:
            raise ConfigError(_occupied(folder, held, manifest, resume))
    raise ConfigError(f"{first}: it and the next {MAX_SIBLINGS} folders beside it each hold a "
                      "sweep; give a folder of your own: hydra.sweep.dir=<new folder>")


def _continued(held: SweepManifest, now: SweepManifest) -> SweepManifest:
    """The folder's sweep, resumed: its id, command and tracking facts stay
    (its report and parent run read as the uninterrupted sweep's); the
    planned jobs and start (progress lines) are this invocation's."""
    return held.model_copy(update={"jobs_total": now.jobs_total, "started_at": now.started_at,
                                   "ended_at": None, "background": False})


def _occupied(folder: Path, held: SweepManifest | str, manifest: SweepManifest,
              resume: bool) -> str:
    if isinstance(held, SweepManifest):
        state = "finished" if finished(folder, held) else "not finished"
        who = f"sweep {held.sweep_id} ({state}; its command: {held.command or 'unknown'})"
        same = held.command_key == manifest.command_key
    else:
        who, same = held, False
    why = ("resume=true continues a sweep only with the same command" if resume and not same
           else "a sweep folder holds one sweep")
    again = (" To start" if not same or resume else
             " To continue it (or, if it finished, show its result) add resume=true; to start")
    return (f"{folder} already holds {who}, and {why}: a second sweep there would overwrite its "
            f"job folders and mix its jobs into this one's analysis.{again} a new sweep, "
            "give another folder (hydra.sweep.dir=<new folder>, or leave hydra.sweep.dir unset "
            "for a fresh timestamped one), or move that folder away first.")


def _nothing_to_resume(folder: Path) -> str:
    return (f"resume=true with tracking=none continues the sweep in its folder, and {folder} "
            "holds none. Name the interrupted sweep's folder: resume=true "
            "hydra.sweep.dir=<its folder> (with tracking on, resume=true also finds it in "
            "MLflow by its command); or drop resume=true to start a new sweep.")


def finished_result(folder: Path, manifest: SweepManifest) -> str:
    """What ``resume=true`` prints for a sweep that has finished."""
    end = read_sweep_end(folder)
    lines = [f"resume=true: sweep {manifest.sweep_id} in {folder} has already finished "
             f"({end.status if end else '?'}, {int((end.metrics if end else {}).get('sweep.jobs', 0))}"
             " jobs); nothing was run. Its result:"]
    if (folder / SUMMARY_FILE).is_file():
        lines += ["", (folder / SUMMARY_FILE).read_text().rstrip()]
    if end is not None and end.description:  # its decision, without the markdown's bold marks
        lines += ["", end.description.split("\n\n")[0].replace("**", "")]
    if (folder / ABLATION_FILE).is_file():
        lines.append(f"  report: {folder / ABLATION_FILE}")
    lines.append("To run it again as a new sweep, drop resume=true and give another folder "
                 "(hydra.sweep.dir=<new folder>, or none for a fresh timestamped one).")
    return "\n".join(lines)
