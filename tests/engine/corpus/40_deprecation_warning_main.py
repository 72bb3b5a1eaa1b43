import warnings


def old_api():
    warnings.warn("old_api is deprecated", DeprecationWarning, stacklevel=2)


warnings.warn("deprecated at module level", DeprecationWarning)
old_api()
warnings.warn("pending", PendingDeprecationWarning)
print("done")
