#!/usr/bin/env python3
"""Plots whole-process ingests side by side, from the CSV that
scripts/ab_ingest.py writes with CSV=FILE: per side, the median wall time
(a bar, with the fastest and slowest run as a whisker) beside the median
user and system CPU (stacked), in seconds:

    CSV=docs/ingest.csv scripts/ab_ingest.py WORK 9 before=OLD/cairn \\
        after=NEW/cairn nounique=NEW/cairn:--no-unique rotor=rotor_ingest
    python3 scripts/plot_ingest.py docs/ingest.csv docs/ingest.svg \\
        before="cairn, set on (before)" after="cairn, set on" ...

NAME=LABEL arguments name the sides (and order them); sides not named
keep their CSV name. Plain SVG written by hand, so the script needs
nothing beyond Python 3.
"""
import csv
import statistics
import sys

WIDTH, HEIGHT = 760, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 50, 110
WALL, USER, SYSTEM = "#d95f02", "#1b9e77", "#a6dba0"


def main(source, target, labels):
    runs = {}
    for row in csv.DictReader(open(source)):
        runs.setdefault(row["name"], []).append(
            (float(row["wall_s"]), float(row["user_s"]), float(row["system_s"]))
        )
    if not runs:
        sys.exit(f"{source}: no rows")
    names = [n for n in labels if n in runs] + [n for n in runs if n not in labels]
    top = max(max(w for w, _, _ in runs[n]) for n in names)
    top = max(top, max(statistics.median(u for _, u, _ in runs[n]) + statistics.median(s for _, _, s in runs[n]) for n in names))
    top = (int(top * 4) + 1) / 4

    def y(seconds):
        return HEIGHT - BOTTOM - seconds / top * (HEIGHT - TOP - BOTTOM)

    group = (WIDTH - LEFT - RIGHT) / len(names)
    bar = group * 0.3
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="22" font-size="15" text-anchor="middle">Durable ingest, whole processes (medians of {len(runs[names[0]])} interleaved runs)</text>']
    steps = 5
    for i in range(steps + 1):
        value = top * i / steps
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.2f}</text>')
    out.append(f'<text transform="translate(18,{(TOP + HEIGHT - BOTTOM) / 2}) rotate(-90)" text-anchor="middle">seconds</text>')
    for i, name in enumerate(names):
        walls = [w for w, _, _ in runs[name]]
        wall = statistics.median(walls)
        user = statistics.median(u for _, u, _ in runs[name])
        system = statistics.median(s for _, _, s in runs[name])
        x0 = LEFT + i * group + group * 0.15
        out.append(f'<rect x="{x0:.1f}" y="{y(wall):.1f}" width="{bar:.1f}" height="{y(0) - y(wall):.1f}" fill="{WALL}"/>')
        mid = x0 + bar / 2
        out.append(f'<line x1="{mid:.1f}" x2="{mid:.1f}" y1="{y(min(walls)):.1f}" y2="{y(max(walls)):.1f}" stroke="black"/>')
        for edge in (min(walls), max(walls)):
            out.append(f'<line x1="{mid - 5:.1f}" x2="{mid + 5:.1f}" y1="{y(edge):.1f}" y2="{y(edge):.1f}" stroke="black"/>')
        out.append(f'<text x="{mid:.1f}" y="{y(max(walls)) - 6:.1f}" text-anchor="middle">{wall:.2f}</text>')
        x1 = x0 + bar + 4
        out.append(f'<rect x="{x1:.1f}" y="{y(user):.1f}" width="{bar:.1f}" height="{y(0) - y(user):.1f}" fill="{USER}"/>')
        out.append(f'<rect x="{x1:.1f}" y="{y(user + system):.1f}" width="{bar:.1f}" height="{y(user) - y(user + system):.1f}" fill="{SYSTEM}"/>')
        label = labels.get(name, name)
        cx = LEFT + i * group + group / 2
        for j, word_line in enumerate(wrap(label, 18)):
            out.append(f'<text x="{cx:.1f}" y="{HEIGHT - BOTTOM + 18 + 14 * j}" text-anchor="middle">{word_line}</text>')
    legend = [(WALL, "wall time (whisker: fastest and slowest run)"), (USER, "user CPU"), (SYSTEM, "system CPU")]
    lx = LEFT
    for color, text in legend:
        out.append(f'<rect x="{lx}" y="{HEIGHT - 28}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{lx + 18}" y="{HEIGHT - 18}">{text}</text>')
        lx += 18 + 7 * len(text) + 24
    out.append("</svg>")
    open(target, "w").write("\n".join(out) + "\n")


def wrap(text, width):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line] if line else lines


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: plot_ingest.py INGEST.csv OUT.svg [NAME=LABEL ...]")
    main(sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:]))
