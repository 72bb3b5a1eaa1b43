# run: {"expect_exit": 1, "expect_stderr_contains": "UserWarning: now an error"}
import warnings

warnings.simplefilter("error")
try:
    warnings.warn("caught as an exception")
except UserWarning as error:
    print("caught:", error)
warnings.warn("now an error")
