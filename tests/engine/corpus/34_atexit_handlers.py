import atexit
import sys


class Failing:
    # A fixed repr: the default one would print an address in "Exception ignored in ...".
    def __repr__(self):
        return "<the failing handler>"

    def __call__(self):
        print("failing handler runs", flush=True)
        raise RuntimeError("an atexit handler failed")


def say(text, stream="out"):
    print(f"atexit: {text}", file=sys.stdout if stream == "out" else sys.stderr)


atexit.register(say, "registered first, runs last")
atexit.register(Failing())
atexit.register(say, "registered third", stream="err")
atexit.register(say, "registered last, runs first")
print("the main program ends")
