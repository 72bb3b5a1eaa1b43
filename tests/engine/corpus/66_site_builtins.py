# run: {"expect_exit": 2}
import builtins
import site
import sys

print("site builtins:", [n for n in ("exit", "quit", "help", "copyright", "credits", "license")
                         if hasattr(builtins, n)])
print("site:", site.ENABLE_USER_SITE, site.USER_SITE, site.getsitepackages())
print("builtins count:", len(dir(builtins)))
print("_ in builtins:", hasattr(builtins, "_"))
sys.stdout.flush()
exit(2)
