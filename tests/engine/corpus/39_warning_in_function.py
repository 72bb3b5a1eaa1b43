import warnings


def here():
    warnings.warn("from inside a function")


def blames_caller():
    warnings.warn("blames the caller", RuntimeWarning, stacklevel=2)


def too_deep():
    warnings.warn("stacklevel past the top", stacklevel=10)


here()
here()
blames_caller()
too_deep()
warnings.warn_explicit("explicit", UserWarning, "/tmp/elsewhere.py", 12)
print("done")
