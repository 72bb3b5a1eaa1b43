# run: {"expect_exit": 1, "expect_stderr_contains": "custom hook: ValueError"}
import sys


def hook(kind, value, tb):
    frames = []
    while tb is not None:
        frames.append(f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}")
        tb = tb.tb_next
    print(f"custom hook: {kind.__name__}: {value} at {frames}", file=sys.stderr)


sys.excepthook = hook
raise ValueError("reported by the hook")
