"""The exception types a user can act on, and the exit codes the commands end with."""

EXIT_OK = 0
EXIT_USAGE = 2
"""Bad input (a flag, a file, an output directory): one line on stderr, nothing was run."""
EXIT_INCOMPLETE = 3
"""The run finished, but some episodes failed for good because of the harness (a crashed or
hung simulator, a reset error, a lost policy server). They are left out of every rate;
`--eval.resume=true` re-runs exactly those."""
# Interrupted by SIGINT / SIGTERM: 128 + the signal's number (130, 143), as shells report it.


class ConfigError(ValueError):
    """A user-facing configuration error.

    Its message is one line naming the flag, the value and what is allowed; the CLI prints
    it as is and exits with code 2, before any simulator or worker starts.
    """


class ResultsWriteError(OSError):
    """Results could not be written (disk full, read-only file system, ...): one line naming
    the file; what was already on disk is kept."""
