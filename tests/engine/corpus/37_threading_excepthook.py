import sys
import threading


def fails():
    raise ValueError("raised in a thread")


t = threading.Thread(target=fails)
t.start()
t.join()
print("default hook printed for:", t.name, flush=True)


def hook(args):
    print(f"custom thread hook: {args.exc_type.__name__}: {args.exc_value} "
          f"in {args.thread.name}", file=sys.stderr)


threading.excepthook = hook
t = threading.Thread(target=fails, name="named")
t.start()
t.join()
print("threads alive:", threading.active_count(), [x.name for x in threading.enumerate()])
