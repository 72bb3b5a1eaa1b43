import sys
import weakref


class Noisy:
    def __init__(self, name):
        self.name = name

    def __del__(self):
        print(f"finalizing {self.name}", flush=True)


keep = Noisy("a module global")
weakref.finalize(Noisy("weakly referenced"), print, "weakref.finalize callback", flush=True)
other = Noisy("with a finalizer at exit")
weakref.finalize(other, print, "finalize for an object alive at exit", flush=True)
print("refcount of a fresh object:", sys.getrefcount(object()))
print("main program ends", flush=True)
