import threading

started = threading.Event()
never = threading.Event()


def daemon():
    print("daemon started", flush=True)
    started.set()
    never.wait()
    print("daemon never gets here", flush=True)


threading.Thread(target=daemon, daemon=True).start()
started.wait()
print("main ends with a daemon thread still waiting", flush=True)
