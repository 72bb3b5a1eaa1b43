# run: {"expect_exit": 1, "expect_stderr_contains": "The above exception was the direct cause"}
class ConfigError(Exception):
    pass


def load(text):
    try:
        return int(text)
    except ValueError as error:
        raise ConfigError(f"bad setting {text!r}") from error


load("twelve")
