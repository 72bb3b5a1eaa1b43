import subprocess
import sys

child = subprocess.run(
    [sys.executable, "-c", "import sys; print('child argv', sys.argv); sys.exit(4)"],
    capture_output=True, text=True)
print("returncode:", child.returncode)
print("stdout:", child.stdout, end="")
print("stderr:", repr(child.stderr))
inherited = subprocess.run([sys.executable, "-c", "print('to the inherited stdout')"])
print("inherited returncode:", inherited.returncode)
shell = subprocess.run("echo $0 $((2 + 3)); pwd", shell=True, capture_output=True, text=True)
print("shell:", shell.stdout.split())
