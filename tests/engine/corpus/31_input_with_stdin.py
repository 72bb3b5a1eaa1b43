# run: {"stdin": "Ada\n42\nthe rest\nof the text\n\u00e9t\u00e9"}
import sys

name = input("name? ")
number = int(input())
rest = sys.stdin.read()
print()
print(f"name={name!r} number={number}")
print(f"rest={rest!r}")
print("stdin at EOF:", sys.stdin.read() == "")
