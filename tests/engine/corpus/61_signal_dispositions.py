import signal

names = sorted(s.name for s in signal.Signals if s not in (signal.SIGKILL, signal.SIGSTOP))
for name in names:
    handler = signal.getsignal(getattr(signal, name))
    if callable(handler):
        handler = f"{handler.__module__}.{handler.__qualname__}"
    print(name, handler)
print("blocked:", sorted(s.name for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))
print("wakeup fd:", signal.set_wakeup_fd(-1))
print("alarm pending:", signal.alarm(0))
print("itimer:", signal.getitimer(signal.ITIMER_REAL))
