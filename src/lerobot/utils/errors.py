"""The one exception type for bad user input."""


class ConfigError(ValueError):
    """A user-facing configuration error.

    Its message is one line naming the flag, the value and what is allowed; the CLI prints
    it as is and exits with code 2, before any simulator or worker starts.
    """
