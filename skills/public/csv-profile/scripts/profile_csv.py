#!/usr/bin/env python3
"""Profile a CSV file: per column the count of values, missing values, numeric min/mean/max and the most common
values; written as a Markdown report. Standard library only, so it runs in any sandbox with python3.

Usage: profile_csv.py INPUT.csv OUTPUT.md [--delimiter ,] [--top 3]
Exit status 0 on success, 2 on bad input (message on stderr, starting with "Error:").
"""
import argparse
import csv
import math
import sys
from collections import Counter


def as_number(text):
    """The value as a float, or None when it is not a finite number."""
    try:
        value = float(text.replace(",", "")) if text.strip() else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def profile(rows, header, top):
    """One dict per column: name, filled, missing, numeric stats (when every filled value is a number), top values."""
    columns = []
    for index, name in enumerate(header):
        values = [row[index].strip() if index < len(row) else "" for row in rows]
        filled = [v for v in values if v]
        numbers = [as_number(v) for v in filled]
        numeric = bool(filled) and all(n is not None for n in numbers)
        column = {"name": name or f"column {index + 1}", "filled": len(filled), "missing": len(values) - len(filled), "numeric": numeric}
        if numeric:
            column.update(min=min(numbers), max=max(numbers), mean=sum(numbers) / len(numbers))
        column["top"] = Counter(filled).most_common(top)
        columns.append(column)
    return columns


def fmt(number):
    return f"{number:.4g}" if isinstance(number, float) else str(number)


def report(source, rows, columns):
    lines = [f"# Profile of {source}", "", f"{len(rows)} rows, {len(columns)} columns.", "",
             "| column | filled | missing | type | min | mean | max | most common |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in columns:
        stats = [fmt(c["min"]), fmt(c["mean"]), fmt(c["max"])] if c["numeric"] else ["", "", ""]
        common = ", ".join(f"{value} ({count})" for value, count in c["top"]).replace("|", "\\|")
        lines.append(f"| {c['name']} | {c['filled']} | {c['missing']} | {'number' if c['numeric'] else 'text'} | " + " | ".join(stats) + f" | {common} |")
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description="Profile a CSV file into a Markdown report.")
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--delimiter", default=",")
    parser.add_argument("--top", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        with open(args.input, newline="", encoding="utf-8") as handle:
            table = list(csv.reader(handle, delimiter=args.delimiter))
    except FileNotFoundError:
        print(f"Error: {args.input} not found", file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print(f"Error: {args.input} is not valid UTF-8", file=sys.stderr)
        return 2
    if not table:
        print(f"Error: {args.input} is empty", file=sys.stderr)
        return 2
    header, rows = table[0], table[1:]
    columns = profile(rows, header, args.top)
    with open(args.output, "w", encoding="utf-8") as out:
        out.write(report(args.input.rsplit("/", 1)[-1], rows, columns))
    missing = [c["name"] for c in columns if c["missing"]]
    print(f"Profiled {len(rows)} rows x {len(columns)} columns; missing values in: {', '.join(missing) or 'none'}; report: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
