# run: {"expect_exit": 1, "expect_stderr_contains": "while parsing row 2"}
rows = ["1", "2", "x"]
total = 0
for number, row in enumerate(rows):
    try:
        total += int(row)
    except ValueError as error:
        error.add_note(f"while parsing row {number}")
        error.add_note("rows are counted from 0")
        raise
