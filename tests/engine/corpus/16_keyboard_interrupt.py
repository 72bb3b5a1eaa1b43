# run: {"expect_exit": 130, "expect_signal": "SIGINT"}
print("raising KeyboardInterrupt", flush=True)
raise KeyboardInterrupt
