# Helper of the lit tests: checks that every row of DIR/candidates.csv (what
# `attnc tune --report DIR` writes) has one field per header column, then
# prints, for each COLUMN named, the sorted distinct values of its data rows,
# in one line.
#
#   report_columns.py DIR COLUMN...
import csv
import sys

with open(sys.argv[1] + "/candidates.csv", newline="") as f:
    rows = list(csv.reader(f))
header = rows[0]
for number, row in enumerate(rows[1:], start=2):
    if len(row) != len(header):
        sys.exit("candidates.csv:%d: %d fields, the header has %d"
                 % (number, len(row), len(header)))
print(" ".join(str(sorted({row[header.index(name)] for row in rows[1:]}))
               for name in sys.argv[2:]))
