"""Errors aiio raises on purpose; the CLI turns each into one line and an exit code."""


class AiioError(Exception):
    """A user-facing problem: bad input, missing target, refused request. Exit code 2."""

    exit_code = 2


class ConfigError(AiioError):
    """A workload, spec or option value is malformed, unknown or impossible."""


class TargetError(AiioError):
    """The target directory is missing, not ours, not writable or too small."""


class SpaceError(TargetError):
    """Not enough free space for what the run must write."""


class ToolMissing(AiioError):
    """An external program aiio needs (fio, mpiexec) is not installed."""


class RunFailed(AiioError):
    """The measurement itself failed (dead client, ENOSPC, fsync error). Exit code 1."""

    exit_code = 1


class CleanFailed(AiioError):
    """The storage would not let `aiio clean` remove something of aiio's (a file that may not
    be removed, a folder a file appeared in). A failure of the storage, as a run's: exit
    code 1."""

    exit_code = 1


class TargetChanged(RunFailed):
    """The target's path led to another directory or filesystem at the end of the run than
    at its start (unmounted, mounted over, replaced). Exit code 1."""


class RunInterrupted(AiioError):
    """The user pressed Ctrl-C; the partial result was saved. Exit code 130."""

    exit_code = 130


class Terminated(RunFailed):
    """The process got SIGTERM (under MPI: the launcher ends the job). Exit code 1."""


class StopSignal(Terminated):
    """SIGTERM outside MPI (a scheduler's timeout, systemd stop): nobody follows with SIGKILL,
    so the clients are stopped and their figures kept, as for Ctrl-C. Exit code 1."""


class ChecksFailed(AiioError):
    """An acceptance check failed its thresholds or could not be measured. Exit code 1."""

    exit_code = 1
