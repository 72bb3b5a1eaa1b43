import threading


def worker():
    # Waits for the main thread to finish its code: the interpreter then joins this
    # non-daemon thread before it exits, so this output still appears.
    threading.main_thread().join()
    for i in range(3):
        print(f"worker after main: {i}", flush=True)


threading.Thread(target=worker, name="worker").start()
print("main thread reaches its last line", flush=True)
